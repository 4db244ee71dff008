"""The model's error: the measured window replayed through the simulation (`infra.sim.replay`), its waits held
against the measured ones, per class, as a ratio (pure).

Every training job a runner took is replayed (it held a slot, whatever became of it), at the minute it was
queued, for its run time (`measure.run_seconds`: its `duration` less its prepare, where its trace told it), with
the platform's pools and runners and each pool's measured cold start (the median written, else the stack
file's). The comparison is over the jobs whose measured wait is known (`RanJob.wait`): the same jobs on both
sides, nearest-rank p50 and p95, and the ratio replayed / measured (1.0: the model waits as GitLab did; below:
it is optimistic). A ratio over a measured 0 is not a number and is shown as `-`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, time, timedelta, tzinfo
from fractions import Fraction
from typing import TYPE_CHECKING

from infra.config.workload import JobClass
from infra.sim.replay import ReplayedJob, replay
from infra.workload.figures import Resolution
from infra.workload.measure import Measurement, RanJob, percentile
from infra.workload.waits import CLASS_ORDER

if TYPE_CHECKING:
    from infra.model.platform import Platform


@dataclass(frozen=True)
class ClassError:
    """One class: its measured and replayed waits (seconds) over the same jobs, and the ratio."""

    job_class: JobClass
    measured: tuple[float, ...]
    replayed: tuple[float, ...]
    lost: int = 0
    """Jobs of the class the replay never ran (failed in the model): left out of both sides."""

    def ratio(self, pct: int) -> float | None:
        measured, replayed = percentile(self.measured, pct), percentile(self.replayed, pct)
        if measured is None or replayed is None or measured == 0:
            return None
        return replayed / measured


@dataclass(frozen=True)
class ModelError:
    classes: tuple[ClassError, ...]
    note: str = ""
    """Why the replay could not be made, or what it left out, or ""."""


def week_origin(start: datetime, zone: tzinfo) -> datetime:
    """The Monday 00:00 (in `zone`) at or before `start`: minute 0 of the replay, as of the simulated week."""
    local = start.astimezone(zone)
    return datetime.combine(local.date() - timedelta(days=local.weekday()), time(0), zone)


def model_error(
    platform: Platform, measurement: Measurement, resolution: Resolution, cold_starts: Mapping[str, int]
) -> ModelError:
    """The window replayed (see the module docstring) against its measured waits."""
    origin = week_origin(measurement.observed_from, measurement.zone)
    classes = _classes(resolution)
    jobs = [
        ReplayedJob(
            job.id,
            job.profile,
            job.job_class or classes.get((job.profile, job.kind), "batch"),
            Fraction(round((job.created_at - origin).total_seconds()), 60),
            Fraction(round(job.run), 60),
        )
        for job in measurement.ran
        if job.run is not None and job.profile in platform.profiles
    ]
    if not jobs:
        return ModelError((), "no training job to replay")
    try:
        simulated = replay(platform, jobs, cold_starts)
    except ValueError as err:
        return ModelError((), f"the window is not replayed: {err}")
    return ModelError(tuple(_compare(job_class, measurement.ran, simulated) for job_class in CLASS_ORDER))


def _classes(resolution: Resolution) -> dict[tuple[str, str], JobClass]:
    """The class each kind was written with (a kind whose jobs' pipelines said no source takes the stack file's)."""
    return {(kind.profile, kind.tally.name): kind.job_class for kind in resolution.kinds if kind.job_class}


def _compare(job_class: JobClass, ran: list[RanJob], simulated: Mapping[int, Fraction | None]) -> ClassError:
    measured, replayed, lost = [], [], 0
    for job in ran:
        if job.job_class != job_class or job.wait is None or job.id not in simulated:
            continue
        wait = simulated[job.id]
        if wait is None:
            lost += 1
            continue
        measured.append(job.wait)
        replayed.append(float(wait * 60))
    return ClassError(job_class, tuple(measured), tuple(replayed), lost)
