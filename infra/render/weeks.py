"""The simulated weeks as text (`infra.sim.weeks`): in how many weeks the target is met, the pooled p95 per class and
the spread of the weekly p95s. `plan`'s report, `simulate --weeks` and the MR note (through `verdict_line`) say it
in the same words."""

from __future__ import annotations

import textwrap
from fractions import Fraction

from infra.render.text import WIDTH as TABLE_WIDTH
from infra.render.text import format_eur, render_table
from infra.sim.blind_bound import BlindBound
from infra.sim.pool_runs import LATE_BOOT
from infra.sim.target_cost import TargetCost
from infra.sim.weeks import WeeksReport

WIDTH = 118
"""The bound's lines wrap within a 120-column report."""


def verdict_line(report: WeeksReport) -> str:
    """`met in 19 of 20 weeks (18 asked: slo.confidence 0.9), p95 15.0 min over all their merge-request jobs,
    margin 0.0 min`: the target over the weeks, in one line (no target: '')."""
    met = report.met_weeks
    if report.target is None or met is None:
        return ""
    verdict = "met" if report.target_met else "MISSED"
    waits = report.of("merge_request")
    p95 = "a lost job" if waits.p95 is None else f"{_minutes(waits.p95)} min"
    margin = "" if report.margin is None else f", margin {_minutes(report.margin)} min"
    return (
        f"{verdict}: in {met} of {report.weeks} weeks (at least {report.required_weeks} asked: slo.confidence "
        f"{float(report.confidence):g}); p95 {p95} over all their merge-request jobs{margin}"
    )


def render_weeks(report: WeeksReport, *, verdict: bool = True) -> str:
    """The weeks' table and (`verdict`) the target's verdict over them."""
    rows = []
    for c in report.classes:
        low, high = c.weekly_p95(10), c.weekly_p95(90)
        rows.append(
            (c.job_class, str(c.jobs), str(c.failed), _shown(c.p95, c.failed), f"{_shown(low, 1)}-{_shown(high, 1)}")
        )
    header = ("class", "jobs", "failed", "wait p95, all weeks", "weekly p95, p10-p90")
    eur = report.eur_per_week
    mean = sum(eur, Fraction(0)) / len(eur)
    lines = [
        f"{report.weeks} simulated week(s) (arrivals, run times, boots drawn for each; the same weeks for any spec):\n",
        render_table(header, rows, TABLE_WIDTH),
    ]
    if verdict and report.target is not None:
        line = verdict_line(report)
        target = f"{float(report.target):g}"
        lines.append(
            f"Target platform.slo.merge_request_wait_minutes = {target} min over the weeks: {line or 'not judged'}.\n"
        )
    spread = f"{format_eur(min(eur))}-{format_eur(max(eur))}"
    lines.append(f"EUR/week, this spec over the {report.weeks} weeks: {format_eur(mean)} on average ({spread}).\n")
    if (bound := bound_line(report)) is not None:
        lines.append(bound)
    return "".join(lines)


def bound_line(report: WeeksReport) -> str | None:
    """The target's bound over the weeks and the spec's mean EUR/week against it, in two lines (None without a
    bound)."""
    bound = report.bound
    if bound is None:
        return None
    spread = f"{format_eur(min(bound.bounds))}-{format_eur(max(bound.bounds))}"
    verdict = "meets the target" if report.target_met else "misses the target"
    text = (
        f"Bound on the target's price: {format_eur(bound.median)} EUR/week (median of {len(bound.bounds)} weeks, "
        f"{spread}): no dispatch of these pools meets it for less, even knowing every arrival (docs/simulation.md). "
        f"This spec spends {_ratio(bound.ratio(report.mean_eur))} the bound and {verdict}. The target forces "
        f"{float(bound.boots_median):g} boots and {_hours(bound.forced_median)} node-hours up a week for merge-request "
        f"jobs ({_by_pool(bound)}); every one of them within it: {format_eur(bound.strict_median)} EUR/week."
    )
    lines = [text]
    if report.blind is not None and report.target is not None:
        blind = blind_text(report.blind, report.mean_eur, report.target)
        lines += [blind] if blind else []
    return "".join(textwrap.fill(line, WIDTH, break_on_hyphens=False) + "\n" for line in lines)


def _by_pool(bound: TargetCost) -> str:
    """`ci-compile 8.5 h, 13 boots; ci-training 20.9 h, 25 boots`: the forced figures per pool."""
    return "; ".join(
        f"{name} {_hours(minutes)} h, {float(boots):g} boots" for name, minutes, boots in bound.pool_forced()
    )


def blind_text(blind: BlindBound, eur_per_week: Fraction | None, target: Fraction) -> str | None:
    """The bound of a platform that cannot see merge requests coming (`infra.sim.blind_bound`) and a spec's
    EUR/week against it, as one sentence (None where it holds nothing ready: every boot within the target)."""
    if not blind.ready_slot_minutes:
        return None
    pools = ", ".join(f"{name} {minutes / 60:.1f}" for name, minutes in blind.ready_slot_minutes)
    boot = min(boot for _, boot in blind.boots)
    spent = "" if eur_per_week is None else f" This spec spends {blind.ratio(eur_per_week):.2f}x that."
    held = " as recommend holds it" if blind.late == LATE_BOOT else ""
    return (
        f"A platform that cannot see merge requests coming, meeting the target with every node {float(blind.late):g} "
        f"min late{held} (a boot of {float(boot):g} min at the fastest, over the {float(target):g}-min target), "
        f"spends at least {format_eur(Fraction(str(blind.eur)))} EUR/week on average "
        f"(docs/simulation.md): its slots must be ready before each may come, {blind.ready_hours():.1f} slot-hours "
        f"a week ({pools}).{spent}"
    )


def _ratio(ratio: Fraction) -> str:
    return f"{float(ratio):.2f}x"


def _hours(minutes: Fraction) -> str:
    return f"{float(minutes) / 60:.1f}"


def _shown(value: Fraction | None, lost: int) -> str:
    if value is None:
        return "lost" if lost else "-"
    return _minutes(value)


def _minutes(value: Fraction) -> str:
    return f"{float(value):.1f}"
