"""The busiest burst as a Mermaid `gantt` chart (pure): what the MR note shows for the base and the head.

One section per pool; in it the warm windows over the burst (`done`), the nodes that booted for it (`crit`), and
per job attempt its wait for a runner slot (`active`), its wait for a node (`crit`) and its run (plain; a
failed one `crit`), each a row of its own (a zero-length part is left out). Times are placed on a fixed Monday
(2024-01-01) plus the burst's minute of the workload's week, so the axis reads the week's clock.

Every label is written from a strict alphabet (letters, digits, space and `_ . - + = / ( )`; anything else
becomes `?`), cut to `MAX_LABEL` characters, and begins with a fixed word of the chart's own (`j3 `, `warm`,
`boot`): Mermaid's gantt grammar ends a task's text at `:` and drops what follows `#` or `;` (comments,
separators), reads `%%` as a comment and `click`, `call`, `href`, `section`, `title`, `dateFormat`... at the
start of a line as statements, so no name from a spec or a job can reach any of those. The chart is then put in
a code block (`infra.review.markdown.fenced`) that nothing inside can close.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from fractions import Fraction
from typing import Final

from infra.sim.burst import BurstJob, BurstTimeline

MAX_LABEL: Final = 64
EPOCH: Final = datetime(2024, 1, 1)  # a Monday: the workload's week starts on Monday 00:00
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9 _.+=/()-]")
_SPACES: Final = re.compile(r" {2,}")


def label(text: str) -> str:
    """`text` in the chart's safe alphabet (see the module docstring), on one line, at most MAX_LABEL long."""
    safe = _SPACES.sub(" ", _UNSAFE.sub("?", text)).strip()
    return safe if len(safe) <= MAX_LABEL else safe[: MAX_LABEL - 1] + "~"


def gantt(burst: BurstTimeline, title: str) -> str:
    """The Mermaid source of the burst's chart."""
    lines = [
        "gantt",
        f"    title {label(title.replace(':', 'h'))}",
        "    dateFormat YYYY-MM-DD HH:mm:ss",
        "    axisFormat %a %H:%M",
    ]
    for pool in burst.pools:
        lines.append(f"    section {label(pool)}")
        lines += [
            _task(f"warm {w.nodes} node(s)", "done", f"w{i}", burst, (w.start, w.end))
            for i, w in enumerate(burst.warm)
            if w.pool == pool
        ]
        lines += [
            _task(f"boot {c.node}", "crit", f"c{i}", burst, (c.boot, c.ready))
            for i, c in enumerate(burst.cold_starts)
            if c.pool == pool
        ]
        for index, job in enumerate(burst.jobs, start=1):
            if job.pool == pool:
                lines += _job_rows(burst, index, job)
    return "\n".join(line for line in lines if line) + "\n"


def rows(chart: str) -> int:
    """Task rows of a chart (what makes it long)."""
    return sum(1 for line in chart.splitlines() if ":" in line and not line.lstrip().startswith(("title", "axis")))


def _job_rows(burst: BurstTimeline, index: int, job: BurstJob) -> list[str]:
    name = f"j{index} {job.name}" + (f" retry {job.attempt}" if job.attempt else "") + ("" if job.own else " (other)")
    (queued, taken, _), (_, started, _), (_, finished, ran) = job.phases()
    failed = ran == "failed"
    return [
        _task(f"{name} slot wait", "active", f"s{index}", burst, (queued, taken)),
        _task(f"{name} node wait", "crit", f"n{index}", burst, (taken, started)),
        _task(
            f"{name} {'fails' if failed else 'runs'}", "crit" if failed else "", f"r{index}", burst, (started, finished)
        ),
    ]


def _task(text: str, tag: str, task_id: str, burst: BurstTimeline, span: tuple[Fraction, Fraction]) -> str:
    """One task row, or "" when it lasts less than a second."""
    start, end = span
    if end - start < Fraction(1, 60):
        return ""
    tags = f"{tag}, " if tag else ""
    return f"    {label(text)} :{tags}{task_id}, {_at(burst, start)}, {_at(burst, end)}"


def _at(burst: BurstTimeline, minutes: Fraction) -> str:
    seconds = round((burst.start_minute + minutes) * 60)
    return (EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S")
