"""The busiest burst as a terminal timeline (pure): `python -m infra simulate --timeline`.

One row per job attempt, grouped by pool, over a fixed width: `.` waiting in GitLab for a runner slot, `~`
waiting (taken) for a node, `#` running, `x` the run of an attempt that failed; above each pool's jobs, `^` where
a node booted for them and `=` where a warm window held nodes up. Names are printed with their control
characters made visible (`infra.untrusted.printable`), cut to the label column.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Final

from infra.sim.burst import BurstJob, BurstTimeline
from infra.untrusted import printable

WIDTH: Final = 72
"""Characters of the time axis."""
LABEL: Final = 34
PHASE_MARK: Final = {"slot": ".", "node": "~", "run": "#", "failed": "x"}
"""The character of each phase of a job (`BurstJob.phases`)."""
LEGEND: Final = (
    "legend: . waits for a slot  ~ waits for a node  # runs  x fails  ^ a node boots  = warm window  "
    "* another pipeline's job"
)


def render_timeline(burst: BurstTimeline, title: str) -> str:
    """The burst as text (see the module docstring)."""
    scale = max(burst.minutes, Fraction(1))
    lines = [
        printable(title, None),
        f"{burst.pipeline} queued {burst.clock}, {float(burst.minutes):.1f} min to its last job's end; "
        f"{len(burst.jobs)} job attempt(s) shown"
        + (f", {burst.omitted} more overlapping left out" if burst.omitted else ""),
        " " * (LABEL + 1) + _axis(burst.minutes),
    ]
    for pool in burst.pools:
        lines.append(_cell(pool) + " |" + "-" * WIDTH + "|")
        for warm in (w for w in burst.warm if w.pool == pool):
            lines.append(
                _cell(f"  warm, {warm.nodes} node(s)") + " |" + _bar([(warm.start, warm.end, "=")], scale) + "|"
            )
        for cold in (c for c in burst.cold_starts if c.pool == pool):
            lines.append(_cell(f"  boot {cold.node}") + " |" + _bar([(cold.boot, cold.ready, "^")], scale) + "|")
        for index, job in enumerate(burst.jobs, start=1):
            if job.pool == pool:
                lines.append(_cell(f"  j{index} {_name(job)}") + " |" + _bar(_segments(job), scale) + "|")
    lines.append(LEGEND)
    return "\n".join(lines) + "\n"


def _name(job: BurstJob) -> str:
    return job.name + (f" (retry {job.attempt})" if job.attempt else "") + ("" if job.own else " *")


def _segments(job: BurstJob) -> list[tuple[Fraction, Fraction, str]]:
    return [(start, end, PHASE_MARK[phase]) for start, end, phase in job.phases()]


def _bar(segments: list[tuple[Fraction, Fraction, str]], scale: Fraction) -> str:
    cells = [" "] * WIDTH
    for start, end, mark in segments:
        if end <= start:
            continue
        first = min(WIDTH - 1, int(start / scale * WIDTH))
        last = max(first + 1, min(WIDTH, round(end / scale * WIDTH)))
        for index in range(first, last):
            cells[index] = mark
    return "".join(cells)


def _axis(minutes: Fraction) -> str:
    """`0 min` at the left, the burst's length at the right."""
    right = f"{float(minutes):.0f} min"
    return "0" + " " * max(1, WIDTH + 1 - 1 - len(right)) + right


def _cell(text: str) -> str:
    shown = printable(text, None)
    return shown[:LABEL].ljust(LABEL) if len(shown) <= LABEL else shown[: LABEL - 1] + "…"
