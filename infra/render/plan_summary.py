"""The first lines of `python -m infra plan`: what a newcomer asks before the tables (pure).

At most five lines: the resources by operation, EUR/week (the mean of the simulated weeks, with the target's bound
and the spec's ratio to it), in how many weeks the target is met, the policy pack's violations, how many warnings.
A stack that misses its own target says so here, before 150 lines of detail.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, Protocol

from infra.sim.week import CostReport
from infra.sim.weeks import WeeksReport


class _Resource(Protocol):
    @property
    def custom(self) -> bool: ...
    @property
    def options(self) -> Mapping[str, Any]: ...


class _Violation(Protocol):
    @property
    def level(self) -> str: ...


def plan_summary(
    resources: Sequence[_Resource],
    cost: CostReport | None,
    weeks: WeeksReport | None,
    verdict: Sequence[_Violation] | None,
    warnings: Sequence[str],
) -> list[str]:
    """The summary's lines (five)."""
    read = sum(1 for r in resources if r.options.get("read"))
    protected = sum(1 for r in resources if r.options.get("protect"))
    ops = ", ".join(part for part in (f"{len(resources) - read} to create", f"{read} to read" if read else "") if part)
    components = sum(1 for r in resources if not r.custom)
    lines = [
        f"Resources: {ops} ({len(resources) - components} resources, {components} components; {protected} "
        "protected), offline against an empty stack"
    ]
    lines.append(_eur_line(cost, weeks))
    lines.append(_target_line(cost, weeks))
    if verdict is None:
        lines.append("Policy pack: not run")
    else:
        levels: dict[str, int] = {}
        for violation in verdict:
            levels[violation.level] = levels.get(violation.level, 0) + 1
        counts = ", ".join(f"{n} {level}" for level, n in sorted(levels.items()))
        lines.append(f"Policy pack: {counts} (listed below)" if counts else "Policy pack: no violation")
    lines.append(f"Warnings: {len(warnings)}" + (" (listed below)" if warnings else ""))
    return lines


def _eur_line(cost: CostReport | None, weeks: WeeksReport | None) -> str:
    if weeks is not None and weeks.eur_per_week:
        mean = weeks.mean_eur
        line = f"EUR/week: {_eur(mean)} (mean of {weeks.weeks} simulated weeks)"
        if (bound := weeks.bound) is not None:
            line += f"; the target's bound {_eur(bound.median)}, this spec {float(bound.ratio(mean)):.2f}x it"
        return line
    if cost is not None:
        return f"EUR/week: {_eur(cost.eur_per_week)} (the simulated week)"
    return "EUR/week: no figure (no platform.workload to simulate)"


def _target_line(cost: CostReport | None, weeks: WeeksReport | None) -> str:
    target = weeks.target if weeks is not None else cost.merge_request_target_minutes if cost is not None else None
    if target is None:
        return "Target: none (platform.slo.merge_request_wait_minutes is not set)"
    head = f"Target: merge-request jobs wait at most {float(target):g} min (p95)"
    if weeks is not None and weeks.met_weeks is not None:
        verdict = "met" if weeks.target_met else "MISSED"
        p95 = weeks.of("merge_request").p95
        shown = "a lost job" if p95 is None else f"{float(p95):.1f} min"
        return (
            f"{head}: {verdict}, in {weeks.met_weeks} of {weeks.weeks} weeks ({weeks.required_weeks} asked); "
            f"p95 {shown} over them"
        )
    if cost is not None and cost.target_met is not None:
        return f"{head}: {'met' if cost.target_met else 'MISSED'} in the simulated week"
    return f"{head}: not judged (no merge-request job)"


def _eur(value: Fraction) -> str:
    return f"{float(value):.2f}"
