"""The target over many simulated weeks, not one (pure): how likely the platform meets it.

Why: one simulated week is one sample of the arrivals, the run times and the boots; a p95 that meets the target
on it may miss on the next. `simulate_weeks` dispatches `platform.slo.weeks` independent weeks of the workload
(`infra.sim.arrivals.week_jobs(week=w)` and each pool's boots drawn for that week: every draw seeded from the
spec's names and the week's number, so two specs are compared on the same weeks), and reports per class:
- the p95 over all the weeks' jobs (pooled), a job lost for good ranked after every wait (`infra.sim.verdict`);
- the spread of the weekly p95s (their 10th and 90th percentile, nearest rank);
- for merge-request jobs, in how many weeks the target is met, against `platform.slo.confidence`;
- each week's bound on the target's price (`infra.sim.target_cost`: what no dispatch of the same pools can beat
  while meeting it), and the spec's mean EUR/week against the bound's median.
Week 0 is the week `plan` always simulated (`infra.sim.week`): the program computes only that one, so that
`pulumi up` pays for one week; `plan`, the MR note and `simulate --weeks` ask for the rest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from infra.config.errors import Problem, key_path
from infra.config.workload import JobClass
from infra.sim.arrivals import shared_week_jobs
from infra.sim.blind_bound import BlindBound, blind_bound
from infra.sim.engine import simulate_spec
from infra.sim.platform_scenario import scenario
from infra.sim.pool_runs import LATE_BOOT
from infra.sim.target_bound import WeekFloor
from infra.sim.target_cost import TargetCost, bound_pools, target_cost, week_bound
from infra.sim.verdict import Waits, allowed_over, exact_target
from infra.sim.week import CLASSES, class_waits

if TYPE_CHECKING:
    from infra.model.platform import Platform


@dataclass(frozen=True)
class ClassWeeks:
    """One class of jobs over the weeks."""

    job_class: JobClass
    pooled: Waits
    """Every week's jobs as one: the p95 over all of them."""
    weekly: tuple[Waits, ...]
    """Each week's, in week order."""

    @property
    def jobs(self) -> int:
        return self.pooled.jobs

    @property
    def failed(self) -> int:
        return self.pooled.lost

    @property
    def p95(self) -> Fraction | None:
        return self.pooled.percentile()

    def weekly_p95(self, q: int) -> Fraction | None:
        """The q-th percentile (nearest rank) of the weekly p95s, a week whose p95 is a lost job ranked last."""
        values = [w.percentile() for w in self.weekly if w.jobs]
        return Waits.of((v for v in values if v is not None), sum(1 for v in values if v is None)).percentile(q)


@dataclass(frozen=True)
class WeeksReport:
    """The simulated weeks of a platform, per class, and the target's verdict over them."""

    weeks: int
    target: Fraction | None
    confidence: Fraction
    classes: tuple[ClassWeeks, ...]
    eur_per_week: tuple[Fraction, ...]
    """Each week's GPU nodes, always-on nodes included."""
    failed_by_week: tuple[int, ...]
    """Jobs of either class lost for good, per week."""
    floors: tuple[WeekFloor, ...] = ()
    """Each week's bound on the target's price (none without a target or a merge-request job)."""
    blind: BlindBound | None = None
    """The least a platform that cannot see merge requests coming spends on an average week meeting the target with
    every boot `LATE_BOOT` late, as `recommend` holds it (`infra.sim.blind_bound`); None without a target."""

    @property
    def mean_eur(self) -> Fraction:
        return sum(self.eur_per_week, Fraction(0)) / len(self.eur_per_week)

    @property
    def bound(self) -> TargetCost | None:
        """The bound over the weeks (None without one)."""
        return target_cost(self.floors) if self.floors else None

    def of(self, job_class: JobClass) -> ClassWeeks:
        return next(c for c in self.classes if c.job_class == job_class)

    @property
    def met_by_week(self) -> tuple[bool, ...]:
        """Per week, whether its merge-request p95 meets the target (no target, or no job: never)."""
        if self.target is None:
            return ()
        return tuple(bool(w.met(self.target)) for w in self.of("merge_request").weekly)

    @property
    def met_weeks(self) -> int | None:
        return None if self.target is None or not self.of("merge_request").jobs else sum(self.met_by_week)

    @property
    def required_weeks(self) -> int:
        """Weeks the target must be met in: the confidence's share, rounded up."""
        return math.ceil(self.confidence * self.weeks)

    @property
    def target_met(self) -> bool | None:
        """Whether the target is met in at least `confidence` of the weeks (None: no target, no job)."""
        met = self.met_weeks
        return None if met is None else met >= self.required_weeks

    @property
    def margin(self) -> Fraction | None:
        """The target less the pooled merge-request p95 (negative: over it; None: a lost job at the p95)."""
        p95 = self.of("merge_request").p95
        return None if self.target is None or p95 is None else self.target - p95

    def warnings(self) -> list[Problem]:
        """The target met in fewer weeks than asked, at its key."""
        if self.target_met is not False or self.target is None:
            return []
        waits = self.of("merge_request")
        p95 = "a lost job" if waits.p95 is None else f"{float(waits.p95):.1f} min"
        lost = (
            f", {waits.failed} of their {waits.jobs} merge-request jobs failed (each over it)" if waits.failed else ""
        )
        return [
            Problem(
                key_path("slo", "merge_request_wait_minutes"),
                int(self.target) if self.target.denominator == 1 else float(self.target),
                f"met in {self.met_weeks} of {self.weeks} simulated weeks, below slo.confidence="
                f"{float(self.confidence):g} ({self.required_weeks} weeks); p95 over all their merge-request jobs "
                f"{p95}{lost}: hold slots for them (pools.<pool>.merge_request_slots), keep nodes warm in working "
                "hours (pools.<pool>.warm), or raise max_size; `python -m infra recommend` (docs/feedback-time.md)",
                "warning",
            )
        ]

    def as_json(self) -> dict[str, object]:
        """JSON-ready figures (minutes to 0.01, EUR to 1/10000 of a cent)."""
        eur = sorted(self.eur_per_week)
        return {
            "weeks": self.weeks,
            "confidence": float(self.confidence),
            "target_minutes": None if self.target is None else _round(self.target, 2),
            "met_weeks": self.met_weeks,
            "required_weeks": self.required_weeks,
            "met": self.target_met,
            "margin_minutes": None if self.margin is None else _round(self.margin, 2),
            "merge_request_wait_p95_minutes": _minutes(self.of("merge_request").p95),
            "classes": {
                c.job_class: {
                    "jobs": c.jobs,
                    "failed": c.failed,
                    "wait_p95_minutes": _minutes(c.p95),
                    "weekly_p95_p10_minutes": _minutes(c.weekly_p95(10)),
                    "weekly_p95_p90_minutes": _minutes(c.weekly_p95(90)),
                }
                for c in self.classes
            },
            "eur_per_week": {
                "mean": _round(sum(eur, Fraction(0)) / len(eur), 6),
                "min": _round(eur[0], 6),
                "max": _round(eur[-1], 6),
            },
            "bound": None if self.bound is None else self.bound.as_json(self.mean_eur),
            "blind_bound": None if self.blind is None else self.blind.as_json(self.mean_eur),
        }


def simulate_weeks(
    platform: Platform,
    weeks: int | None = None,
    *,
    slower: Fraction = Fraction(1),
    late_boot: Fraction = Fraction(0),
    cold_start_minutes: Fraction | None = None,
) -> WeeksReport | None:
    """`weeks` (default `platform.slo.weeks`) independent weeks of the workload, under the what-if knobs (jobs
    `slower`, every boot `late_boot` later, or every boot `cold_start_minutes`); None without a workload."""
    spec = platform.spec
    if spec.workload is None:
        return None
    count = spec.slo.weeks if weeks is None else weeks
    per_class: dict[JobClass, list[Waits]] = {job_class: [] for job_class in CLASSES}
    eur: list[Fraction] = []
    failed: list[int] = []
    always_on = sum((p.eur_per_hour * 24 * 7 * p.min_size for p in platform.pools.values()), Fraction(0))
    floors: list[WeekFloor] = []
    pools = bound_pools(platform, late_boot=late_boot, cold_start_minutes=cold_start_minutes)
    for week in range(count):
        jobs = shared_week_jobs(platform, week=week)
        built = scenario(
            platform, jobs, slower=slower, late_boot=late_boot, cold_start_minutes=cold_start_minutes, week=week
        )
        result = simulate_spec(built)
        for row in class_waits(jobs, result):
            per_class[row.job_class].append(row.waits)
        scaled = sum(
            (p.scaled_node_minutes * platform.pools[p.name].eur_per_hour / 60 for p in result.pools), Fraction(0)
        )
        eur.append(scaled + always_on)
        failed.append(len(result.failed))
        if spec.slo.merge_request_wait_minutes is not None and any(j.job_class == "merge_request" for j in jobs):
            floors.append(week_bound(platform, jobs, pools, slower=slower))
    target = spec.slo.merge_request_wait_minutes
    return WeeksReport(
        weeks=count,
        target=None if target is None else exact_target(target),
        confidence=exact_target(spec.slo.confidence),
        classes=tuple(ClassWeeks(c, Waits.pooled(w), tuple(w)) for c, w in per_class.items()),
        eur_per_week=tuple(eur),
        failed_by_week=tuple(failed),
        floors=tuple(floors),
        blind=blind_bound(platform, late_boot=max(late_boot, LATE_BOOT), cold_start_minutes=cold_start_minutes)
        if floors
        else None,
    )


def week_meets(parts: list[Waits], target: Fraction) -> bool:
    """A week's merge-request jobs over pools (each pool's `Waits`) within the target by the one rule."""
    whole = Waits.pooled(parts)
    return bool(whole.jobs) and whole.over(target) <= allowed_over(whole.jobs)


def _round(value: Fraction, digits: int) -> float:
    return round(float(value), digits)


def _minutes(value: Fraction | None) -> float | None:
    return None if value is None else _round(value, 2)
