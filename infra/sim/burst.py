"""The busiest burst of a simulated week, as a timeline (pure): what the MR note's chart, `simulate --timeline`
and its SVG draw.

The busiest burst is the pipeline of the week (jobs queued together) that took longest from its queueing to
its last job's end: the report's "largest burst". Its timeline runs over that span and holds, per pool its jobs
use, every job attempt that overlaps it (its own first, then the others by queueing: those are what held the
slots and nodes it waited for), at most `MAX_BURST_JOBS`: each attempt's queueing, when a runner took it, when
its pod ran and when it ended; the nodes that booted for it (a cold start: from a cold start before a node's
first pod ran, when that pod had waited for a node) and the warm windows over it. Times are minutes from the
burst's queueing; `start_minute` places it in the week (Monday 00:00 in `workload.time_zone`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from infra.config.schedule import MINUTES_PER_DAY, WEEKDAYS
from infra.model.warm import week_spans
from infra.sim.platform_scenario import PlannedJob
from infra.sim.results import JobResult, SimResult

if TYPE_CHECKING:
    from infra.model.platform import Platform

MAX_BURST_JOBS = 40
"""Job attempts a timeline holds at most (the burst's own first): enough to see who held the slots."""
MAX_BURST_MARKS = 40
"""Cold starts and warm windows a timeline holds at most."""


@dataclass(frozen=True)
class BurstJob:
    """One job attempt on the timeline (minutes from the burst's queueing; None: it never got there)."""

    name: str
    pool: str
    job_class: str
    own: bool
    """Whether it belongs to the burst's pipeline (else it overlapped it on the same pool)."""
    attempt: int
    queued: Fraction
    taken: Fraction | None
    started: Fraction | None
    finished: Fraction
    outcome: str

    def phases(self) -> tuple[tuple[Fraction, Fraction, str], ...]:
        """(start, end, phase) of its waits and its run, back to back: `slot` (queued until a runner took it),
        `node` (its pod Pending), then `run` or `failed`. A phase it never reached lasts no time."""
        taken = self.taken if self.taken is not None else self.finished
        started = self.started if self.started is not None else (self.finished if self.taken is not None else taken)
        return (
            (self.queued, taken, "slot"),
            (taken, started, "node"),
            (started, self.finished, "failed" if self.outcome == "failed" else "run"),
        )


@dataclass(frozen=True)
class ColdStart:
    """A node booting for a pod that waited for it."""

    pool: str
    node: str
    boot: Fraction
    ready: Fraction


@dataclass(frozen=True)
class WarmSpan:
    """A warm window's nodes held up over part of the timeline."""

    pool: str
    start: Fraction
    end: Fraction
    nodes: int


@dataclass(frozen=True)
class BurstTimeline:
    """The busiest burst's timeline (see the module docstring)."""

    pipeline: str
    start_minute: Fraction
    minutes: Fraction
    jobs: tuple[BurstJob, ...]
    cold_starts: tuple[ColdStart, ...]
    warm: tuple[WarmSpan, ...]
    omitted: int = 0
    """Overlapping job attempts left out past MAX_BURST_JOBS."""

    @property
    def clock(self) -> str:
        """`Wed 13:05`: when the burst was queued, in the workload's week."""
        day, minute = divmod(int(self.start_minute), MINUTES_PER_DAY)
        return f"{WEEKDAYS[day % 7].capitalize()} {minute // 60:02d}:{minute % 60:02d}"

    @property
    def pools(self) -> list[str]:
        return sorted({job.pool for job in self.jobs})

    def as_json(self) -> dict[str, object]:
        return {
            "pipeline": self.pipeline,
            "start_minute": _round(self.start_minute),
            "clock": self.clock,
            "minutes": _round(self.minutes),
            "omitted": self.omitted,
            "jobs": [
                {
                    "name": job.name,
                    "pool": job.pool,
                    "class": job.job_class,
                    "own": job.own,
                    "attempt": job.attempt,
                    "queued": _round(job.queued),
                    "taken": None if job.taken is None else _round(job.taken),
                    "started": None if job.started is None else _round(job.started),
                    "finished": _round(job.finished),
                    "outcome": job.outcome,
                }
                for job in self.jobs
            ],
            "cold_starts": [
                {"pool": c.pool, "node": c.node, "boot": _round(c.boot), "ready": _round(c.ready)}
                for c in self.cold_starts
            ],
            "warm": [
                {"pool": w.pool, "start": _round(w.start), "end": _round(w.end), "nodes": w.nodes} for w in self.warm
            ],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BurstTimeline:
        """A timeline from `as_json`'s shape (already validated: `infra.review.schema.BurstFigures`)."""

        def number(value: Any) -> Fraction:
            return Fraction(str(value))

        def maybe(value: Any) -> Fraction | None:
            return None if value is None else number(value)

        return cls(
            pipeline=str(data["pipeline"]),
            start_minute=number(data["start_minute"]),
            minutes=number(data["minutes"]),
            omitted=int(data.get("omitted") or 0),
            jobs=tuple(
                BurstJob(
                    name=str(job["name"]),
                    pool=str(job["pool"]),
                    job_class=str(job["class"]),
                    own=bool(job.get("own")),
                    attempt=int(job.get("attempt") or 0),
                    queued=number(job["queued"]),
                    taken=maybe(job.get("taken")),
                    started=maybe(job.get("started")),
                    finished=number(job["finished"]),
                    outcome=str(job["outcome"]),
                )
                for job in data.get("jobs") or ()
            ),
            cold_starts=tuple(
                ColdStart(str(c["pool"]), str(c["node"]), number(c["boot"]), number(c["ready"]))
                for c in data.get("cold_starts") or ()
            ),
            warm=tuple(
                WarmSpan(str(w["pool"]), number(w["start"]), number(w["end"]), int(w["nodes"]))
                for w in data.get("warm") or ()
            ),
        )


def busiest_burst(platform: Platform, jobs: Sequence[PlannedJob], result: SimResult) -> BurstTimeline | None:
    """The timeline of the week's busiest burst (None: no job)."""
    if not jobs:
        return None
    planned = {final.first_id: job for job, final in zip(jobs, result.finals, strict=True)}
    ends: dict[tuple[str, Fraction], Fraction] = {}
    for attempt in result.jobs:
        job = planned[attempt.first_id]
        key = (job.pipeline, job.created_minute)
        ends[key] = max(ends.get(key, attempt.finished), attempt.finished)
    (pipeline, start), end = min(ends.items(), key=lambda item: (-(item[1] - item[0][1]), item[0][1], item[0][0]))
    own = {first for first, job in planned.items() if (job.pipeline, job.created_minute) == (pipeline, start)}
    pools = {attempt.pool for attempt in result.jobs if attempt.first_id in own}
    overlapping = [
        attempt
        for attempt in result.jobs
        if attempt.pool in pools and attempt.created < end and attempt.finished > start
    ]
    overlapping.sort(key=lambda a: (a.first_id not in own, a.created, a.id))
    shown = overlapping[:MAX_BURST_JOBS]
    return BurstTimeline(
        pipeline=pipeline,
        start_minute=start,
        minutes=end - start,
        jobs=tuple(_job(attempt, planned[attempt.first_id], attempt.first_id in own, start) for attempt in shown),
        cold_starts=_cold_starts(platform, result, pools, start, end),
        warm=_warm(platform, pools, start, end),
        omitted=len(overlapping) - len(shown),
    )


def _job(attempt: JobResult, job: PlannedJob, own: bool, start: Fraction) -> BurstJob:
    return BurstJob(
        name=attempt.name,
        pool=attempt.pool,
        job_class=job.job_class,
        own=own,
        attempt=attempt.attempt,
        queued=max(Fraction(0), attempt.created - start),
        taken=None if attempt.taken is None else max(Fraction(0), attempt.taken - start),
        started=None if attempt.started is None else max(Fraction(0), attempt.started - start),
        finished=max(Fraction(0), attempt.finished - start),
        outcome=attempt.outcome,
    )


def _cold_starts(
    platform: Platform, result: SimResult, pools: set[str], start: Fraction, end: Fraction
) -> tuple[ColdStart, ...]:
    """Nodes whose first pod waited for them, booting within the timeline: a cold start before that pod ran."""
    first: dict[str, tuple[Fraction, JobResult]] = {}
    for attempt in result.jobs:
        if attempt.node is not None and attempt.started is not None and attempt.pool in pools:
            known = first.get(attempt.node)
            if known is None or attempt.started < known[0]:
                first[attempt.node] = (attempt.started, attempt)
    created = {name: at for pool in result.pools for name, at, _ in pool.boots}  # each node's boot is its own draw
    found = []
    for node, (ready, attempt) in sorted(first.items(), key=lambda item: (item[1][0], item[0])):
        boot = created.get(node, ready - platform.pools[attempt.pool].cold_start_minutes)
        if attempt.node_wait > 0 and boot < end and ready > start:
            found.append(ColdStart(attempt.pool, node, max(Fraction(0), boot - start), ready - start))
    return tuple(found[:MAX_BURST_MARKS])


def _warm(platform: Platform, pools: set[str], start: Fraction, end: Fraction) -> tuple[WarmSpan, ...]:
    found = [
        WarmSpan(pool, max(Fraction(0), span_start - start), min(end, Fraction(span_end)) - start, nodes)
        for pool in sorted(pools)
        for span_start, span_end, nodes in week_spans(platform.pools[pool])
        if span_start < end and span_end > start
    ]
    return tuple(found[:MAX_BURST_MARKS])


def _round(value: Fraction) -> float:
    return round(float(value), 2)
