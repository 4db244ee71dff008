"""The workload measured from GitLab jobs: per profile, jobs per day, durations, queueing, failures (pure).

Input is the jobs of GitLab's REST API (`GET /projects/:id/jobs`) as `job_entries` checked them; output is the
figures of `platform.workload` (`infra/config/workload.py`) and a report a platform engineer can read. Durations
are minutes rounded to 0.1; percentiles are nearest-rank, so every figure is one some job actually had.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from infra.render.text import render_table
from infra.workload.job_entries import Job
from infra.workload.mapping import Routing, profile_of

NOT_TRAINING = "not a training job"
RUNNER_SYSTEM_FAILURE = "runner_system_failure"
FINISHED = frozenset({"success", "failed", "canceled"})
"""Job statuses that say something about the load; `skipped`, `manual` and `created` never ran."""
MAX_REASONS_SHOWN = 5
"""Failure reasons a row names; the rest are counted together."""


def percentile(values: Iterable[float], pct: int) -> float | None:
    """Nearest-rank percentile: the smallest value with at least `pct` % of the values at or below it."""
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[max(1, math.ceil(pct / 100 * len(ordered))) - 1]


def minutes(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds / 60, 1)


@dataclass
class ProfileFigures:
    """One profile's jobs in the window."""

    name: str
    jobs: int = 0
    """Jobs a runner took (started): each held a slot of the pool."""
    durations: list[float] = field(default_factory=list)
    """Seconds, of the successful jobs: what `minutes_per_job` means (a failed job stops early)."""
    queued: list[float] = field(default_factory=list)
    failures: Counter[str] = field(default_factory=Counter)
    pipelines: set[int] = field(default_factory=set)

    def per_day(self, days: float) -> float:
        return self.jobs / days

    def duration_minutes(self, pct: int) -> float | None:
        return minutes(percentile(self.durations, pct))

    def queued_minutes(self, pct: int) -> float | None:
        return minutes(percentile(self.queued, pct))


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
) -> Measurement:
    """Sort the window's jobs (created in [since, until)) into profiles and sum them up.

    `runner_tags`: the tags of the runners (by id) where they could be read; the job list has none."""
    figures = {p.name: ProfileFigures(p.name) for p in routing.profiles}
    other = ProfileFigures(NOT_TRAINING)
    result = Measurement(since, until, days, figures, other)
    for item in jobs:
        job = item if isinstance(item, Job) else Job.from_api(item)
        if not since <= job.created_at < until:
            continue
        result.seen += 1
        if job.status not in FINISHED:
            continue
        name = profile_of(job.facts(runner_tags), routing)
        target = figures[name] if name is not None else other
        if job.status == "failed":
            target.failures[job.failure_reason or "unknown_failure"] += 1
        if job.started_at is None:
            continue
        target.jobs += 1
        if job.pipeline_id is not None:
            target.pipelines.add(job.pipeline_id)
        if job.queued_duration is not None:
            target.queued.append(job.queued_duration)
        if job.status == "success" and job.duration is not None:
            target.durations.append(job.duration)
    return result


def observed_days(
    since: datetime, until: datetime, project_created: datetime | None, first_job: datetime | None = None
) -> float:
    """The window's length in days, cut to the project's age when it is younger than the window. A project is no
    younger than its first job: a creation time after it (GitLab's mistake) gives way to the job's."""
    if project_created is not None and first_job is not None:
        project_created = min(project_created, first_job)
    start = max(since, project_created) if project_created is not None else since
    return max((until - start) / timedelta(days=1), 1 / 24)


# --- the figures of platform.workload -------------------------------------------------------------


def round_half_up(value: float) -> int:
    return math.floor(value + 0.5)


def tidy(value: float) -> int | float:
    """30.0 -> 30 (the stack file's style), 37.5 stays."""
    return int(value) if float(value).is_integer() else value


@dataclass(frozen=True)
class Figure:
    """One `platform.workload` key: what the stack assumes, what was measured, what gets written."""

    key: str
    assumed: object
    measured: str
    written: object
    note: str = ""


def workload_figures(measurement: Measurement, assumed: Mapping[str, Any] | None) -> list[Figure]:
    """The `workload` keys to write, each with the assumed value it replaces (None: not set)."""
    assumed = assumed or {}
    assumed_profiles = assumed.get("profiles") or {}
    rows = [
        Figure(
            "batches_per_day",
            assumed.get("batches_per_day"),
            f"{measurement.bursts_per_day:.1f}",
            max(1, round_half_up(measurement.bursts_per_day)),
            "pipelines with a training job, per day",
        )
    ]
    for name, figures in measurement.profiles.items():
        old = assumed_profiles.get(name) or {}
        per_day = figures.per_day(measurement.days)
        rows.append(
            Figure(f"profiles.{name}.jobs_per_day", old.get("jobs_per_day"), f"{per_day:.1f}", round_half_up(per_day))
        )
        p50 = figures.duration_minutes(50)
        if p50 is not None and p50 > 0:
            rows.append(Figure(f"profiles.{name}.minutes_per_job", old.get("minutes_per_job"), f"{p50:.1f}", tidy(p50)))
        elif old.get("minutes_per_job") is not None:
            rows.append(
                Figure(
                    f"profiles.{name}.minutes_per_job",
                    old["minutes_per_job"],
                    "-",
                    old["minutes_per_job"],
                    "no successful job: kept",
                )
            )
        if old.get("gpu_utilization") is not None:
            rows.append(
                Figure(
                    f"profiles.{name}.gpu_utilization",
                    old["gpu_utilization"],
                    "-",
                    old["gpu_utilization"],
                    "not measurable from GitLab (nvidia-smi): kept",
                )
            )
    return rows


def writable(figures: list[Figure]) -> list[Figure]:
    """The figures a profile can be written with: `minutes_per_job` must be > 0, so a profile that has
    neither a measured nor an assumed one is left out."""
    with_minutes = {f.key.split(".")[1] for f in figures if f.key.endswith(".minutes_per_job")}
    return [f for f in figures if not f.key.startswith("profiles.") or f.key.split(".")[1] in with_minutes]


# --- the report -------------------------------------------------------------------------------------


def _pair(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"{low:.1f} / {high:.1f}"


def _failures(counter: Counter[str], shown: int = MAX_REASONS_SHOWN) -> str:
    ordered = sorted(counter.items(), key=lambda i: (-i[1], i[0]))
    text = ", ".join(f"{count} {reason}" for reason, count in ordered[:shown])
    rest = sum(count for _, count in ordered[shown:])
    return text + (f", {rest} of {len(ordered) - shown} other reasons" if rest else "")


def render_report(measurement: Measurement, project: str, poll_timeouts: Mapping[str, int] | None = None) -> str:
    """The measured figures per profile, the other jobs, bursts per day, and what failures usually mean.

    `poll_timeouts`: each runner's poll_timeout in seconds, by pool."""
    days = measurement.days
    head = (
        f"{project}: {measurement.seen} jobs created {measurement.since:%Y-%m-%d %H:%M} .. "
        f"{measurement.until:%Y-%m-%d %H:%M} UTC ({days:.1f} days observed)\n\n"
    )
    rows = []
    for figures in [*measurement.profiles.values(), measurement.other]:
        rows.append(
            (
                figures.name,
                str(figures.jobs),
                f"{figures.per_day(days):.1f}",
                _pair(figures.duration_minutes(50), figures.duration_minutes(90)),
                _pair(figures.queued_minutes(50), figures.queued_minutes(90)),
                _failures(figures.failures) or "-",
            )
        )
    text = head + render_table(
        ("profile", "jobs", "jobs/day", "duration p50 / p90 (min)", "queued p50 / p90 (min)", "failures by reason"),
        rows,
    )
    pipelines = measurement.training_pipelines
    text += (
        f"\nbursts: {len(pipelines)} pipelines with a training job, {measurement.bursts_per_day:.1f} per day\n"
        "durations are of successful jobs; jobs/day counts every job a runner took (failed ones too)\n"
        "a duration includes the pod's wait for a node, and a job that shared its GPU ran slower: "
        "see docs/workload.md\n"
    )
    if any(RUNNER_SYSTEM_FAILURE in p.failures for p in measurement.profiles.values()):
        waited = _poll_timeouts(poll_timeouts or {})
        text += (
            f"note: {RUNNER_SYSTEM_FAILURE} is usually a job pod that waited past the runner's poll_timeout{waited} "
            "for a node: a GPU pool scaling up from zero took longer, or no node could be added\n"
        )
    return text


def _poll_timeouts(seconds: Mapping[str, int]) -> str:
    if not seconds:
        return ""
    if len(set(seconds.values())) == 1:
        return f" ({next(iter(seconds.values()))} s here)"
    return " (" + ", ".join(f"{pool}: {value} s" for pool, value in sorted(seconds.items())) + ")"


def render_comparison(figures: list[Figure]) -> str:
    """Assumed (the stack file) vs measured (GitLab) vs what is written, one row per key."""
    rows = [(f.key, "-" if f.assumed is None else str(f.assumed), f.measured, str(f.written), f.note) for f in figures]
    return "assumed vs measured (platform.workload):\n" + render_table(
        ("key", "assumed", "measured", "written", ""), rows
    )
