"""The price of the merge-request target on a platform's weeks (pure): each week's bound (`infra.sim.target_bound`)
from the platform's pools and workload, their median, and a spec's EUR/week against it.

The bound's pools are the platform's GPU pools with a runner, each at the most any of the search's settings allows
(so that no spec of those pools, node types, prices and sharing strategy can beat it): the most jobs a node holds
(its CPU and memory by the jobs' requests, its GPUs x the strategy's most replicas), the throughput of such a node
(`infra.sim.floors.node_throughput`, at the pool's least `gpu_utilization`), the slowest a full GPU makes a job
(at the largest), and the pool's fastest boot. The other pools' always-on nodes are billed as they are; a GPU
pool's `min_size` is not (a clairvoyant platform needs none).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from infra.config.pools import MAX_MPS_REPLICAS, MAX_TIME_SLICING_REPLICAS
from infra.config.schedule import MINUTES_PER_WEEK
from infra.sim.floors import node_throughput
from infra.sim.memo import ByIdentity, Memo
from infra.sim.platform_scenario import PlannedJob, sim_pools
from infra.sim.target_bound import BoundJob, BoundPool, WeekFloor, median, week_floor
from infra.sim.verdict import allowed_over, exact_target

if TYPE_CHECKING:
    from infra.model.platform import Platform


def bound_pools(
    platform: Platform, *, late_boot: Fraction = Fraction(0), cold_start_minutes: Fraction | None = None
) -> tuple[BoundPool, ...]:
    """The platform's GPU pools with a runner, at the most their settings allow (see the module docstring); every
    boot `late_boot` later, or `cold_start_minutes` long (the what-if knobs of the weeks)."""
    boots = {
        pool.name: (pool.boots.fastest if cold_start_minutes is None else cold_start_minutes) + late_boot
        for pool in sim_pools(platform)
    }
    return tuple(_bound_pool(platform, name, boot) for name, boot in boots.items())


def _bound_pool(platform: Platform, name: str, boot: Fraction) -> BoundPool:
    pool = platform.pools[name]
    node = pool.node
    gpus = max(1, node.gpus)
    strategy = pool.sharing.strategy
    most_replicas = {"none": 1, "time-slicing": MAX_TIME_SLICING_REPLICAS, "mps": MAX_MPS_REPLICAS}[strategy]
    slots = gpus * most_replicas
    for profile in pool.profiles:
        spec = platform.spec.profiles[profile]
        slots = min(
            slots,
            node.allocatable_millicores // spec.cpu_request.millicores,
            node.allocatable_memory_bytes // spec.memory_request.bytes,
        )
    slots = max(1, slots)
    utilizations = _utilizations(platform, name)
    least = None if None in utilizations or not utilizations else min(u for u in utilizations if u is not None)
    largest = max((u for u in utilizations if u is not None), default=None)
    per_gpu = MAX_MPS_REPLICAS if strategy == "mps" else min(-(-slots // gpus), most_replicas)
    stretch = Fraction(1) if largest is None or strategy == "none" else max(Fraction(1), largest * per_gpu)
    throughput = Fraction(gpus) if strategy == "none" else node_throughput(slots, gpus, least)
    return BoundPool(name, pool.eur_per_hour, boot, slots, throughput, stretch)


def _utilizations(platform: Platform, pool: str) -> list[Fraction | None]:
    workload = platform.spec.workload
    found: list[Fraction | None] = []
    for name in platform.pools[pool].profiles:
        load = workload.profiles.get(name) if workload is not None else None
        found.append(None if load is None or load.gpu_utilization is None else Fraction(str(load.gpu_utilization)))
    return found


def fixed_eur(platform: Platform, pools: Sequence[BoundPool]) -> Fraction:
    """What the pools outside the bound bill a week: their always-on nodes."""
    names = {pool.name for pool in pools}
    return sum(
        (p.eur_per_hour * p.min_size * MINUTES_PER_WEEK / 60 for p in platform.pools.values() if p.name not in names),
        Fraction(0),
    )


def week_bound(
    platform: Platform,
    jobs: Sequence[PlannedJob],
    pools: Sequence[BoundPool] | None = None,
    *,
    slower: Fraction = Fraction(1),
) -> WeekFloor:
    """The bound of one week of `jobs` (each `slower` than estimated) on `platform` (its target:
    `slo.merge_request_wait_minutes`)."""
    target = platform.spec.slo.merge_request_wait_minutes
    assert target is not None, "the bound is the price of the target: the spec sets none"
    found = bound_pools(platform) if pools is None else pools
    # a week of `shared_week_jobs` is one tuple from plan to plan: known by it, its jobs are not placed again
    head = (
        tuple(found),
        exact_target(target),
        fixed_eur(platform, found),
        slower,
        tuple((name, profile.pool) for name, profile in platform.profiles.items()),
    )
    week = jobs if isinstance(jobs, tuple) else None
    if week is not None and (known := _FLOORS_BY_JOBS.get(week, head)) is not None:
        return known
    placed = [
        (job.pool or platform.profiles[job.profile].pool, BoundJob(job.created_minute, job.minutes * slower, _mr(job)))
        for job in jobs
    ]
    requests = sum(1 for _, job in placed if job.merge_request)
    pools_key, target_key, fixed = head[:3]
    key = (pools_key, tuple(placed), target_key, allowed_over(requests), fixed)
    floor = _FLOORS.get(key)
    if floor is None:
        floor = _FLOORS.keep(key, week_floor(pools_key, key[1], target_key, allowed_over=key[3], fixed_eur=fixed))
    if week is not None:
        _FLOORS_BY_JOBS.keep(week, floor, head)
    return floor


_FLOORS: Memo[tuple[object, ...], WeekFloor] = Memo(256)
"""`week_bound`'s bounds by what they are worked out from (frozen, of one type each: the platform's pools as the
bound sees them, the week's jobs, the target, the p95's allowance, the fixed pools' cost): a plan bounds its 20
weeks, and the plans of specs alike and their searches bound the same weeks again."""
_FLOORS_BY_JOBS: ByIdentity[tuple[PlannedJob, ...], WeekFloor] = ByIdentity(256)
"""The same by the week's jobs tuple itself and the rest of the key, with the profiles' pools and the speed the
jobs are placed by."""


def _mr(job: PlannedJob) -> bool:
    return job.job_class == "merge_request"


@dataclass(frozen=True)
class TargetCost:
    """The target's bound over the weeks, and a spec's EUR/week against it."""

    bounds: tuple[Fraction, ...]
    """Each week's bound (EUR), in week order."""
    strict: tuple[Fraction, ...]
    """Each week's bound with every merge-request job started within the target (none let off by the p95)."""
    forced_node_minutes: tuple[Fraction, ...]
    """Each week's node-minutes the target forces up (boots, and nodes ready for merge-request jobs)."""
    boots: tuple[int, ...]
    """Each week's node starts the target forces."""
    by_pool: tuple[tuple[str, tuple[Fraction, ...], tuple[int, ...]], ...] = ()
    """Per pool: its name, each week's node-minutes the target forces up and its node starts."""

    @property
    def median(self) -> Fraction:
        return median(self.bounds)

    @property
    def strict_median(self) -> Fraction:
        return median(self.strict)

    @property
    def forced_median(self) -> Fraction:
        """Node-minutes forced up, the weeks' median."""
        return median(self.forced_node_minutes)

    @property
    def boots_median(self) -> Fraction:
        return median([Fraction(count) for count in self.boots])

    def pool_forced(self) -> list[tuple[str, Fraction, Fraction]]:
        """Per pool: node-minutes the target forces up and node starts, the weeks' medians."""
        return [
            (name, median(minutes), median([Fraction(count) for count in boots]))
            for name, minutes, boots in self.by_pool
        ]

    def ratio(self, eur_per_week: Fraction) -> Fraction:
        """A spec's EUR/week over the bound's median."""
        return eur_per_week / self.median if self.median else Fraction(0)

    def as_json(self, eur_per_week: Fraction | None = None) -> dict[str, object]:
        """JSON-ready (EUR to 1/10000 of a cent); `ratio`: `eur_per_week` over the median."""
        found: dict[str, object] = {
            "eur_per_week_median": round(float(self.median), 6),
            "eur_per_week_min": round(float(min(self.bounds)), 6),
            "eur_per_week_max": round(float(max(self.bounds)), 6),
            "every_job_eur_per_week_median": round(float(self.strict_median), 6),
            "forced_node_hours_median": round(float(self.forced_median) / 60, 2),
            "forced_boots_median": float(self.boots_median),
        }
        if eur_per_week is not None:
            found["ratio"] = round(float(self.ratio(eur_per_week)), 4)
        return found


def target_cost(floors: Sequence[WeekFloor]) -> TargetCost:
    """The weeks' bounds as one figure."""
    return TargetCost(
        bounds=tuple(floor.eur for floor in floors),
        strict=tuple(floor.strict_eur for floor in floors),
        forced_node_minutes=tuple(floor.forced_minutes for floor in floors),
        boots=tuple(floor.boots for floor in floors),
        by_pool=tuple(
            (
                pool.pool.name,
                tuple(floor.pool(pool.pool.name).forced_minutes for floor in floors),
                tuple(floor.pool(pool.pool.name).boots for floor in floors),
            )
            for pool in floors[0].strict
        )
        if floors
        else (),
    )
