"""Warm capacity as the platform deploys it (pure): per pool with warm windows, when its placeholders go up and
down, as CronJob schedules in the workload's time zone, and what the simulation holds up.

A window `Mon-Fri 08:00-19:00, nodes: 1` on a pool with a 15-min cold start means one node ready from 08:00
to 19:00: the placeholders are scaled to 1 at 07:45 (a cold start early: the pool's p90 boot when it has one, so
the node is ready in 9 boots of 10) and to 0 at 19:00. Windows that
then touch or overlap (08:00-12:00 and 12:00-19:00) are one span (the larger node count holds), and a
start that falls before Monday 00:00 is the Sunday before's. One CronJob per distinct (time, node count)
of the week, its days in cron's `dow` (0 = Sunday). The simulation reads the same spans (`week_spans`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from infra.config.platform import PlatformSpec
from infra.config.pools import POOL_NAME_LABEL
from infra.config.schedule import MINUTES_PER_DAY, MINUTES_PER_WEEK
from infra.model.pools import Pool

PLACEHOLDER_CLASS = "gpu-ci-placeholder"
"""PriorityClass of the placeholder pods."""
JOB_CLASS = "gpu-ci-job"
"""PriorityClass of the CI job pods of pools with warm windows (the runners' `priority_class_name`)."""


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
    """The pool's warm windows over the week, each started a cold start early (see the module docstring)."""
    lead = pool.lead_cold_start_minutes
    pieces: list[tuple[int, int, int]] = []
    for window in pool.spec.warm:
        for start, end in window.intervals():
            if start - lead >= 0:
                pieces.append((start - lead, end, window.nodes))
            else:
                pieces += [(0, end, window.nodes), (MINUTES_PER_WEEK + start - lead, MINUTES_PER_WEEK, window.nodes)]
    merged: list[tuple[int, int, int]] = []
    for start, end, nodes in sorted(pieces):
        if merged and start <= merged[-1][1]:
            first, last, most = merged[-1]
            merged[-1] = (first, max(last, end), max(most, nodes))
        else:
            merged.append((start, end, nodes))
    return tuple(merged)


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
    """(minute of the week, replicas) at which the placeholders are scaled; a span that runs over Sunday
    midnight into the next Monday's is one span there (no scale-down and up again at 00:00)."""
    edges = [edge for start, end, nodes in spans for edge in ((start, nodes), (end % MINUTES_PER_WEEK, 0))]
    if len(spans) > 1 and spans[0][0] == 0 and spans[-1][1] == MINUTES_PER_WEEK and spans[0][2] == spans[-1][2]:
        edges.remove((0, spans[0][2]))
        edges.remove((0, 0))
    elif spans and spans[0][0] == 0 and spans[-1][1] == MINUTES_PER_WEEK:
        # A span that ends at the week's end meets one that starts on Monday 00:00 (the same span, all week long):
        # one CronJob there, to the first span's count, not two at the same minute racing (to 0 and to N).
        edges.remove((0, 0))
    return edges


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
