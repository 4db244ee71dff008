"""The platform as a dispatch scenario (pure): its pools and runners, and the jobs of its workload, for the
engine (`infra.sim.engine`).

The pools are the GPU pools that a runner serves, with their derived job slots, cold start, price and the
cluster-autoscaler's scale-down settings. The runners are the platform's: one per pool, tags as rendered,
`concurrent` = the pool's slots, `poll_timeout` = cold start + margin, upgraded with `Recreate`.
`single_runner_scenario` rebuilds the layout gpu-ci had before (one runner for every pool, `concurrent` =
all slots, `poll_timeout` = the slowest cold start, rolling upgrades): the model shows why it lost jobs.

The workload (`platform.workload`) becomes jobs: `batches_per_day` bursts spread evenly over the day, each
with its share of every profile's jobs (the first bursts take the remainder), in profile order within a
burst (GitLab's ids follow the pipeline's order), tagged as the profile's template is.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Literal

from infra.config.base import duration_seconds
from infra.quantity import exact_decimal
from infra.sim.scenario import Scenario, SimJob, SimPool, SimRunner, Upgrade

if TYPE_CHECKING:
    from infra.model.platform import Platform
    from infra.model.pools import Pool

MINUTES_PER_DAY = 24 * 60


@dataclass(frozen=True)
class PlannedJob:
    """A job to dispatch: which profile it belongs to, when it is queued, how long it runs alone."""

    name: str
    profile: str
    minutes: Fraction
    created_minute: Fraction = Fraction(0)
    tags: tuple[str, ...] | None = None
    """Its tags (None: its profile template's)."""
    pool: str | None = None
    """Where its pod is sent (None: its profile's pool)."""


def sim_pools(platform: Platform) -> tuple[SimPool, ...]:
    """The GPU pools a runner serves, as the scheduler and the autoscaler see them."""
    autoscaler = platform.spec.cluster.autoscaler
    unneeded = Fraction(duration_seconds(autoscaler.scale_down_unneeded_time), 60)
    after_add = Fraction(duration_seconds(autoscaler.scale_down_delay_after_add), 60)
    return tuple(_sim_pool(pool, unneeded, after_add) for pool in platform.pools.values() if pool.runner)


def _sim_pool(pool: Pool, unneeded: Fraction, after_add: Fraction) -> SimPool:
    return SimPool(
        name=pool.name,
        slots_per_node=pool.jobs_per_node,
        gpus_per_node=max(1, pool.node.gpus),
        max_nodes=pool.max_size,
        warm_nodes=pool.min_size,
        cold_start_minutes=pool.cold_start_minutes,
        eur_per_node_hour=pool.eur_per_hour,
        scale_down_unneeded_minutes=unneeded,
        scale_down_delay_after_add_minutes=after_add,
        mps=pool.sharing.caps_compute,
        gpu_replicas=pool.sharing.replicas_per_gpu,
    )


def sim_runners(platform: Platform) -> tuple[SimRunner, ...]:
    """The platform's runners: one per pool, as rendered (Recreate upgrades)."""
    return tuple(
        SimRunner(
            name=runner.pool,
            tags=frozenset(runner.tags),
            pools=frozenset({runner.pool}),
            concurrent=runner.concurrent,
            poll_timeout_minutes=Fraction(runner.poll_timeout_seconds, 60),
            job_timeout_minutes=Fraction(runner.job_timeout_seconds, 60),
            upgrade_strategy="recreate",
        )
        for runner in platform.runners.values()
    )


def single_runner(platform: Platform) -> tuple[SimRunner, ...]:
    """The layout before one runner per pool: one runner holding the default tags for every pool, `concurrent`
    = all the pools' slots, `poll_timeout` = the slowest cold start, no margin, rolling upgrades."""
    runners = platform.runners.values()
    return (
        SimRunner(
            name="single",
            tags=frozenset(platform.spec.runner.tags),
            pools=frozenset(r.pool for r in runners),
            concurrent=sum(r.concurrent for r in runners),
            poll_timeout_minutes=max(platform.pools[r.pool].cold_start_minutes for r in runners),
            job_timeout_minutes=Fraction(platform.spec.runner.job_timeout_seconds, 60),
            upgrade_strategy="rolling",
        ),
    )


def workload_jobs(platform: Platform) -> list[PlannedJob]:
    """A day of the spec's workload: its bursts spread evenly over the day (empty without a workload)."""
    workload = platform.spec.workload
    if workload is None:
        return []
    bursts = workload.batches_per_day
    loads = {name: load for name, load in sorted(workload.profiles.items()) if name in platform.profiles}
    split = {name: split_evenly(load.jobs_per_day, bursts) for name, load in loads.items()}
    jobs = []
    for burst in range(bursts):
        start = Fraction(MINUTES_PER_DAY * burst, bursts)
        for name, load in loads.items():
            families = platform.profiles[name].families
            for index in range(split[name][burst]):
                family = families[index % len(families)]
                jobs.append(PlannedJob(f"{family}-{burst}-{index}", name, exact_decimal(load.minutes_per_job), start))
    return jobs


def split_evenly(total: int, parts: int) -> list[int]:
    """`total` jobs over `parts` bursts, the first bursts taking the remainder."""
    quotient, remainder = divmod(total, parts)
    return [quotient + (1 if i < remainder else 0) for i in range(parts)]


def scenario(
    platform: Platform,
    jobs: Sequence[PlannedJob],
    *,
    layout: Literal["per-pool", "single"] = "per-pool",
    slower: Fraction = Fraction(1),
    cold_start_minutes: Fraction | None = None,
    upgrades: Iterable[Upgrade] = (),
) -> Scenario:
    """The platform dispatching `jobs` (ids in the given order), with what-if knobs: jobs `slower` than
    estimated, another cold start, manager upgrades."""
    pools = sim_pools(platform)
    if cold_start_minutes is not None:
        pools = tuple(replace(pool, cold_start_minutes=cold_start_minutes) for pool in pools)
    runners = sim_runners(platform) if layout == "per-pool" else single_runner(platform)
    single_tags = tuple(platform.spec.runner.tags)  # before per-pool runners, every template carried these
    workload = platform.spec.workload
    utilization = {
        name: load.gpu_utilization for name, load in (workload.profiles.items() if workload is not None else ())
    }
    sim_jobs = tuple(
        SimJob(
            id=index,
            name=job.name,
            tags=frozenset(
                single_tags
                if layout == "single"
                else job.tags
                if job.tags is not None
                else platform.profiles[job.profile].tags
            ),
            pool=job.pool or platform.profiles[job.profile].pool,
            minutes=job.minutes * slower,
            gpu_utilization=utilization.get(job.profile),
            created_minute=job.created_minute,
        )
        for index, job in enumerate(jobs, start=1)
    )
    return Scenario(pools=pools, runners=runners, jobs=sim_jobs, upgrades=tuple(upgrades))
