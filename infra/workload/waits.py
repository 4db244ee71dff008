"""What the traces tell, summed up (pure): each pool's cold starts, each class's wait from queued to running.

- **cold starts** per pool: the prepare times of its jobs whose pod waited for a node (`traces.Prepare.cold`:
  the trace shows it `Unschedulable`), beside its warm prepares (a node was there: scheduling and image pull).
  Written, with `--write`, as `pools.<p>.cold_start_minutes` (the median), `cold_start_p90_minutes` and
  `cold_start_max_minutes` (the worst seen), whole minutes rounded half up (at least 1): nearest-rank, so each is
  a cold start some job had, and the three never out of order.
- **waits** per class: GitLab's `queued_duration` (waiting for a runner) plus the prepare (waiting, taken, for
  the pod): GitLab counts a job whose pod waits for a node as running, so `queued_duration` alone misses it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from infra.config.workload import JobClass
from infra.workload.figures import Figure, round_half_up
from infra.workload.measure import RanJob, percentile

COLD_KEYS = ("cold_start_minutes", "cold_start_p90_minutes", "cold_start_max_minutes")
"""A pool's measured cold start in the stack file: the median, the p90, the worst seen (whole minutes)."""
CLASS_ORDER: tuple[JobClass, ...] = ("merge_request", "batch")


@dataclass(frozen=True)
class PoolStarts:
    """One pool's prepares, in seconds: of jobs that waited for a node (cold), and of the others (warm)."""

    pool: str
    cold: tuple[float, ...]
    warm: tuple[float, ...]

    def written(self) -> dict[str, int]:
        """The pool's cold-start keys (COLD_KEYS) to write, or {} without a cold start seen."""
        if not self.cold:
            return {}
        figures = (percentile(self.cold, 50), percentile(self.cold, 90), max(self.cold))
        minutes = [max(1, round_half_up((seconds or 0) / 60)) for seconds in figures]
        return dict(zip(COLD_KEYS, minutes, strict=True))


@dataclass(frozen=True)
class Waits:
    """One class's waits from queued to running, in seconds, of the jobs whose both parts are known."""

    job_class: JobClass
    seconds: tuple[float, ...]

    @property
    def n(self) -> int:
        return len(self.seconds)

    def p(self, pct: int) -> float | None:
        return percentile(self.seconds, pct)


def pool_starts(ran: Iterable[RanJob], pools: Iterable[str]) -> dict[str, PoolStarts]:
    """Per pool (each of `pools`, in order), its jobs' cold and warm prepares."""
    cold: dict[str, list[float]] = {pool: [] for pool in pools}
    warm: dict[str, list[float]] = {pool: [] for pool in cold}
    for job in ran:
        if job.prepare is not None and job.pool in cold:
            (cold if job.prepare.cold else warm)[job.pool].append(job.prepare.seconds)
    return {pool: PoolStarts(pool, tuple(cold[pool]), tuple(warm[pool])) for pool in cold}


def class_waits(ran: Iterable[RanJob]) -> dict[JobClass, Waits]:
    """Per class, the waits (queued + prepare) of its jobs where both are known; a job of no known class (its
    pipeline's source unknown) counts in neither."""
    seconds: dict[JobClass, list[float]] = {job_class: [] for job_class in CLASS_ORDER}
    for job in ran:
        if job.wait is not None and job.job_class is not None:
            seconds[job.job_class].append(job.wait)
    return {job_class: Waits(job_class, tuple(values)) for job_class, values in seconds.items()}


def measured_waits(ran: Iterable[RanJob]) -> Mapping[int, float]:
    """Each job's wait (by id), where known: what the replay is held against."""
    return {job.id: job.wait for job in ran if job.wait is not None}


def cold_start_edit(
    starts: Mapping[str, PoolStarts], assumed_pools: Mapping[str, Any] | None, known: Iterable[str]
) -> tuple[list[tuple[tuple[str, ...], object]], list[Figure]]:
    """The pool keys to set (`pools.<p>.<key>`, for the stack-file editor) and their rows beside what they
    replace. A key the spec does not take (`known`: the pool's fields) is shown, not written."""
    known = set(known)
    settings: list[tuple[tuple[str, ...], object]] = []
    rows: list[Figure] = []
    for pool, start in starts.items():
        if not start.cold:
            continue
        old = (assumed_pools or {}).get(pool) or {}
        figures = (percentile(start.cold, 50), percentile(start.cold, 90), max(start.cold, default=None))
        for (key, value), seconds in zip(start.written().items(), figures, strict=True):
            measured = "-" if seconds is None else f"{seconds / 60:.1f}"
            name = f"pools.{pool}.{key}"
            if key in known:
                settings.append((("pools", pool, key), value))
                rows.append(Figure(name, old.get(key), measured, value, f"{len(start.cold)} cold starts"))
            else:
                rows.append(Figure(name, old.get(key), measured, "-", "the spec takes no such key yet"))
    return settings, rows
