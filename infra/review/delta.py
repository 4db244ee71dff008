"""The cost delta of a merge request: the base's plan against the head's, as the first lines of the MR note.

Pure: two `python -m infra plan --json` documents in, Markdown lines out. The figures are those the plan
carries from the simulated week of `platform.workload` (`outputs.cost`: EUR per day, the largest burst's
makespan, failed jobs, the merge-request wait's p95 and its target) and from the capacity rows (job slots
per pool: `max_concurrent_jobs`, what each runner's `concurrent` is). A reviewer reads what a change buys
before the resource diff says how.

Robust to what a pipeline may hand it: a spec without a workload (no `outputs.cost`), a base plan from
before the simulated cost model (its `cost` lacks `makespan_minutes` or `failed_jobs`: its figures are not
comparable, so the base "has no cost figures"), and a figure that is not a number (shown as `n/a`; the
commands refuse a plan whose figures are of the wrong type or out of range before they get here:
`infra.review.schema`). Every value it quotes (a pool name, why there is no base) is escaped for GitLab
Markdown (`infra.review.markdown.text`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from infra.render.change import compare
from infra.review.markdown import text

COST_KEYS = ("eur_per_day", "makespan_minutes", "failed_jobs")
"""Keys of `outputs.cost` the delta compares: all present, or the plan has no (comparable) cost figures."""
WAIT_KEY = "merge_request_wait_p95_minutes"
"""The merge-request wait's p95, compared when a side carries it (a plan from before the week lacks it)."""

TITLE = "**Cost and capacity**"


@dataclass(frozen=True)
class Figures:
    """One plan's figures: a value is None when the plan carries it but it is not a number (or, for the wait
    and its target, does not carry it: a plan from before the simulated week)."""

    eur_per_day: float | None
    makespan_minutes: float | None
    failed_jobs: float | None
    merge_request_p95: float | None = None
    """The p95 of merge-request jobs' waits over the simulated week (minutes)."""
    target: float | None = None
    """`platform.slo.merge_request_wait_minutes`."""
    met: bool | None = None
    """The plan's own verdict: over the weeks (`weeks.met`) when it has them, else the one week's (`slo.met`);
    None from a plan that does not give it, or not as true or false."""
    weeks: float | None = None
    """How many weeks the target was judged on (None: a plan from before the weeks)."""
    met_weeks: float | None = None
    weeks_p95: float | None = None
    """The p95 over all the weeks' merge-request jobs."""
    bound_eur: float | None = None
    """The target's bound (EUR/week, the weeks' median): no dispatch of these pools meets it for less."""
    bound_ratio: float | None = None
    """The spec's mean EUR/week over the weeks against the bound."""
    blind_eur: float | None = None
    """The bound of a platform that cannot see merge requests coming (EUR on an average week, nodes late as
    `recommend` holds the target: `infra.sim.blind_bound`); None where it holds nothing ready."""
    blind_ratio: float | None = None
    """The spec's mean EUR/week over the weeks against it."""


def cost_figures(plan: Mapping[str, Any] | None) -> Figures | None:
    """The plan's simulated figures; None without a workload or from a plan before the simulation."""
    outputs = plan.get("outputs") if isinstance(plan, Mapping) else None
    cost = outputs.get("cost") if isinstance(outputs, Mapping) else None
    if not isinstance(cost, Mapping) or any(key not in cost for key in COST_KEYS):
        return None
    slo = cost.get("slo")
    target = _number(slo.get("merge_request_wait_minutes")) if isinstance(slo, Mapping) else None
    met = slo.get("met") if isinstance(slo, Mapping) and isinstance(slo.get("met"), bool) else None
    eur, makespan, failed = (_number(cost[key]) for key in COST_KEYS)
    wait = _number(cost.get(WAIT_KEY))
    weeks = plan.get("weeks") if isinstance(plan, Mapping) else None
    if not isinstance(weeks, Mapping):
        return Figures(eur, makespan, failed, merge_request_p95=wait, target=target, met=met)
    found = weeks.get("bound")
    bound: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    found = weeks.get("blind_bound")
    blind: Mapping[str, Any] = found if isinstance(found, Mapping) and found.get("ready_slot_hours") else {}
    return Figures(
        eur,
        makespan,
        failed,
        merge_request_p95=wait,
        target=target,
        met=weeks.get("met") if isinstance(weeks.get("met"), bool) else None,
        weeks=_number(weeks.get("weeks")),
        met_weeks=_number(weeks.get("met_weeks")),
        weeks_p95=_number(weeks.get(WAIT_KEY)),
        bound_eur=_number(bound.get("eur_per_week_median")),
        bound_ratio=_number(bound.get("ratio")),
        blind_eur=_number(blind.get("eur_per_week")),
        blind_ratio=_number(blind.get("ratio")),
    )


def pool_slots(plan: Mapping[str, Any] | None) -> dict[str, int | None] | None:
    """Job slots per pool (`max_concurrent_jobs` of the capacity rows); None when the plan has no rows."""
    if not isinstance(plan, Mapping):
        return None
    outputs = plan.get("outputs")
    rows = plan.get("capacity")
    if not isinstance(rows, list) and isinstance(outputs, Mapping):
        rows = outputs.get("capacity")
    if not isinstance(rows, list):
        return None
    slots: dict[str, int | None] = {}
    for row in rows:
        if isinstance(row, Mapping) and isinstance(row.get("pool"), str):
            value = _number(row.get("max_concurrent_jobs"))
            slots[row["pool"]] = None if value is None else int(value)
    return slots


def render_delta(base: Mapping[str, Any] | None, head: Mapping[str, Any], no_base: str = "no base plan") -> list[str]:
    """The note's cost section (Markdown lines): one line when nothing moved, else one bullet per figure.

    `base` None: there is no base plan to compare with, and `no_base` says why."""
    base_cost, head_cost = cost_figures(base), cost_figures(head)
    head_slots = pool_slots(head)
    slot_lines = _slot_bullets(pool_slots(base), head_slots)
    if head_cost is None and base_cost is None and base is not None:
        if not slot_lines:
            return [f"{TITLE}: no cost figures (no `platform.workload` in the spec); no job slot changed."]
        cost_lines = ["- no cost figures: no `platform.workload` in the spec"]
    elif head_cost is None:
        had = f"base: {_summary(base_cost)}" if base_cost is not None else text(no_base)
        cost_lines = [f"- no cost figures at this commit (no `platform.workload`); {had}"]
    elif base_cost is None:
        why = (
            text(no_base)
            if base is None
            else "base has no cost figures (no workload, or a plan from before the cost simulation)"
        )
        cost_lines = [f"- {why}; this commit: {_summary(head_cost)}"]
    elif base_cost == head_cost:
        cost_lines = []
    else:
        cost_lines = _cost_lines(base_cost, head_cost)
    if not cost_lines and not slot_lines:
        return [f"{TITLE}: no cost change{_state(head_cost, head_slots)}."]
    day = " (the simulated week of `platform.workload`)" if head_cost or base_cost else ""
    return [f"{TITLE}, base -> this commit{day}:", "", *cost_lines, *slot_lines]


def _cost_lines(base: Figures, head: Figures) -> list[str]:
    span = f"largest burst {_minutes(base.makespan_minutes)} -> {_minutes(head.makespan_minutes)} min"
    if base.makespan_minutes == head.makespan_minutes:
        span = f"largest burst {_minutes(head.makespan_minutes)} min"
    lines = [
        _line("EUR/day", base.eur_per_day, head.eur_per_day, _eur, _eur_change),
        _line("makespan", base.makespan_minutes, head.makespan_minutes, _hours, _minutes_change, detail=span),
        _line("failed jobs (simulated)", base.failed_jobs, head.failed_jobs, _count, _signed, alarm=True),
    ]
    if base.merge_request_p95 is not None or head.merge_request_p95 is not None:
        wait = _line(
            "merge-request wait p95",
            base.merge_request_p95,
            head.merge_request_p95,
            _wait,
            _minutes_change,
            detail=_target(head),
        )
        lines.append(f"- **{wait[2:]}**" if head.target is not None and _missed(head) else wait)
    if head.weeks is not None and head.target is not None:
        over = f"weeks the target is met in, of {_count(head.weeks)}"
        pooled = f"p95 over all their merge-request jobs {_wait(base.weeks_p95)} -> {_wait(head.weeks_p95)}"
        if base.weeks_p95 == head.weeks_p95:
            pooled = f"p95 over all their merge-request jobs {_wait(head.weeks_p95)}"
        before = base.met_weeks if base.weeks == head.weeks else None
        line = _line(over, before, head.met_weeks, _count, _signed, detail=pooled)
        lines.append(f"- **{line[2:]}**" if _missed(head) else line)
    if head.bound_eur is not None and head.bound_ratio is not None:
        lines.append(
            f"- the target's bound: {_eur(head.bound_eur)} EUR/week (no dispatch of these pools meets it for less, "
            f"docs/simulation.md); this commit spends {head.bound_ratio:.2f}x it, a week on average"
        )
    if head.blind_eur is not None and head.blind_ratio is not None:
        lines.append(
            f"- blind to arrivals: {_eur(head.blind_eur)} EUR/week (no platform that cannot see merge requests coming "
            f"meets the target with nodes late for less, on average); this commit spends {head.blind_ratio:.2f}x it"
        )
    return lines


def _target(figures: Figures) -> str:
    if figures.target is None:
        return ""
    over = f" in {_count(figures.met_weeks)} of {_count(figures.weeks)} weeks" if figures.weeks is not None else ""
    if _missed(figures):
        return f"target {_minutes(figures.target)} min: missed{over}"
    if over:
        return f"target {_minutes(figures.target)} min: met{over}"
    verdict = "no merge-request job" if figures.merge_request_p95 is None else "met"
    return f"target {_minutes(figures.target)} min: {verdict}"


def _missed(figures: Figures) -> bool:
    if figures.target is None:
        return False
    if figures.met is not None:
        return not figures.met
    return figures.merge_request_p95 is not None and figures.merge_request_p95 > figures.target


def _wait(value: float | None) -> str:
    return "n/a" if value is None else f"{_minutes(value)} min"


def _slot_bullets(base: dict[str, int | None] | None, head: dict[str, int | None] | None) -> list[str]:
    if head is None or base is None:
        return []
    lines = []
    for pool in sorted(base.keys() | head.keys()):
        name = text(pool)
        if pool not in base:
            lines.append(f"- pool {name} added: {_slots(head[pool])}")
        elif pool not in head:
            lines.append(f"- pool {name} removed (it had {_slots(base[pool])})")
        elif base[pool] != head[pool]:
            before, after = base[pool], head[pool]
            change = f" ({_signed(after - before)})" if before is not None and after is not None else ""
            lines.append(f"- {name} slots {_count(before)} -> {_count(after)}{change}")
    return lines


def _line(
    name: str,
    before: float | None,
    after: float | None,
    show: Callable[[float | None], str],
    change: Callable[[float], str],
    *,
    detail: str = "",
    alarm: bool = False,
) -> str:
    """`- name before -> after (change; detail)`, or `unchanged`; `n/a` for a figure that is no number; bold
    when an alarm figure (failed jobs) is above zero at the head. The figures as `simulate --set` compares
    them (`infra.render.change.compare`)."""
    shown_before, shown_after, moved = compare(before, after, show, change=change, missing=show(None))
    if moved == "=":
        line = f"{name}: {shown_after} (unchanged" + (f"; {detail})" if detail else ")")
    else:
        line = f"{name} {shown_before} -> {shown_after} ({moved or 'change unknown'}" + (
            f"; {detail})" if detail else ")"
        )
    return f"- **{line}**" if alarm and after else f"- {line}"


def _summary(figures: Figures | None) -> str:
    if figures is None:
        return "no figures"
    wait = (
        f", merge-request wait p95 {_minutes(figures.merge_request_p95)} min"
        if figures.merge_request_p95 is not None
        else ""
    )
    return (
        f"{_eur(figures.eur_per_day)} EUR/day, makespan {_hours(figures.makespan_minutes)} "
        f"({_minutes(figures.makespan_minutes)} min), {_count(figures.failed_jobs)} failed jobs in the simulation{wait}"
    )


def _state(cost: Figures | None, slots: dict[str, int | None] | None) -> str:
    parts = [_summary(cost)] if cost is not None else []
    shown = [f"{text(pool)} {_count(n)}" for pool, n in sorted((slots or {}).items()) if n != 0]
    if shown:
        parts.append("slots " + ", ".join(shown))
    return f" ({'; '.join(parts)})" if parts else ""


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _eur(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _eur_change(delta: float) -> str:
    """`+0.42 EUR/day`; four decimals when two would round a real change to zero."""
    text = f"{delta:+.2f}"
    if text in ("+0.00", "-0.00"):
        text = f"{delta:+.4f}"
    return f"{text} EUR/day"


def _minutes_change(delta: float) -> str:
    return f"{_signed(delta)} min"


def _minutes(value: float | None) -> str:
    """Minutes as the plan carries them (to 0.01), without trailing zeros: `123.8`, `440`."""
    return "n/a" if value is None else f"{value:.2f}".rstrip("0").rstrip(".")


def _hours(value: float | None) -> str:
    return "n/a" if value is None else f"{value / 60:.1f} h"


def _count(value: float | None) -> str:
    return "n/a" if value is None else str(int(value))


def _signed(delta: float) -> str:
    return f"{delta:+.2f}".rstrip("0").rstrip(".") if delta != int(delta) else f"{int(delta):+d}"


def _slots(value: int | None) -> str:
    return "n/a slots" if value is None else f"{value} slot{'' if value == 1 else 's'}"
