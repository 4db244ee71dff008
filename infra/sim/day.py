"""What a day of CI jobs costs, how long its bursts take, and whether any job fails: the new setup simulated
against the old one (pure: no Pulumi). `simulate_day(platform)`: whoever needs the day asks once per command.

One model for all three figures: the day of `platform.workload` is dispatched by `infra.sim.engine` (GitLab's
queue, the per-pool runners' slots, Pending pods, `poll_timeout`, cold starts, scale-down, per-minute billing;
`infra.sim.platform_scenario` builds the scenario). From its result:
- EUR per day: the scaled GPU nodes' billed minutes at their price, plus the always-on nodes (`min_size`,
  e.g. the system pool) 24 h a day;
- per burst, its makespan (from queued to its last job's end); the report shows the largest;
- failed jobs by GitLab's failure reason, and the longest wait before a job runs.

The old setup (`workload.baseline`) is the same day on one always-on node of the baseline type running one
job at a time (one runner, `concurrent = 1`: jobs wait in GitLab), plus `idle_node_types` billed around the
clock; a job runs as long as `minutes_per_job` (it has the GPU to itself).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from infra.quantity import exact_decimal
from infra.sim.engine import simulate
from infra.sim.platform_scenario import MINUTES_PER_DAY, PlannedJob, scenario, workload_jobs
from infra.sim.results import SimResult
from infra.sim.scenario import Scenario, SimJob, SimPool, SimRunner

if TYPE_CHECKING:
    from infra.model.platform import Platform


@dataclass(frozen=True)
class ProfileLoad:
    """One profile's daily load and how long its jobs ran in the simulated day."""

    profile: str
    pool: str
    jobs_per_day: int
    minutes_alone: Fraction
    minutes_as_run: Fraction
    """The mean run time of its jobs in the simulated day (slower than alone when they share a busy GPU)."""


@dataclass(frozen=True)
class PoolDay:
    """One pool's day: what its nodes billed."""

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
class CostReport:
    """The new setup's simulated day against the old one's."""

    batches_per_day: int
    profiles: tuple[ProfileLoad, ...]
    pools: tuple[PoolDay, ...]
    baseline: Baseline
    failed_by_reason: dict[str, int]
    makespan_minutes: Fraction
    """The largest burst's makespan: from its jobs being queued to the last one's end."""
    longest_wait_minutes: Fraction | None
    """The longest time a job waited (GitLab's queue, then Pending) before running."""

    @property
    def jobs_per_day(self) -> int:
        return sum(p.jobs_per_day for p in self.profiles)

    @property
    def failed_jobs(self) -> int:
        return sum(self.failed_by_reason.values())

    @property
    def eur_per_day(self) -> Fraction:
        return sum((p.eur_per_day for p in self.pools), Fraction(0))

    def as_json(self) -> dict[str, object]:
        """JSON-ready figures (EUR to 1/10000 of a cent, minutes and hours to 0.01)."""
        return {
            "batches_per_day": self.batches_per_day,
            "jobs_per_day": self.jobs_per_day,
            "eur_per_day": _round(self.eur_per_day, 6),
            "makespan_minutes": _round(self.makespan_minutes, 2),
            "longest_wait_minutes": None if self.longest_wait_minutes is None else _round(self.longest_wait_minutes, 2),
            "failed_jobs": self.failed_jobs,
            "failed_by_reason": dict(sorted(self.failed_by_reason.items())),
            "profiles": [
                {
                    "profile": p.profile,
                    "pool": p.pool,
                    "jobs_per_day": p.jobs_per_day,
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


def simulate_day(platform: Platform) -> CostReport | None:
    """The simulated day of the spec's workload, new setup and old; None without a workload."""
    workload = platform.spec.workload
    if workload is None:
        return None
    jobs = workload_jobs(platform)
    result = simulate(scenario(platform, jobs))
    return CostReport(
        batches_per_day=workload.batches_per_day,
        profiles=_profiles(platform, jobs, result),
        pools=_pools(platform, result),
        baseline=_baseline(platform, jobs),
        failed_by_reason=dict(result.failed_by_reason),
        makespan_minutes=largest_burst(jobs, result),
        longest_wait_minutes=result.longest_wait,
    )


def largest_burst(jobs: list[PlannedJob], result: SimResult) -> Fraction:
    """The longest burst: from its jobs' queueing to the last one's end (failed ones included)."""
    ends: dict[Fraction, Fraction] = defaultdict(Fraction)
    for job, outcome in zip(jobs, result.jobs, strict=True):
        ends[job.created_minute] = max(ends[job.created_minute], outcome.finished - job.created_minute)
    return max(ends.values(), default=Fraction(0))


def _profiles(platform: Platform, jobs: list[PlannedJob], result: SimResult) -> tuple[ProfileLoad, ...]:
    workload = platform.spec.workload
    assert workload is not None
    runs: dict[str, list[Fraction]] = defaultdict(list)
    for job, outcome in zip(jobs, result.jobs, strict=True):
        if outcome.outcome == "success" and outcome.started is not None:
            runs[job.profile].append(outcome.finished - outcome.started)
    loads = []
    for name, load in sorted(workload.profiles.items()):
        if name not in platform.profiles:
            continue
        alone = exact_decimal(load.minutes_per_job)
        ran = runs[name]
        loads.append(
            ProfileLoad(
                profile=name,
                pool=platform.profiles[name].pool,
                jobs_per_day=load.jobs_per_day,
                minutes_alone=alone,
                minutes_as_run=sum(ran, Fraction(0)) / len(ran) if ran else alone,
            )
        )
    return tuple(loads)


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
                scaled_node_hours=Fraction(run.scaled_node_minutes, 60) if run else Fraction(0),
                always_on_node_hours=Fraction(24 * pool.min_size),
                peak_pods=run.peak_pods if run else 0,
            )
        )
    return tuple(days)


def _baseline(platform: Platform, jobs: list[PlannedJob]) -> Baseline:
    """The same day on one always-on node, one job at a time (simulated too: jobs queue in GitLab)."""
    spec = platform.spec
    workload = spec.workload
    assert workload is not None
    baseline = workload.baseline
    catalog = spec.catalog
    node = catalog[baseline.node_type]
    pool = SimPool(baseline.node_type, 1, 1, 1, 1, 0, node.eur_per_hour, 0, 0)
    runner = SimRunner("old", frozenset({"old"}), frozenset({pool.name}), 1, MINUTES_PER_DAY, MINUTES_PER_DAY)
    old_jobs = tuple(
        SimJob(index, job.name, frozenset({"old"}), pool.name, job.minutes, created_minute=job.created_minute)
        for index, job in enumerate(jobs, start=1)
    )
    result = simulate(Scenario(pools=(pool,), runners=(runner,), jobs=old_jobs))
    price = node.eur_per_hour + sum((catalog[t].eur_per_hour for t in baseline.idle_node_types), Fraction(0))
    return Baseline(
        node_type=baseline.node_type,
        idle_node_types=baseline.idle_node_types,
        eur_per_day=price * 24,
        busy_hours_per_day=sum((job.minutes for job in jobs), Fraction(0)) / 60,
        makespan_minutes=largest_burst(jobs, result),
    )
