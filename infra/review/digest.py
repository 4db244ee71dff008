"""What a plan diff says after its resources: the cost and wait deltas, the target's verdict, the policy result,
and the simulation's own figures as one line per group.

A reviewer reads a plan diff for what the change does: the resources first (`infra.review.diff`), then what it
costs and how long people wait, whether the target is met, whether the policy pack passes. The simulated week's
details (each job of the busiest burst, per-class and per-pool figures) move whenever the simulation moves: in
the diff they are one line per group (`cost.burst: 18 of 26 jobs' figures moved`), and `plan-diff --full` lists
them leaf by leaf.

Pure, and robust to what a pipeline hands it: the plans are checked (`infra.review.schema`) before they get
here, a figure that is not a number is `n/a`, a plan from before the weeks or the policy field says so. Every
value quoted is one line, escaped by the diff's last gate (`printable`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from infra.render.change import compare
from infra.review.delta import Figures, cost_figures

INDENT: Final = "    "
DERIVED: Final = "cost"
"""The output the simulation writes: its leaves move whenever the simulated week does."""
MAX_VIOLATIONS: Final = 10
"""Violations listed one a line; the rest are counted."""
MAX_MESSAGE: Final = 300
"""Characters of one violation's message shown (a hostile plan's message is clipped, never a wall)."""
_JOB: Final = re.compile(r"^cost\.burst\.jobs\[(\d+)\]")


@dataclass(frozen=True)
class Violation:
    """A policy pack verdict as the plan carries it (`plan --json`'s `policy`)."""

    policy: str
    resource: str
    message: str
    level: str

    def __str__(self) -> str:
        message = self.message if len(self.message) <= MAX_MESSAGE else self.message[: MAX_MESSAGE - 3] + "..."
        return f"policy {self.policy} ({self.level}): {self.resource or 'stack'}: {message}"


@dataclass(frozen=True)
class Side:
    """One plan's figures for the digest: None where the plan does not carry them."""

    figures: Figures | None
    eur_per_week_mean: float | None
    """The mean EUR/week over the simulated weeks (`weeks.eur_per_week.mean`)."""
    policy: tuple[Violation, ...] | None
    burst_jobs: int | None


def side(plan: Mapping[str, Any]) -> Side:
    """What the digest reads of one plan document."""
    weeks = plan.get("weeks")
    spent = weeks.get("eur_per_week") if isinstance(weeks, Mapping) else None
    mean = spent.get("mean") if isinstance(spent, Mapping) else None
    outputs = plan.get("outputs")
    cost = outputs.get(DERIVED) if isinstance(outputs, Mapping) else None
    burst = cost.get("burst") if isinstance(cost, Mapping) else None
    jobs = burst.get("jobs") if isinstance(burst, Mapping) else None
    return Side(
        cost_figures(plan),
        _number(mean),
        _violations(plan.get("policy")),
        len(jobs) if isinstance(jobs, list) else None,
    )


def _violations(found: object) -> tuple[Violation, ...] | None:
    if not isinstance(found, list):
        return None
    violations = []
    for item in found:
        if isinstance(item, Mapping):
            fields = [item.get(key) for key in ("policy", "resource", "message", "level")]
            texts = [value for value in fields if isinstance(value, str)]
            if len(texts) == len(fields):
                violations.append(Violation(*texts))
    return tuple(violations)


def figure_lines(base: Side, head: Side) -> list[str]:
    """`Cost and waits:` and its lines: EUR/week, the wait, the target's verdict, the bound, the simulated week."""
    before, after = base.figures, head.figures
    title = "Cost and waits (simulated: platform.workload, docs/simulation.md):"
    if after is None:
        return [f"{title} none at the head (no platform.workload in the spec)"]
    if before is None:
        before = Figures(None, None, None)
    if base.figures == after and base.eur_per_week_mean == head.eur_per_week_mean:
        mean = f"EUR/week {_eur(head.eur_per_week_mean)}; " if head.eur_per_week_mean is not None else ""
        p95 = after.weeks_p95 if after.weeks_p95 is not None else after.merge_request_p95
        wait = f"merge-request wait p95 {_min(p95)} min" if p95 is not None else "no merge-request wait"
        verdict = _verdict(after, after)
        return [f"{title} unchanged", f"{INDENT}{mean}{wait}" + (f"; {verdict}" if verdict else "")]
    lines = []
    if head.eur_per_week_mean is not None:
        weeks = f" (mean of {_count(after.weeks)} weeks)" if after.weeks is not None else ""
        lines.append(_line(f"EUR/week{weeks}", base.eur_per_week_mean, head.eur_per_week_mean, _eur, _signed_eur))
    if after.weeks_p95 is not None:
        wait = _line(
            "merge-request wait p95 (all weeks)", before.weeks_p95, after.weeks_p95, _min, _signed_min, unit="min"
        )
    else:
        wait = _line(
            "merge-request wait p95", before.merge_request_p95, after.merge_request_p95, _min, _signed_min, unit="min"
        )
    lines.append(wait)
    if verdict := _verdict(before, after):
        lines.append(verdict)
    if after.bound_eur is not None and after.bound_ratio is not None:
        was = f" (base {before.bound_ratio:.2f}x)" if before.bound_ratio is not None else ""
        bound = _line(
            "bound on the target's price", before.bound_eur, after.bound_eur, _eur, _signed_eur, unit="EUR/week"
        )
        spent = f"spent: {after.bound_ratio:.2f}x it{was}"
        lines.append(f"{bound.removesuffix(' (unchanged)')}, no dispatch meets it for less; {spent}")
    day = _line("EUR/day", before.eur_per_day, after.eur_per_day, _eur, _signed_eur)
    failed = _line("failed jobs", before.failed_jobs, after.failed_jobs, _count, _signed)
    lines.append(f"one simulated week: {day}; {failed}")
    lines.append(
        _line("its largest burst", before.makespan_minutes, after.makespan_minutes, _min, _signed_min, unit="min")
    )
    if base.figures is None:
        lines.append("(the base has no cost figures: no workload, or a plan from before the simulation)")
    return [title, *(INDENT + line for line in lines)]


def _verdict(before: Figures, after: Figures) -> str:
    if after.target is None:
        return ""
    verdict = "met" if after.met else "MISSED" if after.met is False else "no verdict"
    target = f"target {_min(after.target)} min"
    if after.weeks is None:
        return f"{target}: {verdict}"
    was = before.met_weeks if before.weeks == after.weeks else None
    shown, now, moved = compare(was, after.met_weeks, _count, change=_signed, missing="n/a")
    weeks = f"met in {now} of {_count(after.weeks)} weeks"
    if moved and moved != "=":
        weeks = f"met in {shown} -> {now} of {_count(after.weeks)} weeks ({moved})"
    elif moved == "=" and before is not after:
        weeks += " (unchanged)"
    return f"{target}: {verdict}, {weeks}"


def policy_lines(base: Side, head: Side) -> list[str]:
    """`Policy:` and the head's violations, the new ones marked; what the base had and the head no longer has."""
    title = "Policy pack (policy/, over the head's resources):"
    if head.policy is None:
        return [f"{title} not in the head's plan"]
    if not head.policy and not base.policy:
        return [f"{title} no violation"]
    had = set(base.policy or ())
    levels: dict[str, int] = {}
    for violation in head.policy:
        levels[violation.level] = levels.get(violation.level, 0) + 1
    counts = ", ".join(f"{n} {level}" for level, n in sorted(levels.items())) or "no violation"
    lines = [f"{title} {counts}"]
    for violation in head.policy[:MAX_VIOLATIONS]:
        lines.append(f"{INDENT}- {violation}" + ("" if violation in had or base.policy is None else "  (new)"))
    if len(head.policy) > MAX_VIOLATIONS:
        lines.append(f"{INDENT}and {len(head.policy) - MAX_VIOLATIONS} more (plan --json)")
    if resolved := len(had - set(head.policy)):
        lines.append(f"{INDENT}resolved since the base: {resolved}")
    return lines


def derived_lines(paths: Sequence[str], head: Side | None, indent: str = "  ") -> list[str]:
    """One `~` line per group of `cost` leaves that changed: what `--full` lists leaf by leaf."""
    groups: dict[str, list[str]] = {}
    for path in paths:
        rest = path[len(DERIVED) + 1 :]
        group = re.split(r"[.\[]", rest, maxsplit=1)[0] if ("." in rest or "[" in rest) else ""
        groups.setdefault(group, []).append(path)
    lines = []
    for group, members in sorted(groups.items()):
        if not group:
            names = [p[len(DERIVED) + 1 :] for p in members]
            listed = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
            lines.append(f"~{indent}{DERIVED}: {len(names)} of the week's figures moved ({listed}; the figures above)")
            continue
        where = f"{DERIVED}.{group}"
        if group == "burst":
            jobs = {match[1] for path in members if (match := _JOB.match(path))}
            unjobbed = len([p for p in members if not _JOB.match(p)])
            of = f" of {head.burst_jobs}" if head is not None and head.burst_jobs is not None else ""
            figures = f"{len(jobs)}{of} jobs' figures moved" if jobs else ""
            others = f"{unjobbed} other figure{'s' if unjobbed != 1 else ''}" if unjobbed else ""
            moved = " and ".join(part for part in (figures, others) if part)
            lines.append(f"~{indent}{where}: {moved} (plan-diff --full for each)")
        else:
            count = len(members)
            lines.append(
                f"~{indent}{where}: {count} figure{'s' if count != 1 else ''} moved (plan-diff --full for each)"
            )
    return lines


def is_derived(path: str) -> bool:
    """A leaf the simulation writes (`cost...`), summed up unless `--full`."""
    return path == DERIVED or path.startswith((f"{DERIVED}.", f"{DERIVED}["))


def _line(
    name: str,
    before: float | None,
    after: float | None,
    show: Callable[[float], str],
    change: Callable[[float], str],
    *,
    unit: str = "",
    same: str = "unchanged",
) -> str:
    """`name: before -> after unit (change)`, or `name: after unit (unchanged)`."""
    shown_before, shown_after, moved = compare(before, after, show, change=change, missing="n/a")
    unit = f" {unit}" if unit else ""
    if moved == "=":
        return f"{name}: {shown_after}{unit} ({same})"
    return f"{name}: {shown_before} -> {shown_after}{unit}" + (f" ({moved})" if moved else "")


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _eur(value: float) -> str:
    return f"{value:.2f}"


def _signed_eur(delta: float) -> str:
    text = f"{delta:+.2f}"
    return f"{delta:+.4f}" if text in ("+0.00", "-0.00") else text


def _min(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _signed_min(delta: float) -> str:
    return f"{_signed(delta)} min"


def _count(value: float | None) -> str:
    return "n/a" if value is None else str(int(value))


def _signed(delta: float) -> str:
    return f"{delta:+.2f}".rstrip("0").rstrip(".") if delta != int(delta) else f"{int(delta):+d}"
