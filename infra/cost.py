"""What a day of CI jobs costs and how long a burst takes to drain, new setup against old (pure: no Pulumi).

The model, stated once here and in the README ("Cost model"); every figure is exact (fractions) until shown:

- A day's jobs of each profile arrive in `workload.batches_per_day` bursts, as evenly as possible (the
  first bursts take the remainder). Each burst finds the GPU pools scaled to zero (`min_size` nodes up).
- A pool drains a burst in waves of up to `max_size x jobs_per_node` jobs, in queue order, packed onto
  as few nodes as possible. Every node the burst needs is created at once and is ready after the pool's
  `cold_start_minutes` (nodes kept up by `min_size` are ready at once, but the first wave waits for all).
- A wave lasts as long as its slowest job. A job runs `minutes_per_job` when alone on its GPU. With a
  `gpu_utilization` u, it slows down by max(1, u x n): n = the jobs sharing its GPU in that wave under
  time-slicing (their demands add up past 100 %), n = the pool's replicas under MPS (each client is capped
  at 1/replicas of the GPU even when alone). Without u, sharing is assumed free.
- A scaled node is billed per minute (Scaleway GPU instances) from its creation until
  `scale_down_unneeded_time` after its last wave, and no sooner than `scale_down_delay_after_add` after
  the scale-up. Nodes kept by `min_size` (e.g. the system pool) are billed 24 h a day.
- Pools work in parallel: a burst is drained when its slowest pool is.
- The old setup (`workload.baseline`): every job on one always-on node, one at a time, each as long as
  `minutes_per_job`, plus `idle_node_types` billed 24 h a day.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from infra.config.base import duration_seconds

if TYPE_CHECKING:
    from infra.config.workload import ProfileLoadSpec, WorkloadSpec
    from infra.model import Platform, Pool

MINUTES_PER_DAY = 24 * 60


def exact(value: float) -> Fraction:
    """A config number as the exact decimal the user wrote (0.34, not the nearest binary float)."""
    return Fraction(str(value))


@dataclass(frozen=True)
class ProfileLoad:
    """One profile's daily load and how long its jobs run where they are routed."""

    profile: str
    pool: str
    jobs_per_day: int
    minutes_alone: Fraction
    minutes_full_node: Fraction
    """Run time when the GPU is shared as configured and the node is full (the slowest case)."""


@dataclass(frozen=True)
class BurstRun:
    """How one pool drains one burst."""

    jobs: int
    nodes: int
    waves: int
    drain_minutes: Fraction
    """From the burst being queued to its last job finishing (cold start included)."""
    billed_node_minutes: Fraction
    """Minutes billed for the nodes the burst scaled up (not the min_size ones)."""


@dataclass(frozen=True)
class PoolDay:
    """One pool's day: its bursts, what they bill, and what its always-on nodes bill."""

    pool: str
    node_type: str
    jobs_per_node: int
    max_size: int
    eur_per_hour: Fraction
    bursts: tuple[BurstRun, ...]
    scaled_node_hours: Fraction
    always_on_node_hours: Fraction
    bursts_overlap: bool
    """A burst's nodes would still be up when the next burst arrives: the model over-counts cold starts."""

    @property
    def eur_per_day(self) -> Fraction:
        return (self.scaled_node_hours + self.always_on_node_hours) * self.eur_per_hour

    @property
    def drain_minutes(self) -> Fraction:
        return max((b.drain_minutes for b in self.bursts), default=Fraction(0))


@dataclass(frozen=True)
class Baseline:
    """The old setup's day: one node, one job at a time, always on."""

    node_type: str
    idle_node_types: tuple[str, ...]
    eur_per_day: Fraction
    busy_hours_per_day: Fraction
    drain_minutes: Fraction
    """The largest burst, one job after the other."""

    @property
    def keeps_up(self) -> bool:
        """Whether one node, one job at a time, gets through a day's jobs in a day."""
        return self.busy_hours_per_day <= 24


@dataclass(frozen=True)
class CostReport:
    """The new setup's day against the old one's."""

    batches_per_day: int
    profiles: tuple[ProfileLoad, ...]
    pools: tuple[PoolDay, ...]
    baseline: Baseline

    @property
    def jobs_per_day(self) -> int:
        return sum(p.jobs_per_day for p in self.profiles)

    @property
    def eur_per_day(self) -> Fraction:
        return sum((p.eur_per_day for p in self.pools), Fraction(0))

    @property
    def drain_minutes(self) -> Fraction:
        return max((p.drain_minutes for p in self.pools), default=Fraction(0))

    def as_json(self) -> dict[str, object]:
        """JSON-ready figures (EUR to 1/10000 of a cent, minutes and hours to 0.01)."""
        return {
            "batches_per_day": self.batches_per_day,
            "jobs_per_day": self.jobs_per_day,
            "eur_per_day": _round(self.eur_per_day, 6),
            "drain_minutes": _round(self.drain_minutes, 2),
            "profiles": [
                {
                    "profile": p.profile,
                    "pool": p.pool,
                    "jobs_per_day": p.jobs_per_day,
                    "minutes_alone": _round(p.minutes_alone, 2),
                    "minutes_full_node": _round(p.minutes_full_node, 2),
                }
                for p in self.profiles
            ],
            "pools": [
                {
                    "pool": p.pool,
                    "node_type": p.node_type,
                    "jobs_per_node": p.jobs_per_node,
                    "eur_per_day": _round(p.eur_per_day, 6),
                    "scaled_node_hours": _round(p.scaled_node_hours, 2),
                    "always_on_node_hours": _round(p.always_on_node_hours, 2),
                    "drain_minutes": _round(p.drain_minutes, 2),
                    "bursts_overlap": p.bursts_overlap,
                }
                for p in self.pools
            ],
            "baseline": {
                "node_type": self.baseline.node_type,
                "idle_node_types": list(self.baseline.idle_node_types),
                "eur_per_day": _round(self.baseline.eur_per_day, 6),
                "busy_hours_per_day": _round(self.baseline.busy_hours_per_day, 2),
                "drain_minutes": _round(self.baseline.drain_minutes, 2),
                "keeps_up": self.baseline.keeps_up,
            },
        }


def _round(value: Fraction, digits: int) -> float:
    return round(float(value), digits)


def slowdown(utilization: Fraction | None, sharers: int) -> Fraction:
    """How much longer a job runs when `sharers` jobs' GPU demands add up (first-order: no switch overhead)."""
    if utilization is None:
        return Fraction(1)
    return max(Fraction(1), utilization * sharers)


def split_evenly(total: int, parts: int) -> list[int]:
    """`total` jobs over `parts` bursts, the first bursts taking the remainder."""
    quotient, remainder = divmod(total, parts)
    return [quotient + (1 if i < remainder else 0) for i in range(parts)]


@dataclass(frozen=True)
class QueuedJob:
    """One job waiting in a pool's queue: how long it runs alone, and how much of the GPU it keeps busy."""

    minutes: Fraction
    utilization: Fraction | None


def drain_burst(
    jobs: list[QueuedJob],
    *,
    jobs_per_node: int,
    max_size: int,
    warm_nodes: int,
    mps_replicas: int | None,
    cold_start_minutes: Fraction,
    unneeded_minutes: Fraction,
    delay_after_add_minutes: Fraction,
    gpus_per_node: int = 1,
) -> BurstRun:
    """Drain one pool's burst in waves (see the module docstring); jobs in queue order."""
    if not jobs:
        return BurstRun(0, 0, 0, Fraction(0), Fraction(0))
    per_wave = jobs_per_node * max_size
    nodes = min(max_size, math.ceil(len(jobs) / jobs_per_node))
    start = Fraction(0) if nodes <= warm_nodes else cold_start_minutes
    clock, last_end = start, [Fraction(0)] * nodes
    waves = [jobs[i : i + per_wave] for i in range(0, len(jobs), per_wave)]
    for wave in waves:
        on_nodes = [wave[i : i + jobs_per_node] for i in range(0, len(wave), jobs_per_node)]
        length = max(
            job.minutes * slowdown(job.utilization, mps_replicas or math.ceil(len(node_jobs) / gpus_per_node))
            for node_jobs in on_nodes
            for job in node_jobs
        )
        clock += length
        for index in range(len(on_nodes)):
            last_end[index] = clock
    billed = sum(
        (max(last_end[i] + unneeded_minutes, delay_after_add_minutes) for i in range(warm_nodes, nodes)),
        Fraction(0),
    )
    return BurstRun(len(jobs), nodes, len(waves), clock, billed)


def cost_report(platform: Platform) -> CostReport | None:
    """The day of the spec's workload on the new setup and on the old one; None without a workload."""
    spec = platform.spec
    workload = spec.workload
    if workload is None:
        return None
    loads = {name: load for name, load in sorted(workload.profiles.items()) if name in spec.profiles}
    profiles = tuple(
        ProfileLoad(
            profile=name,
            pool=spec.profiles[name].pool,
            jobs_per_day=load.jobs_per_day,
            minutes_alone=exact(load.minutes_per_job),
            minutes_full_node=exact(load.minutes_per_job)
            * slowdown(_utilization(load), _sharers(platform.pools[spec.profiles[name].pool])),
        )
        for name, load in loads.items()
    )
    pools = tuple(
        _pool_day(platform, workload, pool, {p: loads[p] for p in pool.profiles if p in loads})
        for pool in platform.pools.values()
    )
    return CostReport(workload.batches_per_day, profiles, pools, _baseline(platform, workload, loads))


def _utilization(load: ProfileLoadSpec) -> Fraction | None:
    return exact(load.gpu_utilization) if load.gpu_utilization is not None else None


def _mps_replicas(pool: Pool) -> int | None:
    return pool.sharing.replicas_per_gpu if pool.sharing.caps_compute else None


def _sharers(pool: Pool) -> int:
    """Jobs on one GPU of a full node (MPS: its replicas): what a job's slowdown is computed against."""
    return _mps_replicas(pool) or max(1, math.ceil(pool.jobs_per_node / max(1, pool.node.gpus)))


def _pool_day(platform: Platform, workload: WorkloadSpec, pool: Pool, loads: dict[str, ProfileLoadSpec]) -> PoolDay:
    name, node, jobs_per_node = pool.name, pool.node, pool.jobs_per_node
    autoscaler = platform.spec.cluster.autoscaler
    unneeded = Fraction(duration_seconds(autoscaler.scale_down_unneeded_time), 60)
    splits = {profile: split_evenly(load.jobs_per_day, workload.batches_per_day) for profile, load in loads.items()}
    bursts = tuple(
        drain_burst(
            [
                QueuedJob(exact(load.minutes_per_job), _utilization(load))
                for profile, load in loads.items()
                for _ in range(splits[profile][burst])
            ],
            jobs_per_node=max(1, jobs_per_node),
            max_size=pool.max_size,
            warm_nodes=pool.min_size,
            gpus_per_node=max(1, node.gpus),
            mps_replicas=_mps_replicas(pool),
            cold_start_minutes=Fraction(pool.cold_start_minutes),
            unneeded_minutes=unneeded,
            delay_after_add_minutes=Fraction(duration_seconds(autoscaler.scale_down_delay_after_add), 60),
        )
        for burst in range(workload.batches_per_day)
    )
    scaled_minutes = sum((b.billed_node_minutes for b in bursts), Fraction(0))
    longest_span = max((b.drain_minutes + unneeded for b in bursts if b.jobs), default=Fraction(0))
    return PoolDay(
        pool=name,
        node_type=pool.node_type,
        jobs_per_node=jobs_per_node,
        max_size=pool.max_size,
        eur_per_hour=node.eur_per_hour,
        bursts=bursts,
        scaled_node_hours=scaled_minutes / 60,
        always_on_node_hours=Fraction(24 * pool.min_size),
        bursts_overlap=longest_span * workload.batches_per_day > MINUTES_PER_DAY,
    )


def _baseline(platform: Platform, workload: WorkloadSpec, loads: dict[str, ProfileLoadSpec]) -> Baseline:
    spec = platform.spec
    baseline = workload.baseline
    splits = {profile: split_evenly(load.jobs_per_day, workload.batches_per_day) for profile, load in loads.items()}
    burst_minutes = [
        sum((splits[p][burst] * exact(load.minutes_per_job) for p, load in loads.items()), Fraction(0))
        for burst in range(workload.batches_per_day)
    ]
    price = spec.catalog[baseline.node_type].eur_per_hour
    price += sum((spec.catalog[t].eur_per_hour for t in baseline.idle_node_types), Fraction(0))
    return Baseline(
        node_type=baseline.node_type,
        idle_node_types=baseline.idle_node_types,
        eur_per_day=price * 24,
        busy_hours_per_day=sum(burst_minutes, Fraction(0)) / 60,
        drain_minutes=max(burst_minutes, default=Fraction(0)),
    )


@dataclass(frozen=True)
class PriceRow:
    """A GPU pool's price against a reference node running one job at a time (the old way)."""

    pool: str
    node_type: str
    eur_per_hour: Fraction
    jobs_per_node: int
    reference: str
    reference_eur_per_hour: Fraction

    @property
    def node_ratio(self) -> Fraction:
        """This node's hourly price as a fraction of the reference's."""
        return self.eur_per_hour / self.reference_eur_per_hour

    @property
    def eur_per_job_hour(self) -> Fraction:
        """What one job slot costs per hour when the node is full."""
        return self.eur_per_hour / max(1, self.jobs_per_node)

    @property
    def job_ratio(self) -> Fraction:
        """A job-hour here as a fraction of a job-hour alone on the reference node."""
        return self.eur_per_job_hour / self.reference_eur_per_hour


def price_rows(platform: Platform) -> list[PriceRow]:
    """Each GPU pool against the baseline node type (or, without a workload, the dearest GPU pool's type)."""
    spec = platform.spec
    gpu_pools = [pool for pool in platform.pools.values() if pool.is_gpu]
    if not gpu_pools:
        return []
    if spec.workload is not None:
        reference = spec.workload.baseline.node_type
    else:
        reference = max(gpu_pools, key=lambda p: (p.eur_per_hour, p.node_type)).node_type
    reference_price = spec.catalog[reference].eur_per_hour
    return [
        PriceRow(pool.name, pool.node_type, pool.eur_per_hour, pool.jobs_per_node, reference, reference_price)
        for pool in gpu_pools
    ]
