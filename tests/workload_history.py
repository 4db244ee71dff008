"""A project's CI job history in the shape GitLab's jobs API returns it, built from known figures.

Every day of the window has `pipelines_per_day` pipelines; each runs a lint job (not training, on a
shared runner), one job per RL name and one per supervised family, and a skipped docs job. Durations
follow a fixed cycle around each profile's minutes (`OFFSETS`) so that the nearest-rank p50 of the
successful jobs is the profile's minutes exactly and p90 is minutes + 6. A few jobs fail
(`runner_system_failure` after the poll timeout, a `script_failure`), one never starts
(`stuck_or_timeout_failure`), and two days before the window hold older pipelines that must not count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

OFFSETS = (0, 0, 0, 0, 0, -6, -4, -2, 2, 4, 6, 15)
"""Minutes added to a profile's duration, cycling over its jobs: 3 shorter, 5 exact, 4 longer."""
QUEUED = (4, 4, 4, 4, 4, 4, 4, 4, 4, 30, 30, 90)
"""Seconds a job waited for a runner, cycling likewise: p50 4 s (0.1 min), p90 30 s (0.5 min)."""
RL_JOBS = ("train-validate-dqn", "train-validate-ppo", "hyperopt-dqn", "hyperopt-ppo")
SUPERVISED_FAMILIES = ("tft", "mamba2", "tggn", "tlob", "liquid", "kan", "xlstm", "diffusion")
RUNNERS: dict[str | None, dict[str, Any]] = {
    "rl": {
        "id": 11,
        "description": "gpu-ci: Kapsule GPU runner (managed by Pulumi) - pool ci-compile",
        "tags": ["ci-compile", "gpu", "kapsule"],
    },
    "supervised": {
        "id": 12,
        "description": "gpu-ci: Kapsule GPU runner (managed by Pulumi) - pool ci-training",
        "tags": ["ci-training", "kapsule"],
    },
    None: {"id": 3, "description": "shared-runners-manager-3", "tags": []},
}
POLL_TIMEOUT_SECONDS = 49 * 60
"""The dev stack's poll_timeout: a job pod that waits longer for a node fails with runner_system_failure."""


@dataclass(frozen=True)
class Figures:
    """What the history is built from, and so what measuring it must give back."""

    pipelines_per_day: int = 2
    rl_minutes: int = 25
    supervised_minutes: int = 45
    days: int = 14
    before_window_days: int = 2
    rl_failures: tuple[int, ...] = (24, 60, 108)
    """Indexes (among the profile's jobs in the window) that fail with runner_system_failure."""
    supervised_failures: tuple[int, ...] = (96, 168)
    """The first fails with script_failure, the others with runner_system_failure."""

    @property
    def rl_per_day(self) -> int:
        return self.pipelines_per_day * len(RL_JOBS)

    @property
    def supervised_per_day(self) -> int:
        return self.pipelines_per_day * len(SUPERVISED_FAMILIES)


@dataclass
class _Builder:
    figures: Figures
    until: datetime
    jobs: list[dict[str, Any]] = field(default_factory=list)
    next_job: int = 5000
    next_pipeline: int = 900
    counters: dict[str, int] = field(default_factory=lambda: {"rl": 0, "supervised": 0})


def build_history(until: datetime, figures: Figures = Figures()) -> list[dict[str, Any]]:
    """The jobs, oldest first (ids grow with time, as GitLab's do)."""
    builder = _Builder(figures, until)
    start = until - timedelta(days=figures.days + figures.before_window_days)
    hours = [8 + (12 * n) // figures.pipelines_per_day for n in range(figures.pipelines_per_day)]
    for day in range(figures.days + figures.before_window_days):
        in_window = day >= figures.before_window_days
        for hour in hours:
            _pipeline(builder, start + timedelta(days=day, hours=hour), in_window)
        if in_window and day == figures.before_window_days + 4:
            _stuck_job(builder, start + timedelta(days=day, hours=20))
    return builder.jobs


def _pipeline(builder: _Builder, at: datetime, in_window: bool) -> None:
    builder.next_pipeline += 1
    pipeline = {
        "id": builder.next_pipeline,
        "iid": builder.next_pipeline - 800,
        "project_id": 42,
        "sha": f"{builder.next_pipeline:040x}",
        "ref": "main",
        "status": "success",
        "source": "schedule",
        "created_at": _stamp(at),
        "updated_at": _stamp(at + timedelta(hours=2)),
        "web_url": f"https://gitlab.example.com/ml-team/training/-/pipelines/{builder.next_pipeline}",
    }
    figures = builder.figures
    _job(builder, pipeline, at, "lint", stage="test", profile=None, minutes=1, queued=2)
    for name in RL_JOBS:
        _profile_job(
            builder,
            pipeline,
            at=at,
            name=name,
            profile="rl",
            minutes=figures.rl_minutes,
            failures=figures.rl_failures,
            in_window=in_window,
        )
    for family in SUPERVISED_FAMILIES:
        _profile_job(
            builder,
            pipeline,
            at=at,
            name=f"train-validate-{family}",
            profile="supervised",
            minutes=figures.supervised_minutes,
            failures=figures.supervised_failures,
            in_window=in_window,
        )
    _job(builder, pipeline, at, "pages", stage="deploy", profile=None, queued=0, status="skipped")


def _profile_job(
    builder: _Builder,
    pipeline: dict[str, Any],
    *,
    at: datetime,
    name: str,
    profile: str,
    minutes: int,
    failures: tuple[int, ...],
    in_window: bool,
) -> None:
    index = builder.counters[profile]
    if in_window:
        builder.counters[profile] += 1
    cycle = index % len(OFFSETS)
    queued = QUEUED[cycle]
    if in_window and index in failures:
        reason = "script_failure" if profile == "supervised" and index == failures[0] else "runner_system_failure"
        seconds = 600 if reason == "script_failure" else POLL_TIMEOUT_SECONDS
        _job(
            builder, pipeline, at, name, stage="train", profile=profile, seconds=seconds, queued=queued, failure=reason
        )
        return
    # Jobs before the window run far longer: counting them would move every figure.
    total = (minutes + OFFSETS[cycle]) * 60 if in_window else 5 * 3600
    _job(builder, pipeline, at, name, stage="train", profile=profile, seconds=total, queued=queued)


def _stuck_job(builder: _Builder, at: datetime) -> None:
    """A supervised job no runner took: failed after GitLab's pending timeout, never started."""
    builder.next_pipeline += 1
    pipeline = {"id": builder.next_pipeline, "project_id": 42, "ref": "main", "status": "failed"}
    _job(
        builder,
        pipeline,
        at,
        "train-validate-tft",
        stage="train",
        profile="supervised",
        seconds=None,
        queued=None,
        failure="stuck_or_timeout_failure",
        started=False,
    )


def _job(
    builder: _Builder,
    pipeline: dict[str, Any],
    at: datetime,
    name: str,
    *,
    stage: str,
    profile: str | None,
    minutes: int = 0,
    seconds: float | None = None,
    queued: float | None,
    failure: str | None = None,
    status: str | None = None,
    started: bool = True,
) -> None:
    builder.next_job += 1
    status = status or ("failed" if failure else "success")
    ran = started and status != "skipped"
    duration = float(seconds if seconds is not None else minutes * 60) if ran else None
    start = at + timedelta(seconds=queued or 0)
    runner = RUNNERS[profile]
    tags = {"rl": ["gpu", "kapsule"], "supervised": ["ci-training", "kapsule"], None: []}[profile]
    job: dict[str, Any] = {
        "id": builder.next_job,
        "status": status,
        "stage": stage,
        "name": name,
        "ref": "main",
        "tag": False,
        "coverage": None,
        "allow_failure": False,
        "created_at": _stamp(at),
        "started_at": _stamp(start) if ran else None,
        "finished_at": _stamp(start + timedelta(seconds=duration)) if duration is not None else None,
        "erased_at": None,
        "duration": duration,
        "queued_duration": float(queued) if ran and queued is not None else None,
        "user": {"id": 7, "username": "ml-bot", "name": "ML bot", "state": "active"},
        "commit": {"id": pipeline.get("sha"), "short_id": str(pipeline.get("sha", ""))[:8], "title": "Nightly"},
        "pipeline": pipeline,
        "web_url": f"https://gitlab.example.com/ml-team/training/-/jobs/{builder.next_job}",
        "project": {"ci_job_token_scope_enabled": False},
        "artifacts": [],
        "runner": (
            {
                "id": runner["id"],
                "description": runner["description"],
                "ip_address": None,
                "active": True,
                "paused": False,
                "is_shared": profile is None,
                "runner_type": "instance_type" if profile is None else "project_type",
                "name": "gitlab-runner",
                "online": True,
                "status": "online",
            }
            if ran
            else None
        ),
        "artifacts_expire_at": None,
        "archived": False,
        "tag_list": tags,
    }
    if status == "failed":
        job["failure_reason"] = failure
    builder.jobs.append(job)


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.000Z")
