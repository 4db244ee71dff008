"""`recommend`'s paragraph on the target's price: the clairvoyant bound, the bound of a platform that cannot see
merge requests coming, the recommendation against both, and above `RATIO_GOAL` what keeps it from closer."""

from __future__ import annotations

import textwrap
from fractions import Fraction

from infra.model.platform import Platform
from infra.model.warm import week_spans
from infra.render.text import format_eur
from infra.render.weeks import blind_text
from infra.sim.blind_bound import BlindBound, blind_bound
from infra.sim.combine import Combination
from infra.sim.platform_scenario import sim_pools
from infra.sim.pool_runs import LATE_BOOT
from infra.sim.search_report import SearchReport
from infra.sim.target_cost import TargetCost
from infra.sim.week import simulate_week

WIDTH = 118
RATIO_GOAL = Fraction(5, 4)
"""Within this of the bound a recommendation is close; above it, `recommend` says what keeps it from closer."""


def bound_text(report: SearchReport, chosen: Combination | None, changed: Platform | None) -> str:
    """The target's bound over the weeks, the recommendation against it, and above `RATIO_GOAL` why."""
    bound = report.bound
    if bound is None:
        return ""
    spread = f"{format_eur(min(bound.bounds))}-{format_eur(max(bound.bounds))}"
    parts = [
        f"Bound: no dispatch of these pools meets the target for less than {format_eur(bound.median)} EUR/week "
        f"(the median of the {len(bound.bounds)} weeks' bounds, {spread}), even one knowing every arrival in advance "
        '(docs/simulation.md, "The target\'s bound").'
    ]
    if chosen is not None and changed is not None:
        week = simulate_week(changed)
        assert week is not None
        mean = report.mean_eur(chosen) or week.eur_per_week
        ratio = bound.ratio(mean)
        blind = blind_bound(changed, late_boot=LATE_BOOT)
        blind_ratio = blind.ratio(mean) if blind is not None and blind.ready_slot_minutes else None
        against = "" if blind_ratio is None else f", {blind_ratio:.2f}x the bound of a platform blind to them"
        parts.append(
            f"The recommendation: EUR {format_eur(week.eur_per_week)}/week on the first week, {format_eur(mean)} on "
            f"average over the weeks: {float(ratio):.2f}x the bound{against}."
        )
        if blind is not None and (text := blind_text(blind, None, report.target.minutes)) is not None:
            parts.insert(1, text)
        if (blind_ratio if blind_ratio is not None else ratio) > RATIO_GOAL:
            parts.append(_why(report, changed, blind))
    return "".join(textwrap.fill(part, WIDTH, break_on_hyphens=False) + "\n" for part in parts) + "\n"


def _why(report: SearchReport, changed: Platform, blind: BlindBound | None) -> str:
    """What keeps the recommendation from the bounds: the clairvoyant's just-in-time boots, what the blind one omits."""
    bound = report.bound
    assert bound is not None
    boots = {pool.name: pool.boots.fastest for pool in sim_pools(changed)}
    fastest = min(boots.values())
    warm_minutes = warm_eur = Fraction(0)
    for name in report.pools:
        pool = changed.pools[name]
        minutes = sum((Fraction((end - start) * nodes) for start, end, nodes in week_spans(pool)), Fraction(0))
        warm_minutes += minutes
        warm_eur += minutes * pool.eur_per_hour / 60
    late = fastest + LATE_BOOT
    text = (
        f"Why not closer: a node boots in {float(fastest):g} min at the fastest ({float(late):g} with nodes 5 min "
        f"late) and the target is {float(report.target.minutes):g} min, so a merge-request job starts in time only on "
        f"a node already up. The clairvoyant bound starts {float(bound.boots_median):g} nodes a week just before the "
        f"jobs that need them and keeps {float(bound.forced_median) / 60:.1f} node-hours up for them "
        f"({_forced_by_pool(bound)}); the recommendation's warm windows hold {float(warm_minutes) / 60:.1f} "
        f"node-hours a week (EUR {format_eur(warm_eur)}/week)."
    )
    if blind is not None and blind.ready_slot_minutes and late > report.target.minutes:
        text += (
            " The blind bound holds slots, not whole nodes, only until the day's last merge request has come, and "
            f"the target with nodes late in {float(changed.spec.slo.confidence):g} of the weeks on average; the "
            "recommendation holds whole nodes through fixed hours, and meets the target in that share of the weeks "
            "drawn in each variant (as estimated, nodes late, jobs slower)."
        )
    return text


def _forced_by_pool(bound: TargetCost) -> str:
    return "; ".join(
        f"{name} {float(minutes) / 60:.1f} h, {float(boots):g} boots" for name, minutes, boots in bound.pool_forced()
    )
