"""What a week of CI jobs costs, how long people wait for them, and whether any job fails: the new setup
simulated against the old one (pure: no Pulumi). `simulate_week(platform)`: whoever needs it asks once per
command.

One model for every figure: the week of `platform.workload` (`infra.sim.arrivals`) is dispatched by
`infra.sim.engine` (GitLab's queue, the runners' slots and held slots, Pending pods, `poll_timeout` and
retries, cold starts, warm windows, scale-down, per-minute billing; `infra.sim.platform_scenario` builds the
scenario). From its result:
- EUR per week (and per day, a seventh of it): the scaled GPU nodes' billed minutes at their price, plus the
  always-on nodes (`min_size`, e.g. the system pool) around the clock;
- per class (`merge_request`, `batch`), the wait of each job from queued to running, over its attempts, split
  into waiting for a runner slot and waiting for a node: p50, p95 (nearest rank) and the longest; and the
  jobs that failed for good (a retried job counts once);
- per pipeline (a burst: jobs queued together), its makespan; the report shows the largest;
- the target `platform.slo.merge_request_wait_minutes`, met or missed (a miss is a warning at that key);
- the busiest burst's timeline (`infra.sim.burst`), bounded in size: what the MR note draws.

The old setup (`workload.baseline`) is the same week on one always-on node of the baseline type running one
job at a time (one runner, `concurrent = 1`: jobs wait in GitLab), plus `idle_node_types` billed around the
clock; a job runs as long as it is drawn (it has the GPU to itself).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

from infra.config.errors import Problem, key_path
from infra.config.workload import JobClass
from infra.sim.arrivals import DAYS, shared_week_jobs
from infra.sim.burst import BurstTimeline, busiest_burst
from infra.sim.engine import simulate_spec
from infra.sim.memo import ByIdentity
from infra.sim.platform_scenario import PlannedJob, scenario
from infra.sim.results import SimResult
from infra.sim.scenario import Scenario, SimJob, SimPool, SimRunner
from infra.sim.verdict import Waits, exact_target, sorted_exact

if TYPE_CHECKING:
    from infra.model.platform import Platform

CLASSES: tuple[JobClass, ...] = ("merge_request", "batch")
MINUTES_PER_WEEK = DAYS * 24 * 60


@dataclass(frozen=True)
class ProfileLoad:
    """One profile's load and how long its jobs ran in the simulated week."""

    profile: str
    pool: str
    jobs_per_week: int
    minutes_alone: Fraction
    """The mean run time of its jobs alone on their GPU."""
    minutes_as_run: Fraction
    """The mean run time of its jobs in the simulated week (slower than alone when they share a busy GPU)."""


@dataclass(frozen=True)
class PoolDay:
    """One pool's average day of the week: what its nodes billed."""

    pool: str
    node_type: str
    jobs_per_node: int
    slots: int
    eur_per_hour: Fraction
    scaled_node_hours: Fraction
    always_on_node_hours: Fraction
    peak_pods: int
    """Most job pods at once; above `slots` the pool was oversubscribed (pods Pending)."""

    @property
    def eur_per_day(self) -> Fraction:
        return (self.scaled_node_hours + self.always_on_node_hours) * self.eur_per_hour


@dataclass(frozen=True)
class Baseline:
    """The old setup's day: one node, one job at a time, always on."""

    node_type: str
    idle_node_types: tuple[str, ...]
    eur_per_day: Fraction
    busy_hours_per_day: Fraction
    makespan_minutes: Fraction
    """The largest burst, one job after the other."""

    @property
    def keeps_up(self) -> bool:
        """Whether one node, one job at a time, gets through a day's jobs in a day."""
        return self.busy_hours_per_day <= 24


@dataclass(frozen=True)
class ClassWaits:
    """One class of jobs over the week: how many, how many failed, and how long they waited."""

    job_class: JobClass
    jobs: int
    failed: int
    p50: Fraction | None
    p95: Fraction | None
    longest: Fraction | None
    """Waits from queued to running (None: no job of the class ran)."""
    slot_p95: Fraction | None
    """p95 of the part waiting in GitLab for a runner slot (of the jobs that ran)."""
    node_p95: Fraction | None
    """p95 of the part waiting, taken, for a node (a cold start, a stock-out)."""
    waits: Waits = field(default_factory=lambda: Waits(()), compare=False)
    """The waits of the jobs that ran and the jobs lost (`infra.sim.verdict`: the p95 ranks a lost job last)."""

    def as_json(self) -> dict[str, object]:
        return {
            "jobs": self.jobs,
            "failed": self.failed,
            **{
                f"{name}_minutes": None if value is None else _round(value, 2)
                for name, value in (
                    ("wait_p50", self.p50),
                    ("wait_p95", self.p95),
                    ("wait_max", self.longest),
                    ("slot_wait_p95", self.slot_p95),
                    ("node_wait_p95", self.node_p95),
                )
            },
        }


@dataclass(frozen=True)
class CostReport:
    """The new setup's simulated week against the old one's."""

    batches_per_day: int
    profiles: tuple[ProfileLoad, ...]
    pools: tuple[PoolDay, ...]
    baseline: Baseline
    failed_by_reason: dict[str, int]
    """Jobs of the week that failed for good (a retried job counts once), by GitLab's failure reason."""
    retried_by_reason: dict[str, int]
    """Attempts GitLab retried, by reason."""
    makespan_minutes: Fraction
    """The largest pipeline's makespan: from its jobs being queued to the last one's end."""
    longest_wait_minutes: Fraction | None
    """The longest time a job waited (GitLab's queue, then Pending, over its attempts) before running."""
    classes: tuple[ClassWaits, ...]
    merge_request_target_minutes: float | None = None
    """`platform.slo.merge_request_wait_minutes`."""
    burst: BurstTimeline | None = None
    """The busiest burst's timeline (`infra.sim.burst`): the MR note's chart, `simulate --timeline`."""

    @property
    def jobs_per_week(self) -> int:
        return sum(p.jobs_per_week for p in self.profiles)

    @property
    def failed_jobs(self) -> int:
        return sum(self.failed_by_reason.values())

    @property
    def eur_per_day(self) -> Fraction:
        return sum((p.eur_per_day for p in self.pools), Fraction(0))

    @property
    def eur_per_week(self) -> Fraction:
        return self.eur_per_day * DAYS

    def waits(self, job_class: JobClass) -> ClassWaits:
        return next(c for c in self.classes if c.job_class == job_class)

    @property
    def merge_request_p95(self) -> Fraction | None:
        return self.waits("merge_request").p95

    @property
    def target_met(self) -> bool | None:
        """Whether the merge-request p95 is within the target, a job lost for good counted as over it (the one
        rule, `infra.sim.verdict`; None: no target, or no merge-request job in the week)."""
        target = self.merge_request_target_minutes
        if target is None:
            return None
        return self.waits("merge_request").waits.met(exact_target(target))

    def warnings(self) -> list[Problem]:
        """A missed target, at its key."""
        if self.target_met is not False:
            return []
        waits = self.waits("merge_request")
        target = self.merge_request_target_minutes
        failed = (
            f"{waits.failed} of {waits.jobs} merge-request jobs failed in the simulated week (each over the target)"
        )
        if waits.p95 is None or waits.slot_p95 is None or waits.node_p95 is None:
            missed = failed
        else:
            missed = (
                f"missed on the simulated week: merge-request jobs wait {_minutes(waits.p95)} min (p95; for a slot "
                f"{_minutes(waits.slot_p95)}, for a node {_minutes(waits.node_p95)})"
                + (f", and {failed}" if waits.failed else "")
            )
        return [
            Problem(
                key_path("slo", "merge_request_wait_minutes"),
                int(target) if target is not None and float(target).is_integer() else target,
                f"{missed}: hold slots for them (pools.<pool>.merge_request_slots), keep nodes warm in working hours "
                "(pools.<pool>.warm), or raise max_size (docs/feedback-time.md)",
                "warning",
            )
        ]

    def as_json(self) -> dict[str, object]:
        """JSON-ready figures (EUR to 1/10000 of a cent, minutes and hours to 0.01)."""
        return {
            "batches_per_day": self.batches_per_day,
            "jobs_per_day": _count(Fraction(self.jobs_per_week, DAYS)),
            "jobs_per_week": self.jobs_per_week,
            "eur_per_day": _round(self.eur_per_day, 6),
            "eur_per_week": _round(self.eur_per_week, 6),
            "makespan_minutes": _round(self.makespan_minutes, 2),
            "longest_wait_minutes": None if self.longest_wait_minutes is None else _round(self.longest_wait_minutes, 2),
            "failed_jobs": self.failed_jobs,
            "failed_by_reason": dict(sorted(self.failed_by_reason.items())),
            "retried_by_reason": dict(sorted(self.retried_by_reason.items())),
            "classes": {c.job_class: c.as_json() for c in self.classes},
            "merge_request_wait_p95_minutes": (
                None if self.merge_request_p95 is None else _round(self.merge_request_p95, 2)
            ),
            "slo": {"merge_request_wait_minutes": self.merge_request_target_minutes, "met": self.target_met},
            "burst": None if self.burst is None else self.burst.as_json(),
            "profiles": [
                {
                    "profile": p.profile,
                    "pool": p.pool,
                    "jobs_per_day": _count(Fraction(p.jobs_per_week, DAYS)),
                    "minutes_alone": _round(p.minutes_alone, 2),
                    "minutes_as_run": _round(p.minutes_as_run, 2),
                }
                for p in self.profiles
            ],
            "pools": [
                {
                    "pool": p.pool,
                    "node_type": p.node_type,
                    "jobs_per_node": p.jobs_per_node,
                    "slots": p.slots,
                    "eur_per_day": _round(p.eur_per_day, 6),
                    "scaled_node_hours": _round(p.scaled_node_hours, 2),
                    "always_on_node_hours": _round(p.always_on_node_hours, 2),
                    "peak_pods": p.peak_pods,
                }
                for p in self.pools
            ],
            "baseline": {
                "node_type": self.baseline.node_type,
                "idle_node_types": list(self.baseline.idle_node_types),
                "eur_per_day": _round(self.baseline.eur_per_day, 6),
                "busy_hours_per_day": _round(self.baseline.busy_hours_per_day, 2),
                "makespan_minutes": _round(self.baseline.makespan_minutes, 2),
                "keeps_up": self.baseline.keeps_up,
            },
        }


def _round(value: Fraction, digits: int) -> float:
    return round(float(value), digits)


def _count(value: Fraction) -> float | int:
    """A count a day: whole when it is (36), else to 0.01 (25.71)."""
    return int(value) if value.denominator == 1 else _round(value, 2)


def _minutes(value: Fraction) -> str:
    return f"{float(value):.1f}"


def simulate_week(platform: Platform) -> CostReport | None:
    """The simulated week of the spec's workload, new setup and old; None without a workload."""
    workload = platform.spec.workload
    if workload is None:
        return None
    jobs = shared_week_jobs(platform)
    result = simulate_spec(scenario(platform, jobs))
    return week_report(platform, jobs, result)


def week_report(platform: Platform, jobs: Sequence[PlannedJob], result: SimResult) -> CostReport:
    """The report of a simulated week of `jobs` (the order of the scenario built from them)."""
    workload = platform.spec.workload
    assert workload is not None
    return CostReport(
        batches_per_day=workload.batches_per_day,
        profiles=_profiles(platform, jobs, result),
        pools=_pools(platform, result),
        baseline=_baseline(platform, jobs),
        failed_by_reason=dict(result.failed_by_reason),
        retried_by_reason=dict(result.retried_by_reason),
        makespan_minutes=largest_burst(jobs, result),
        longest_wait_minutes=result.longest_wait,
        classes=class_waits(jobs, result),
        merge_request_target_minutes=platform.spec.slo.merge_request_wait_minutes,
        burst=busiest_burst(platform, jobs, result),
    )


def class_waits(jobs: Sequence[PlannedJob], result: SimResult) -> tuple[ClassWaits, ...]:
    """Per class: the jobs' waits over their attempts (`SimResult.waits`), until they ran. Remembered for the last
    results (`infra.sim.engine.simulate_spec` hands the plans of specs alike the same result, frozen) and the jobs'
    classes, all they read of the jobs."""
    classes = tuple(job.job_class for job in jobs)
    rows = _CLASS_WAITS.get(result, classes)
    return rows if rows is not None else _CLASS_WAITS.keep(result, _class_waits(jobs, result), classes)


_CLASS_WAITS: ByIdentity[SimResult, tuple[ClassWaits, ...]] = ByIdentity(128)


def _class_waits(jobs: Sequence[PlannedJob], result: SimResult) -> tuple[ClassWaits, ...]:
    waits = result.waits()
    finals = result.finals
    rows = []
    for job_class in CLASSES:
        picked = [(job, final) for job, final in zip(jobs, finals, strict=True) if job.job_class == job_class]
        ran = [waits[final.first_id] for _, final in picked if final.outcome == "success"]
        whole = Waits.of((slot + node for slot, node in ran), len(picked) - len(ran))  # a lost job ranks last
        rows.append(
            ClassWaits(
                job_class=job_class,
                jobs=len(picked),
                failed=sum(1 for _, final in picked if final.outcome == "failed"),
                p50=whole.percentile(50),
                p95=whole.percentile(95),
                longest=max((slot + node for slot, node in ran), default=None),
                slot_p95=percentile([slot for slot, _ in ran], 95),
                node_p95=percentile([node for _, node in ran], 95),
                waits=whole,
            )
        )
    return tuple(rows)


def percentile(values: Sequence[Fraction], q: int) -> Fraction | None:
    """The nearest-rank percentile (the smallest value with at least q % of the values at or below it)."""
    if not values:
        return None
    ordered = sorted_exact(values)
    return ordered[max(0, math.ceil(q * len(ordered) / 100) - 1)]


def largest_burst(jobs: Sequence[PlannedJob], result: SimResult) -> Fraction:
    """The longest pipeline: from its jobs' queueing to the last one's end (failed ones and retries included)."""
    ends: dict[tuple[str, Fraction], Fraction] = defaultdict(Fraction)
    last: dict[int, Fraction] = {}
    for attempt in result.jobs:
        last[attempt.first_id] = max(last.get(attempt.first_id, attempt.finished), attempt.finished)
    for job, final in zip(jobs, result.finals, strict=True):
        burst = (job.pipeline, job.created_minute)
        ends[burst] = max(ends[burst], last[final.first_id] - job.created_minute)
    return max(ends.values(), default=Fraction(0))


def _profiles(platform: Platform, jobs: Sequence[PlannedJob], result: SimResult) -> tuple[ProfileLoad, ...]:
    alone: dict[str, list[Fraction]] = defaultdict(list)
    runs: dict[str, list[Fraction]] = defaultdict(list)
    for job, final in zip(jobs, result.finals, strict=True):
        alone[job.profile].append(job.minutes)
        if final.outcome == "success" and final.started is not None:
            runs[job.profile].append(final.finished - final.started)
    loads = []
    workload = platform.spec.workload
    assert workload is not None
    for name in sorted(workload.profiles):
        if name not in platform.profiles:
            continue
        mean_alone = _mean(alone[name])
        loads.append(
            ProfileLoad(
                profile=name,
                pool=platform.profiles[name].pool,
                jobs_per_week=len(alone[name]),
                minutes_alone=mean_alone,
                minutes_as_run=_mean(runs[name]) if runs[name] else mean_alone,
            )
        )
    return tuple(loads)


def _mean(values: list[Fraction]) -> Fraction:
    return sum(values, Fraction(0)) / len(values) if values else Fraction(0)


def _pools(platform: Platform, result: SimResult) -> tuple[PoolDay, ...]:
    simulated = {p.name: p for p in result.pools}
    days = []
    for pool in platform.pools.values():
        run = simulated.get(pool.name)
        days.append(
            PoolDay(
                pool=pool.name,
                node_type=pool.node_type,
                jobs_per_node=pool.jobs_per_node,
                slots=pool.slots,
                eur_per_hour=pool.eur_per_hour,
                scaled_node_hours=Fraction(run.scaled_node_minutes, 60 * DAYS) if run else Fraction(0),
                always_on_node_hours=Fraction(24 * pool.min_size),
                peak_pods=run.peak_pods if run else 0,
            )
        )
    return tuple(days)


def _baseline(platform: Platform, jobs: Sequence[PlannedJob]) -> Baseline:
    """The same week on one always-on node, one job at a time (simulated too: jobs queue in GitLab)."""
    spec = platform.spec
    workload = spec.workload
    assert workload is not None
    baseline = workload.baseline
    catalog = spec.catalog
    node = catalog[baseline.node_type]
    pool = SimPool(baseline.node_type, 1, 1, 1, 1, 0, node.eur_per_hour, 0, 0)
    runner = SimRunner("old", frozenset({"old"}), frozenset({pool.name}), 1, MINUTES_PER_WEEK, MINUTES_PER_WEEK)
    old_jobs = tuple(
        SimJob(index, job.name, frozenset({"old"}), pool.name, job.minutes, created_minute=job.created_minute)
        for index, job in enumerate(jobs, start=1)
    )
    result = simulate_spec(Scenario(pools=(pool,), runners=(runner,), jobs=old_jobs))
    price = node.eur_per_hour + sum((catalog[t].eur_per_hour for t in baseline.idle_node_types), Fraction(0))
    return Baseline(
        node_type=baseline.node_type,
        idle_node_types=baseline.idle_node_types,
        eur_per_day=price * 24,
        busy_hours_per_day=sum((job.minutes for job in jobs), Fraction(0)) / 60 / DAYS,
        makespan_minutes=largest_burst(jobs, result),
    )
