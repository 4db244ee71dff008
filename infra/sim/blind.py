"""What the merge-request target asks of a platform that cannot see the jobs coming (pure): per pool, the nodes a
lone merge request's pipeline needs ready when it is queued, and those nodes held through the hours such
pipelines may come.

Why: the target's bound (`infra.sim.target_bound`) boots each node a boot before the job that needs it is queued
plus the target; when a boot takes longer than the target, that boot starts before the job exists, which no
autoscaler can do (it adds nodes for Pending pods). A pipeline queued when the pool has no node up then starts in
time only on nodes kept up in advance: `ceil(jobs / slots)` of them (the pipeline's jobs of the pool, the most a
node holds under any sharing setting). Kept up through every minute of the kinds' arrival windows, that is
`nodes x window minutes` a week. It is arithmetic, not a bound: a platform may leave some pipelines to the p95's
allowance, or find nodes still up from earlier jobs; it is the readiness a platform pays to serve a lone merge
request at any minute it may come, the figure the recommendation's warm windows are read against.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from infra.sim.platform_scenario import PlannedJob
from infra.sim.target_bound import BoundPool

if TYPE_CHECKING:
    from infra.model.platform import Platform

WEEK = 7 * 24 * 60


@dataclass(frozen=True)
class BlindPool:
    """One pool's readiness for a lone merge request."""

    pool: BoundPool
    pipeline_jobs: int
    """The most merge-request jobs of one pipeline in the pool."""
    window_minutes: int
    """Minutes of the week a merge-request pipeline of the pool may be queued in (its kinds' windows, merged)."""

    @property
    def nodes(self) -> int:
        """Nodes ready at once for a lone pipeline's jobs: ceil(jobs / slots)."""
        return -(-self.pipeline_jobs // self.pool.slots)

    @property
    def node_minutes(self) -> int:
        return self.nodes * self.window_minutes

    @property
    def eur(self) -> Fraction:
        return self.node_minutes * self.pool.eur_per_hour / 60


def blind_pools(platform: Platform, pools: Sequence[BoundPool], jobs: Iterable[PlannedJob]) -> tuple[BlindPool, ...]:
    """Per pool of `pools` with merge-request jobs in `jobs` (a week of them), its lone pipeline's readiness."""
    sizes: Counter[tuple[str, str]] = Counter()
    for job in jobs:
        if job.job_class == "merge_request":
            sizes[(job.pool or platform.profiles[job.profile].pool, job.pipeline)] += 1
    found = []
    for pool in pools:
        most = max((count for (name, _), count in sizes.items() if name == pool.name), default=0)
        if most:
            found.append(BlindPool(pool, most, window_minutes(_windows(platform, pool.name))))
    return tuple(found)


def _windows(platform: Platform, pool: str) -> list[tuple[int, int]]:
    """The merge-request kinds' [start, end) minutes of the week, for the pool's profiles (a profile of the
    profile-level form: its bursts spread over every day, the whole week)."""
    workload = platform.spec.workload
    spans: list[tuple[int, int]] = []
    for name in platform.pools[pool].profiles:
        load = workload.profiles.get(name) if workload is not None else None
        if load is None:
            continue
        if not load.kinds:
            spans.append((0, WEEK))
            continue
        for kind in load.kinds.values():
            if kind.job_class == "merge_request":
                spans += kind.intervals()
    return spans


def window_minutes(spans: Iterable[tuple[int, int]]) -> int:
    """The minutes the spans cover, overlaps counted once."""
    total, reach = 0, 0
    for first, end in sorted(spans):
        start = max(first, reach)
        if end > start:
            total += end - start
            reach = end
    return total
