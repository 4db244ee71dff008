"""The workload measured from GitLab jobs: per profile and kind, jobs, durations, queueing, arrivals (pure).

Input is the jobs of GitLab's REST API (`GET /projects/:id/jobs`) as `job_entries` checked them; output is a
tally per profile and per (kind, class) of its jobs, which `figures` turns into `platform.workload`
(`infra/config/workload.py`) and `report` into what a platform engineer reads. Durations are minutes rounded to
0.1; percentiles are nearest-rank, so every figure is one some job actually had.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from infra.config.workload import JobClass
from infra.workload.job_entries import Job
from infra.workload.kinds import job_class, kind_of, minute_of_day, weekday
from infra.workload.mapping import Routing, profile_of
from infra.workload.traces import Prepare

NOT_TRAINING = "not a training job"
RUNNER_SYSTEM_FAILURE = "runner_system_failure"
FINISHED = frozenset({"success", "failed", "canceled"})
"""Job statuses that say something about the load; `skipped`, `manual` and `created` never ran."""


def percentile(values: Iterable[float], pct: int) -> float | None:
    """Nearest-rank percentile: the smallest value with at least `pct` % of the values at or below it."""
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[max(1, math.ceil(pct / 100 * len(ordered))) - 1]


def minutes(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds / 60, 1)


@dataclass
class Tally:
    """Jobs of the window counted together (a profile's, a kind's, or the other jobs)."""

    name: str
    jobs: int = 0
    """Jobs a runner took (started): each held a slot of the pool."""
    durations: list[float] = field(default_factory=list)
    """Seconds, of the successful jobs: what `minutes_per_job` means (a failed job stops early)."""
    queued: list[float] = field(default_factory=list)
    failures: Counter[str] = field(default_factory=Counter)
    pipelines: set[int] = field(default_factory=set)
    with_prepare: int = 0
    """Of `durations`, those from which the job's prepare (its trace told it) was taken off."""

    def per_day(self, days: float) -> float:
        return self.jobs / days

    def duration_minutes(self, pct: int) -> float | None:
        return minutes(percentile(self.durations, pct))

    def queued_minutes(self, pct: int) -> float | None:
        return minutes(percentile(self.queued, pct))

    def failed(self, job: Job) -> None:
        self.failures[job.failure_reason or "unknown_failure"] += 1

    def ran(self, job: Job, prepare: Prepare | None = None) -> None:
        self.jobs += 1
        if job.pipeline_id is not None:
            self.pipelines.add(job.pipeline_id)
        if job.queued_duration is not None:
            self.queued.append(job.queued_duration)
        if job.status == "success" and job.duration is not None:
            self.durations.append(run_seconds(job, prepare))
            self.with_prepare += prepare is not None


@dataclass
class KindTally(Tally):
    """One kind of a profile's jobs, of one class (None: its pipeline's source is unknown)."""

    job_class: JobClass | None = None
    arrivals: list[int] = field(default_factory=list)
    """Minute of the day each job that ran was created, in the workload's time zone."""
    weekdays: Counter[int] = field(default_factory=Counter)
    """Jobs that ran, by weekday of creation (0 = Monday), in the workload's time zone."""

    def arrived(self, job: Job, zone: tzinfo) -> None:
        self.arrivals.append(minute_of_day(job.created_at, zone))
        self.weekdays[weekday(job.created_at, zone)] += 1

    def absorb(self, other: KindTally) -> None:
        """Count `other`'s jobs as this kind's (a class folded into another)."""
        self.jobs += other.jobs
        self.durations += other.durations
        self.with_prepare += other.with_prepare
        self.queued += other.queued
        self.failures.update(other.failures)
        self.pipelines |= other.pipelines
        self.arrivals += other.arrivals
        self.weekdays.update(other.weekdays)


@dataclass
class ProfileFigures(Tally):
    """One profile's jobs in the window, and the same jobs by kind and class."""

    kinds: dict[tuple[str, JobClass | None], KindTally] = field(default_factory=dict)


def run_seconds(job: Job, prepare: Prepare | None) -> float:
    """How long a job ran: GitLab's `duration` (from the runner picking it) less the wait for its pod, where its
    trace told it; at least a second."""
    assert job.duration is not None
    return max(1.0, job.duration - prepare.seconds) if prepare is not None else job.duration


@dataclass(frozen=True)
class RanJob:
    """A training job a runner took, as the waits and the replay read it."""

    id: int
    profile: str
    pool: str
    kind: str
    job_class: JobClass | None
    created_at: datetime
    queued: float | None
    """GitLab's `queued_duration`: waiting for a runner."""
    prepare: Prepare | None
    """From being picked to its pod running (its trace), if known."""
    run: float | None
    """Seconds it ran (`run_seconds`), None without a `duration`."""

    @property
    def wait(self) -> float | None:
        """From queued to running: GitLab's queue, then the pod's wait (GitLab counts that as running)."""
        if self.queued is None or self.prepare is None:
            return None
        return self.queued + self.prepare.seconds


@dataclass
class Measurement:
    """Every job of the window, by profile (and the rest), with the window it was read over."""

    since: datetime
    until: datetime
    days: float
    """Days observed: the window, or less if the project is younger."""
    profiles: dict[str, ProfileFigures]
    other: ProfileFigures
    seen: int = 0
    """Jobs of the window, whatever their status."""
    start: datetime | None = None
    """Start of the days observed (`since`, or the project's creation if later)."""
    zone: tzinfo = UTC
    """The workload's time zone: arrivals and weekdays are told in it."""
    ran: list[RanJob] = field(default_factory=list)
    """The training jobs a runner took, oldest first."""

    @property
    def observed_from(self) -> datetime:
        return self.start or self.since

    @property
    def training_pipelines(self) -> set[int]:
        return set().union(*(p.pipelines for p in self.profiles.values()))

    @property
    def bursts_per_day(self) -> float:
        return len(self.training_pipelines) / self.days

    @property
    def training_jobs(self) -> int:
        return sum(p.jobs for p in self.profiles.values())


def measure(
    jobs: Iterable[Mapping[str, Any] | Job],
    routing: Routing,
    since: datetime,
    until: datetime,
    days: float,
    *,
    runner_tags: Mapping[int, tuple[str, ...]] | None = None,
    sources: Mapping[int, str] | None = None,
    zone: tzinfo = UTC,
    start: datetime | None = None,
    prepares: Mapping[int, Prepare] | None = None,
) -> Measurement:
    """Sort the window's jobs (created in [since, until)) into profiles and kinds, and sum them up.

    `runner_tags`: the tags of the runners (by id) where they could be read; the job list has none.
    `sources`: pipeline sources by pipeline id, for jobs whose entry does not carry its pipeline's.
    `prepares`: by job id, the wait from being picked to the pod running, where a trace told it."""
    families = {p.name: p.families for p in routing.profiles}
    pools = {p.name: p.pool for p in routing.profiles}
    prepares = prepares or {}
    figures = {p.name: ProfileFigures(p.name) for p in routing.profiles}
    other = ProfileFigures(NOT_TRAINING)
    result = Measurement(since, until, days, figures, other, start=start, zone=zone)
    for item in jobs:
        job = item if isinstance(item, Job) else Job.from_api(item)
        if not since <= job.created_at < until:
            continue
        result.seen += 1
        if job.status not in FINISHED:
            continue
        name = profile_of(job.facts(runner_tags), routing)
        target = figures[name] if name is not None else other
        tallies: list[Tally] = [target]
        kind: KindTally | None = None
        if name is not None:
            source = job.pipeline_source or (sources or {}).get(job.pipeline_id or 0)
            key = (kind_of(job.name, families[name], job.stage), job_class(source))
            kind = target.kinds.setdefault(key, KindTally(key[0], job_class=key[1]))
            tallies.append(kind)
        if job.status == "failed":
            for tally in tallies:
                tally.failed(job)
        if job.started_at is None:
            continue
        prepare = prepares.get(job.id)
        for tally in tallies:
            tally.ran(job, prepare)
        if kind is not None and name is not None:
            kind.arrived(job, zone)
            run = None if job.duration is None else run_seconds(job, prepare)
            facts = (job.id, name, pools[name], kind.name, kind.job_class, job.created_at, job.queued_duration)
            result.ran.append(RanJob(*facts, prepare, run))
    result.ran.sort(key=lambda ran: ran.id)
    return result


def training_in_window(
    routing: Routing, since: datetime, until: datetime
) -> Callable[[Job, Mapping[int, tuple[str, ...]]], bool]:
    """Whether a job is one `measure` sorts into a kind (created in the window, finished, of a profile): the jobs
    whose pipeline's source matters."""

    def wanted(job: Job, runner_tags: Mapping[int, tuple[str, ...]]) -> bool:
        in_window = since <= job.created_at < until and job.status in FINISHED
        return in_window and profile_of(job.facts(runner_tags), routing) is not None

    return wanted


def observed_start(since: datetime, project_created: datetime | None, first_job: datetime | None = None) -> datetime:
    """The start of the days observed: `since`, or the project's creation when it is younger than the window. A
    project is no younger than its first job: a creation time after it (GitLab's mistake) gives way to the job's."""
    if project_created is not None and first_job is not None:
        project_created = min(project_created, first_job)
    return max(since, project_created) if project_created is not None else since


def observed_days(
    since: datetime, until: datetime, project_created: datetime | None, first_job: datetime | None = None
) -> float:
    """The window's length in days, cut to the project's age when it is younger than the window."""
    start = observed_start(since, project_created, first_job)
    return max((until - start) / timedelta(days=1), 1 / 24)
