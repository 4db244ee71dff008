"""Warm capacity as the platform deploys it (pure): per pool with warm windows, when its placeholders go up and
down, as CronJob schedules in the workload's time zone, and what the simulation holds up.

A window `Mon-Fri 08:00-19:00, nodes: 1` on a pool with a 15-min cold start means one node ready from 08:00
to 19:00: the placeholders are scaled to 1 at 07:45 (a cold start early: the pool's p90 boot when it has one, so
the node is ready in 9 boots of 10) and to 0 at 19:00. Consecutive windows change the count through the day
(`08:00-10:00 nodes 1`, `10:00-12:00 nodes 3`, `12:00-19:00 nodes 2`: a ramp before the peak, fewer at lunch):
each rise comes a cold start early, each fall at its time, so where a window's lead overlaps the one before, the
larger count holds. The spans are that step function: at each minute the most nodes of the windows (each a cold
start early) over it, a start before Monday 00:00 the Sunday before's. One CronJob per distinct (time, node
count) at which the count changes, its days in cron's `dow` (0 = Sunday). The simulation reads the same spans
(`week_spans`).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from infra.config.platform import PlatformSpec
from infra.config.pools import POOL_NAME_LABEL
from infra.config.schedule import MINUTES_PER_DAY, MINUTES_PER_WEEK
from infra.model.pools import Pool

PLACEHOLDER_CLASS = "gpu-ci-placeholder"
"""PriorityClass of the placeholder pods (the start of its name: `priority_class_name`)."""
JOB_CLASS = "gpu-ci-job"
"""PriorityClass of the CI job pods of pools with warm windows (the start of the runners' `priority_class_name`)."""


def priority_class_name(base: str, value: int) -> str:
    """The PriorityClass `base` at `value`, named with its value (`gpu-ci-job-1000`, `gpu-ci-placeholder-minus10`).

    Why: the API server refuses a new `value` in place. A class named after its value is a new object when the
    value changes: Pulumi creates it before deleting the old one, so the pods that name a class always find one,
    and `pulumi preview`'s dry run creates a new name instead of updating an object it may not change (Pulumi's
    Kubernetes provider retries an immutable field under another name, but not this refusal)."""
    return f"{base}-{value}" if value >= 0 else f"{base}-minus{-value}"


@dataclass(frozen=True)
class Scale:
    """One CronJob: at `minute` past `hour` on `days` (cron `dow`), scale the placeholders to `replicas`."""

    name: str
    minute: int
    hour: int
    days: tuple[int, ...]
    replicas: int

    @property
    def schedule(self) -> str:
        return f"{self.minute} {self.hour} * * {','.join(str(day) for day in self.days)}"


@dataclass(frozen=True)
class WarmPool:
    """A pool's placeholders: their Deployment and the CronJobs that scale it."""

    pool: str
    deployment: str
    node_selector: dict[str, str]
    spans: tuple[tuple[int, int, int], ...]
    """[start, end, nodes) in minutes from Monday 00:00: the placeholders' hours, each a cold start early."""
    scales: tuple[Scale, ...]
    time_zone: str


def week_spans(pool: Pool) -> tuple[tuple[int, int, int], ...]:
    """The pool's warm windows over the week as a step function: [start, end, nodes) spans, sorted, not
    overlapping, consecutive ones with different counts (see the module docstring)."""
    lead = pool.lead_cold_start_minutes
    pieces: list[tuple[int, int, int]] = []
    for window in pool.spec.warm:
        for start, end in window.intervals():
            if start - lead >= 0:
                pieces.append((start - lead, end, window.nodes))
            else:
                pieces += [(0, end, window.nodes), (MINUTES_PER_WEEK + start - lead, MINUTES_PER_WEEK, window.nodes)]
    return step_spans(pieces)


def step_spans(pieces: Iterable[tuple[int, int, int]]) -> tuple[tuple[int, int, int], ...]:
    """The most nodes over each minute of overlapping [start, end, nodes) pieces, as maximal constant spans."""
    pieces = list(pieces)
    edges = sorted({at for start, end, _ in pieces for at in (start, end)})
    spans: list[tuple[int, int, int]] = []
    for start, end in itertools.pairwise(edges):
        nodes = max((n for first, last, n in pieces if first <= start and end <= last), default=0)
        if not nodes:
            continue
        if spans and spans[-1][1] == start and spans[-1][2] == nodes:
            spans[-1] = (spans[-1][0], end, nodes)
        else:
            spans.append((start, end, nodes))
    return tuple(spans)


def minute_of_week(moment: datetime, time_zone: str) -> int:
    """`moment` as minutes from Monday 00:00 in `time_zone` (the clock the CronJobs and the spans keep)."""
    local = moment.astimezone(ZoneInfo(time_zone))
    return local.weekday() * MINUTES_PER_DAY + local.hour * 60 + local.minute


def replicas_at(pool: WarmPool, minute: int) -> int:
    """The placeholders of the span open at `minute` of the week (0: none): what its Deployment is created with.
    Why: a window already open when `pulumi up` creates the placeholders would warm nothing until its next
    scale-up, since a CronJob only fires at its own minute."""
    return next((nodes for start, end, nodes in pool.spans if start <= minute < end), 0)


def _edges(spans: tuple[tuple[int, int, int], ...]) -> list[tuple[int, int]]:
    """(minute of the week, replicas) at which the placeholders are scaled: where the step function changes, one
    scale each (a span that ends where the next begins is one change, to the next's count), and none at Monday
    00:00 where a span over Sunday midnight goes on with the same count (one span there; a span all week long
    keeps its one scale there)."""
    count: dict[int, int] = {}
    for start, end, nodes in spans:
        count.setdefault(end % MINUTES_PER_WEEK, 0)
        count[start] = nodes
    at_midnight = next((nodes for start, _, nodes in spans if start == 0), 0)
    before_midnight = next((nodes for _, end, nodes in spans if end == MINUTES_PER_WEEK), 0)
    if before_midnight:
        count[0] = at_midnight  # the week's end is Monday 00:00 again: the count goes on, or changes there
    if before_midnight == at_midnight and len(spans) > 1:
        count.pop(0, None)
    return sorted(count.items())


def derive_warm(spec: PlatformSpec, pools: dict[str, Pool]) -> tuple[WarmPool, ...]:
    """The warm pools of the platform, sorted by pool."""
    zone = spec.workload.time_zone if spec.workload is not None else "UTC"
    warm = []
    for name in spec.warm_pools():
        spans = week_spans(pools[name])
        edges: dict[tuple[int, int, int], set[int]] = defaultdict(set)
        for at, replicas in _edges(spans):
            day, minute_of_day = divmod(at, MINUTES_PER_DAY)
            edges[(minute_of_day // 60, minute_of_day % 60, replicas)].add((day + 1) % 7)  # cron: Sunday is 0
        scales = tuple(
            Scale(f"warm-{name}-{index}", minute, hour, tuple(sorted(days)), replicas)
            for index, ((hour, minute, replicas), days) in enumerate(sorted(edges.items()))
        )
        warm.append(
            WarmPool(
                pool=name,
                deployment=f"placeholder-{name}",
                node_selector={POOL_NAME_LABEL: name},
                spans=spans,
                scales=scales,
                time_zone=zone,
            )
        )
    return tuple(warm)
