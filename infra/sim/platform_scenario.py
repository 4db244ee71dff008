"""The platform as a dispatch scenario (pure): its pools and runners, and jobs to dispatch, for the engine
(`infra.sim.engine`).

The pools are the GPU pools that a runner serves, with their derived job slots, cold start, price, the
cluster-autoscaler's scale-down settings, and their warm windows (started a cold start early, so the nodes
are ready at `from`). The runners are the platform's: per pool its shared runner and the runner of its held
merge-request slots (that one asks for jobs first), tags as rendered, `concurrent` as derived, the derived
`poll_timeout`, the job timeout their pool's templates set (`infra.model.timeouts`: what the jobs really get),
upgraded with `Recreate`. A job's tags are its profile template's as GitLab expands them for its class (a
merge-request pipeline, or a scheduled one), and it is retried as the templates say.
`single_runner` rebuilds the layout gpu-ci had before (one runner for every pool, `concurrent` = all
slots, `poll_timeout` = the slowest cold start, rolling upgrades, no retry): the model shows why it lost jobs.
The week of the workload's jobs is `infra.sim.arrivals`.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Literal

from infra.config.base import duration_seconds
from infra.config.workload import LEGACY_KIND, JobClass
from infra.model.attempts import RETRY_MAX, RETRY_WHEN
from infra.model.routes import BATCH_SOURCE, MERGE_REQUEST_SOURCE, expand
from infra.model.warm import week_spans
from infra.sim.memo import ByIdentity
from infra.sim.scenario import Minutes, Scenario, SimJob, SimPool, SimRunner, Upgrade

if TYPE_CHECKING:
    from infra.model.platform import Platform
    from infra.model.pools import Pool


@dataclass(frozen=True)
class PlannedJob:
    """A job to dispatch: which profile it belongs to, when it is queued, how long it runs alone."""

    name: str
    profile: str
    minutes: Fraction
    created_minute: Fraction = Fraction(0)
    tags: tuple[str, ...] | None = None
    """Its tags (None: its profile template's, expanded for its class)."""
    pool: str | None = None
    """Where its pod is sent (None: its profile's pool)."""
    job_class: JobClass = "merge_request"
    kind: str = LEGACY_KIND
    """The job-name prefix of its kind (`train-validate`, `hyperopt`)."""
    pipeline: str = ""
    """The pipeline (burst) it belongs to: jobs queued together."""


def sim_pools(platform: Platform, *, week: int = 0) -> tuple[SimPool, ...]:
    """The GPU pools a runner serves, as the scheduler and the autoscaler see them, their boots drawn for
    `week` (`boot_seed`)."""
    autoscaler = platform.spec.cluster.autoscaler
    unneeded = Fraction(duration_seconds(autoscaler.scale_down_unneeded_time), 60)
    after_add = Fraction(duration_seconds(autoscaler.scale_down_delay_after_add), 60)
    return tuple(_sim_pool(pool, unneeded, after_add, week) for pool in platform.pools.values() if pool.runner)


def boot_seed(pool: str, week: int) -> int:
    """The seed of a pool's boots in a week: its name and the week's number, so that two specs simulated on the
    same week boot their k-th node of a pool alike (common random numbers)."""
    return zlib.crc32(f"boots:{pool}:{week}".encode())


def _sim_pool(pool: Pool, unneeded: Fraction, after_add: Fraction, week: int) -> SimPool:
    spec = pool.spec
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
        warm_windows=tuple((Fraction(start), Fraction(end), nodes) for start, end, nodes in week_spans(pool)),
        cold_start_p90_minutes=spec.cold_start_p90_minutes,
        cold_start_max_minutes=spec.cold_start_max_minutes,
        cold_start_seed=boot_seed(pool.name, week),
        template_slots=min(pool.jobs_per_node, max(1, pool.node.gpus)),  # Scaleway's template: the physical GPUs
    )


def sim_runners(platform: Platform) -> tuple[SimRunner, ...]:
    """The platform's runners as rendered (Recreate upgrades); a pool's held slots' runner asks first."""
    ordered = sorted(platform.runners.values(), key=lambda runner: (runner.pool, not runner.merge_requests_only))
    return tuple(
        SimRunner(
            name=runner.name,
            tags=frozenset(runner.tags),
            pools=frozenset({runner.pool}),
            concurrent=runner.concurrent,
            poll_timeout_minutes=Fraction(runner.poll_timeout_seconds, 60),
            job_timeout_minutes=Fraction(runner.template_timeout_seconds, 60),
            upgrade_strategy="recreate",
        )
        for runner in ordered
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


def job_tags(platform: Platform, job: PlannedJob) -> tuple[str, ...]:
    """A job's tags as GitLab expands them: its own, or its template's in a pipeline of its class."""
    if job.tags is not None:
        return job.tags
    source = MERGE_REQUEST_SOURCE if job.job_class == "merge_request" else BATCH_SOURCE
    return expand(platform.profiles[job.profile].tags, source)


def _tags(
    platform: Platform,
    job: PlannedJob,
    found: dict[tuple[str, JobClass], frozenset[str]],
    single: tuple[str, ...] | None,
) -> frozenset[str]:
    """`job_tags` as a set (`single`: those tags instead), a profile's template's expanded once per class."""
    if single is not None:
        return frozenset(single)
    if job.tags is not None:
        return frozenset(job.tags)
    key = (job.profile, job.job_class)
    if key not in found:
        found[key] = frozenset(job_tags(platform, job))
    return found[key]


def scenario(
    platform: Platform,
    jobs: Sequence[PlannedJob],
    *,
    layout: Literal["per-pool", "single"] = "per-pool",
    slower: Fraction = Fraction(1),
    cold_start_minutes: Fraction | None = None,
    upgrades: Iterable[Upgrade] = (),
    stockouts: Mapping[str, tuple[tuple[Minutes, Minutes], ...]] | None = None,
    week: int = 0,
    late_boot: Fraction = Fraction(0),
) -> Scenario:
    """The platform dispatching `jobs` (ids in the given order), with what-if knobs: jobs `slower` than
    estimated, another cold start (every boot that long), every boot `late_boot` minutes later than drawn,
    manager upgrades, stock-outs of pools (by name: [start, end) windows); the boots drawn for `week`."""
    pools = sim_pools(platform, week=week)
    if cold_start_minutes is not None:
        pools = tuple(
            replace(
                pool, cold_start_minutes=cold_start_minutes, cold_start_p90_minutes=None, cold_start_max_minutes=None
            )
            for pool in pools
        )
    if late_boot:
        pools = tuple(replace(pool, cold_start_late_minutes=late_boot) for pool in pools)
    if stockouts:
        pools = tuple(replace(pool, stockouts=tuple(stockouts.get(pool.name, ()))) for pool in pools)
    single = layout == "single"
    runners = single_runner(platform) if single else sim_runners(platform)
    single_tags = tuple(platform.spec.runner.tags)  # before per-pool runners, every template carried these
    workload = platform.spec.workload
    utilization = {
        name: load.gpu_utilization for name, load in (workload.profiles.items() if workload is not None else ())
    }
    key = (
        slower,
        single_tags if single else None,
        tuple((name, profile.tags, profile.pool) for name, profile in platform.profiles.items()),
        tuple(utilization.items()),
    )
    sim_jobs = _SIM_JOBS.get(jobs, key) if type(jobs) is tuple else None  # a list could change: made each time
    if sim_jobs is None:
        sim_jobs = _sim_jobs(platform, jobs, slower, single_tags if single else None, utilization)
        if type(jobs) is tuple:
            _SIM_JOBS.keep(jobs, sim_jobs, key)
    return Scenario(pools=pools, runners=runners, jobs=sim_jobs, upgrades=tuple(upgrades))


_SIM_JOBS: ByIdentity[Sequence[PlannedJob], tuple[SimJob, ...]] = ByIdentity(512)
"""`scenario`'s jobs by what they are made of (the jobs' tuple itself; the variant's `slower`; the tags and pool
of each profile; the utilizations): the search builds the same week's jobs for every candidate, whose levers leave
them alone, and a week's thousands of jobs cost a tenth of its search."""


def _sim_jobs(
    platform: Platform,
    jobs: Sequence[PlannedJob],
    slower: Fraction,
    single_tags: tuple[str, ...] | None,
    utilization: Mapping[str, float | Fraction | None],
) -> tuple[SimJob, ...]:
    """The planned jobs as the engine queues them (ids in the given order)."""
    single = single_tags is not None
    tags: dict[tuple[str, JobClass], frozenset[str]] = {}  # a template's tags, expanded once per class
    retry_when = frozenset() if single else frozenset(RETRY_WHEN)
    return tuple(
        SimJob(
            id=index,
            name=job.name,
            tags=_tags(platform, job, tags, single_tags),
            pool=job.pool or platform.profiles[job.profile].pool,
            minutes=job.minutes if slower == 1 and type(job.minutes) is Fraction else job.minutes * slower,
            gpu_utilization=utilization.get(job.profile),
            created_minute=job.created_minute,
            retry_max=0 if single else RETRY_MAX,
            retry_when=retry_when,
        )
        for index, job in enumerate(jobs, start=1)
    )
