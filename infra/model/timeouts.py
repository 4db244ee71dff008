"""How long a job of a pool's templates may run (pure): the `timeout:` its CI template sets.

GitLab gives a job the project's timeout (60 min unless the project says otherwise) unless the job's own
`timeout:` says more; the runner's `maximum_timeout` (`runner.job_timeout`) only caps the result, it never
raises a shorter one. The timeout counts the job's Pending time, so a template's `timeout:` must hold what one
attempt of its job may take: its runner's poll_timeout (the wait for a node the retries are sized for,
`infra.model.attempts`) plus the pool's longest job as it runs on a full node (its GPU shared by every
replica). That is the timeout the templates set and the simulation runs with; `check-ci` refuses a job that
lowers it. Without a stated run time for every profile of the pool, the only bound known is the runner's
maximum, and the templates set that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from infra.config.platform import PlatformSpec
    from infra.model.pools import Pool


@dataclass(frozen=True)
class LongestJob:
    """The longest job of a pool's profiles as it runs on a full node, and the workload key that states it."""

    minutes: float
    key: str | None
    """`workload.profiles.<p>...` of the longest job; None without a workload for any of the pool's profiles."""
    every_profile_known: bool
    """Whether the workload states the run time of every profile of the pool (else a longer job may exist)."""


def longest_job(spec: PlatformSpec, pool: Pool) -> LongestJob:
    """The pool's longest job on a full node: a profile's longest run alone, slowed by its GPU utilisation
    times the jobs sharing the GPU (never below 1)."""
    workload = spec.workload
    longest, key, known = 0.0, None, True
    for name in pool.profiles:
        load = workload.profiles.get(name) if workload is not None else None
        if load is None:
            known = False
            continue
        utilization = load.gpu_utilization or 0.0
        as_run = load.longest_minutes * max(1.0, utilization * pool.sharing.replicas_per_gpu)
        if as_run > longest:
            longest, key = as_run, f"workload.profiles.{name}.minutes_per_job"
            if load.kinds:
                kind_name, kind = max(load.kinds.items(), key=lambda item: item[1].max_minutes)
                field = "minutes_p90" if kind.minutes_p90 is not None else "minutes_per_job"
                key = f"workload.profiles.{name}.kinds.{kind_name}.{field}"
    return LongestJob(longest, key, known and bool(pool.profiles))


def template_timeout_seconds(spec: PlatformSpec, pool: Pool, poll_timeout_seconds: int) -> int:
    """The `timeout:` of the pool's templates: one attempt's poll_timeout plus the pool's longest job on a full
    node, up to the whole minute, never above the runner's maximum; that maximum when a profile's run time is
    unknown."""
    maximum = spec.runner.job_timeout_seconds
    longest = longest_job(spec, pool)
    if not longest.every_profile_known:
        return maximum
    return min(maximum, 60 * math.ceil(poll_timeout_seconds / 60 + longest.minutes))


def gitlab_duration(seconds: int) -> str:
    """A duration as GitLab's `timeout:` reads it: `3h 22m`, `49m`, `1h 2m 5s`."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{value}{unit}" for value, unit in ((hours, "h"), (minutes, "m"), (secs, "s")) if value]
    return " ".join(parts) or "0s"
