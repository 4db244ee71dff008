"""The levers `recommend` searches, per GPU pool (pure): what each can be set to, and the spec change it is.

A pool's levers are the spec's own (`platform.pools.<p>`): `max_size`, `gpu_sharing.replicas` (on a pool that
shares its GPU), `merge_request_slots` and `warm`. Their ranges come from the spec and the workload:
- `max_size`: from 1 (or `min_size`) to what the week's busiest instant could use (`peak_jobs`: the most of the
  pool's jobs that would run at once if each started when queued, as slow as on a full node of those
  replicas), one node more than that, at most `MAX_SEARCH_NODES`; today's value is always among them;
- replicas: every value of the pool's sharing strategy (time-slicing 2-16, MPS 2-48) that the spec's fit checks
  accept on this node (`derive` refuses the others: the search never proposes them);
- held slots: 0, and when the pool runs both classes of job, 1, a node's slots and the largest merge-request
  burst of the pool (jobs queued at one instant), each below the candidate's slots;
- warm windows: none, or the hours the pool's merge-request kinds arrive in (`days`/`from`/`to` of each kind:
  each alone and all together), with 1 up to `max_size` nodes; today's windows as they are.
A candidate is a `Levers`; `changes` says it as dotted keys under `platform` against today's, which is what
`recommend` prints, what `infra.offline.stack_edit` writes, and what `apply` derives.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from infra.config.base import duration_seconds
from infra.config.pools import MAX_MPS_REPLICAS, MAX_TIME_SLICING_REPLICAS
from infra.config.schedule import WindowSpec
from infra.model.platform import Platform
from infra.sim.platform_scenario import PlannedJob

MAX_SEARCH_NODES = 12
"""The most nodes per pool the search tries (a larger `max_size` today is kept as a candidate)."""

Window = tuple[str, str, str, int]
"""A warm window as the spec writes it: (days, from, to, nodes)."""
Change = tuple[tuple[str, ...], object]
"""A spec change: the key path under `platform` and its new value (plain YAML data)."""


@dataclass(frozen=True, order=True)
class Levers:
    """One pool's settings of the levers."""

    max_size: int
    replicas: int | None
    """The sharing replicas per GPU (None: the pool does not share its GPU; not searched)."""
    merge_request_slots: int
    warm: tuple[Window, ...]
    scale_down_seconds: int = 0
    """The cluster's `autoscaler.scale_down_unneeded_time` (one for every pool: a combination's pools agree)."""

    @property
    def warm_nodes(self) -> int:
        return max((window[3] for window in self.warm), default=0)

    def describe(self) -> str:
        """`max 3, x5, 2 held, warm 1 (Mon-Fri 09:00-18:00)`: a row of the front."""
        parts = [f"max {self.max_size}"]
        if self.replicas is not None:
            parts.append(f"x{self.replicas}")
        if self.merge_request_slots:
            parts.append(f"{self.merge_request_slots} held")
        if self.warm:
            parts.append(f"warm {warm_text(self.warm)}")
        return ", ".join(parts)


def warm_text(warm: tuple[Window, ...]) -> str:
    """`3 (Mon-Fri 09:00-18:00)`, or with counts that change: `2-3 (Mon-Fri 09:00-10:00 2, 10:00-18:00 3)`."""
    counts = sorted({nodes for *_, nodes in warm})
    if len(counts) == 1:
        return f"{counts[0]} (" + ", ".join(f"{days} {start}-{end}" for days, start, end, _ in warm) + ")"
    shown, last_days = [], None
    for days, start, end, nodes in warm:
        shown.append(f"{'' if days == last_days else days + ' '}{start}-{end} {nodes}")
        last_days = days
    return f"{counts[0]}-{counts[-1]} ({', '.join(shown)})"


@dataclass(frozen=True)
class PoolSpace:
    """A GPU pool's levers: today's, the values each may take, and the pool's jobs of the week."""

    pool: str
    today: Levers
    sizes: Mapping[int | None, tuple[int, ...]]
    """Per replica count the spec accepts, the max_size values to try."""
    held: Mapping[int | None, tuple[int, ...]]
    """Per replica count, the held slots to try (below a candidate's slots: `candidates` keeps those)."""
    warm_hours: tuple[tuple[tuple[str, str, str], ...], ...]
    """Warm window sets to try, each with 1 to max_size nodes (besides none and today's)."""
    jobs: tuple[PlannedJob, ...]
    jobs_per_node: Mapping[int | None, int]

    def candidates(self) -> list[Levers]:
        """Every combination, today's first; held slots below the pool's slots are checked by the search."""
        found = {self.today}
        ordered = [self.today]
        for replicas, sizes in self.sizes.items():
            for max_size in sizes:
                for warm in self._warm_options(max_size):
                    for held in self.held[replicas]:
                        if held and held >= max_size * self.jobs_per_node[replicas]:
                            continue
                        levers = Levers(max_size, replicas, held, warm, self.today.scale_down_seconds)
                        if levers not in found:
                            found.add(levers)
                            ordered.append(levers)
        return ordered

    def _warm_options(self, max_size: int) -> list[tuple[Window, ...]]:
        options: list[tuple[Window, ...]] = [()]
        options += [
            tuple((*hours, nodes) for hours in windows)
            for windows in self.warm_hours
            for nodes in range(1, max_size + 1)
        ]
        if self.today.warm and self.today.warm_nodes <= max_size and self.today.warm not in options:
            options.append(self.today.warm)
        return options


def today_levers(platform: Platform, pool: str) -> Levers:
    spec = platform.pools[pool].spec
    replicas = spec.gpu_sharing.replicas_per_gpu if spec.gpu_sharing.strategy != "none" else None
    warm = tuple((w.days, w.start, w.end, w.nodes) for w in spec.warm)
    scale_down = duration_seconds(platform.spec.cluster.autoscaler.scale_down_unneeded_time)
    return Levers(spec.max_size, replicas, spec.merge_request_slots, warm, scale_down)


def pool_space(
    platform: Platform,
    pool: str,
    jobs: Sequence[PlannedJob],
    jobs_per_node: Mapping[int | None, int],
    *,
    keep_sizes: bool = False,
) -> PoolSpace:
    """The lever ranges of `pool` (see the module docstring); `jobs_per_node` per replica count the fit checks
    accept; with `keep_sizes`, today's max_size only."""
    derived = platform.pools[pool]
    today = today_levers(platform, pool)
    own = tuple(job for job in jobs if (job.pool or platform.profiles[job.profile].pool) == pool)
    first = max(1, derived.min_size)
    sizes = {}
    for replicas, per_node in jobs_per_node.items():
        peak = peak_jobs(own, full_node_slowdown(platform, pool, per_node))
        most = min(MAX_SEARCH_NODES, math.ceil(peak / max(1, per_node)) + 1)
        sizes[replicas] = (
            (today.max_size,) if keep_sizes else tuple(sorted({*range(first, max(first, most) + 1), today.max_size}))
        )
    both = {job.job_class for job in own} == {"merge_request", "batch"}
    burst = largest_merge_request_burst(own)
    held = {
        replicas: tuple(sorted({0, today.merge_request_slots, *((1, per_node, burst) if both else ())}))
        for replicas, per_node in jobs_per_node.items()
    }
    return PoolSpace(
        pool=pool,
        today=today,
        sizes=sizes,
        held=held,
        warm_hours=merge_request_hours(platform, pool),
        jobs=own,
        jobs_per_node=dict(jobs_per_node),
    )


def replica_values(platform: Platform, pool: str) -> tuple[int | None, ...]:
    """Every replica count of the pool's sharing strategy (the search keeps those the spec accepts)."""
    sharing = platform.pools[pool].spec.gpu_sharing
    if sharing.strategy == "none":
        return (None,)
    most = MAX_MPS_REPLICAS if sharing.strategy == "mps" else MAX_TIME_SLICING_REPLICAS
    return tuple(range(2, most + 1))


def merge_request_hours(platform: Platform, pool: str) -> tuple[tuple[tuple[str, str, str], ...], ...]:
    """The hours the pool's merge-request kinds arrive in: each distinct window alone, and all of them."""
    workload = platform.spec.workload
    if workload is None:
        return ()
    windows: list[tuple[str, str, str]] = []
    for name in platform.pools[pool].profiles:
        load = workload.profiles.get(name)
        if load is None:
            continue
        kinds: list[WindowSpec] = (
            [kind for kind in load.kinds.values() if kind.job_class == "merge_request"]
            if load.kinds
            else [WindowSpec()]  # the profile-level form: bursts spread over every day
        )
        for kind in kinds:
            hours = (kind.days, kind.start, kind.end)
            if hours not in windows:
                windows.append(hours)
    options: list[tuple[tuple[str, str, str], ...]] = [(hours,) for hours in windows]
    if len(windows) > 1:
        options.append(tuple(windows))
    return tuple(options)


def peak_jobs(jobs: Sequence[PlannedJob], slowdown: Fraction) -> int:
    """The most jobs that would run at once if each started when queued and ran `slowdown` times its length."""
    edges = sorted(
        edge for job in jobs for edge in ((job.created_minute, 1), (job.created_minute + job.minutes * slowdown, -1))
    )
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most


def largest_merge_request_burst(jobs: Sequence[PlannedJob]) -> int:
    """The most merge-request jobs queued at one instant (one merge request's pipeline, or several)."""
    counts: dict[Fraction, int] = {}
    for job in jobs:
        if job.job_class == "merge_request":
            counts[job.created_minute] = counts.get(job.created_minute, 0) + 1
    return max(counts.values(), default=0)


def full_node_slowdown(platform: Platform, pool: str, jobs_per_node: int) -> Fraction:
    """How much slower than alone a job of the pool runs on a full node (time-slicing: u x jobs per GPU; MPS: u
    x replicas), the slowest of its profiles."""
    workload = platform.spec.workload
    derived = platform.pools[pool]
    sharers = -(-jobs_per_node // max(1, derived.node.gpus))
    utilizations = [
        Fraction(str(load.gpu_utilization))
        for name in derived.profiles
        if workload is not None and (load := workload.profiles.get(name)) is not None and load.gpu_utilization
    ]
    return max([Fraction(1), *(u * sharers for u in utilizations)])


def changes(pool: str, today: Levers, levers: Levers) -> list[Change]:
    """The spec changes that turn today's levers of `pool` into `levers`, as dotted keys under `platform`."""
    found: list[Change] = []
    base = ("pools", pool)
    if levers.max_size != today.max_size:
        found.append(((*base, "max_size"), levers.max_size))
    if levers.replicas != today.replicas and levers.replicas is not None:
        found.append(((*base, "gpu_sharing", "replicas"), levers.replicas))
    if levers.merge_request_slots != today.merge_request_slots:
        found.append(((*base, "merge_request_slots"), levers.merge_request_slots))
    if levers.warm != today.warm:
        found.append(((*base, "warm"), warm_value(levers.warm)))
    if levers.scale_down_seconds != today.scale_down_seconds:
        found.append((SCALE_DOWN, duration_text(levers.scale_down_seconds)))
    return found


SCALE_DOWN = ("cluster", "autoscaler", "scale_down_unneeded_time")
"""The one cluster-wide lever: how long an empty node stays before the autoscaler removes it."""


def duration_text(seconds: int) -> str:
    """A Duration as the spec writes it: `5m`, `90s`."""
    return f"{seconds // 60}m" if seconds % 60 == 0 else f"{seconds}s"


def warm_value(warm: tuple[Window, ...]) -> list[dict[str, object]]:
    """Warm windows as the spec's YAML holds them."""
    return [{"days": days, "from": start, "to": end, "nodes": nodes} for days, start, end, nodes in warm]


def apply(raw: Any, found: Iterable[Change]) -> Any:
    """A copy of the `platform` config object with the changes set (maps created where missing)."""
    changed = copy.deepcopy(raw)
    for path, value in found:
        node = changed
        for step in path[:-1]:
            if not isinstance(node.get(step), dict):
                node[step] = {}
            node = node[step]
        node[path[-1]] = copy.deepcopy(value)
    return changed


def dotted(path: tuple[str, ...]) -> str:
    return ".".join(path)
