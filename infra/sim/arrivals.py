"""The week of jobs of `platform.workload` (pure): when each job is queued, how long it runs, its class.

The week starts on Monday 00:00 in `workload.time_zone`. Everything drawn is seeded from the spec's own names
and the week's number (`zlib.crc32`, not Python's salted `hash`), so a spec always gives the same weeks, in every
process, and two specs with the same workload the same weeks:

- A kind (`workload.profiles.<p>.kinds.<kind>`) comes in **pipelines** of one job per family of the profile,
  `ceil(jobs_per_day / families)` a day on each of its `days`, queued at whole minutes drawn uniformly within
  [`from`, `to`). The draws belong to the kind's name and the day, so the same kind in two profiles with as many
  pipelines a day is one pipeline (`train-validate-dqn` and `train-validate-tft` queued together, as one
  merge request's pipeline runs every family).
- A kind's run times: its median `minutes_per_job`, or with `minutes_p90` a log-normal through the median and
  the p90, cut at its p99 (`KindLoadSpec.max_minutes`): a tail that long is a broken job, not load.
- A profile given by `jobs_per_day`/`minutes_per_job` (no kinds): one merge-request kind in
  `workload.batches_per_day` bursts spread evenly over every day, each with its share of the jobs (the first
  bursts take the remainder), every job `minutes_per_job` long: the day gpu-ci simulated before, seven times.

Within an instant, jobs are queued in profile order, then family order (GitLab's ids follow the pipeline's
YAML order).
"""

from __future__ import annotations

import functools
import math
import zlib
from fractions import Fraction
from random import Random
from statistics import NormalDist
from typing import TYPE_CHECKING

from infra.config.schedule import MINUTES_PER_DAY
from infra.config.workload import LEGACY_KIND, Z99, KindLoadSpec, ProfileLoadSpec, WorkloadSpec
from infra.quantity import exact_decimal
from infra.sim.memo import Memo
from infra.sim.platform_scenario import PlannedJob

if TYPE_CHECKING:
    from infra.model.platform import Platform

DAYS = 7
_NORMAL = NormalDist()
_TOP = _NORMAL.cdf(Z99)


def week_jobs(platform: Platform, *, week: int = 0) -> list[PlannedJob]:
    """Week number `week` of the spec's workload, in queue order (empty without a workload): week 0 is the one
    `plan` has always simulated; each other is drawn independently, from the same names and its number, so two
    specs with the same workload are simulated on the same weeks (common random numbers)."""
    return list(shared_week_jobs(platform, week=week))


def shared_week_jobs(platform: Platform, *, week: int = 0) -> tuple[PlannedJob, ...]:
    """`week_jobs` as the one tuple this process keeps for the week (its jobs are frozen): the memos keyed by a
    jobs tuple (`infra.sim.platform_scenario.scenario`'s, the engine's checks) find it again from plan to plan."""
    workload = platform.spec.workload
    if workload is None:
        return ()
    # what the week is made of: the workload as written, and the families of the profiles the platform has
    key = (workload.model_dump_json(), tuple((name, p.families) for name, p in sorted(platform.profiles.items())), week)
    found = _WEEKS.get(key)
    return found if found is not None else _WEEKS.keep(key, tuple(_week_jobs(platform, workload, week)))


_WEEKS: Memo[tuple[object, ...], tuple[PlannedJob, ...]] = Memo(256)
"""`week_jobs`' weeks by what they are drawn from (frozen jobs): a plan simulates the spec's 20 weeks, and a
search, its bound and its confirmations draw the same weeks again, each some thousands of seeded draws."""


def _week_jobs(platform: Platform, workload: WorkloadSpec, week: int) -> list[PlannedJob]:
    jobs: list[tuple[Fraction, int, PlannedJob]] = []
    for name, load in sorted(workload.profiles.items()):
        if name not in platform.profiles:
            continue
        families = platform.profiles[name].families
        planned = (
            _kind_jobs(name, families, load.kinds, week)
            if load.kinds
            else _burst_jobs(name, families, load, workload.batches_per_day)
        )
        jobs += [(job.created_minute, index, job) for index, job in enumerate(planned)]
    order = {name: index for index, name in enumerate(sorted(workload.profiles))}
    jobs.sort(key=lambda item: (item[0], order[item[2].profile], item[1]))
    return [job for _, _, job in jobs]


def _burst_jobs(profile: str, families: tuple[str, ...], load: ProfileLoadSpec, bursts: int) -> list[PlannedJob]:
    assert load.jobs_per_day is not None and load.minutes_per_job is not None  # the form without kinds
    minutes = exact_decimal(load.minutes_per_job)
    split = split_evenly(load.jobs_per_day, bursts)
    jobs = []
    for day in range(DAYS):
        for burst in range(bursts):
            start = day * MINUTES_PER_DAY + Fraction(MINUTES_PER_DAY * burst, bursts)
            pipeline = day * bursts + burst
            for index in range(split[burst]):
                family = families[index % len(families)]
                jobs.append(
                    PlannedJob(
                        f"{family}-{pipeline}-{index}",
                        profile,
                        minutes,
                        start,
                        kind=LEGACY_KIND,
                        pipeline=f"{LEGACY_KIND}-{pipeline}",
                    )
                )
    return jobs


def _kind_jobs(profile: str, families: tuple[str, ...], kinds: dict[str, KindLoadSpec], week: int) -> list[PlannedJob]:
    jobs = []
    for kind_name, kind in sorted(kinds.items()):
        pipelines = math.ceil(kind.jobs_per_day / len(families))
        for day, (start, end) in _days(kind):
            draws = Random(_seed(kind_name, day, *_week(week)))
            # [from, to): a draw rounded up to `to` is the window's last minute, not past it (past Sunday 24:00
            # it would leave the week, and any warm window ending at `to`)
            times = sorted(min(end - 1, start + round(draws.random() * (end - start))) for _ in range(pipelines))
            for number, at in enumerate(times):
                for index, family in enumerate(families):
                    if number * len(families) + index >= kind.jobs_per_day:
                        break
                    jobs.append(
                        PlannedJob(
                            f"{kind_name}-{family}",
                            profile,
                            run_minutes(kind, _seed(kind_name, day, number, family, *_week(week))),
                            Fraction(at),
                            job_class=kind.job_class,
                            kind=kind_name,
                            pipeline=f"{kind_name}-{day}-{number}",
                        )
                    )
    return jobs


def _days(kind: KindLoadSpec) -> list[tuple[int, tuple[int, int]]]:
    return [(start // MINUTES_PER_DAY, (start, end)) for start, end in kind.intervals()]


def run_minutes(kind: KindLoadSpec, seed: int) -> Fraction:
    """One job's run time alone on its GPU, to 0.1 min: the median, or a log-normal draw cut at the p99."""
    sigma = kind.sigma
    if not sigma:
        return _exact(kind.minutes_per_job)
    quantile = min(max(Random(seed).random(), 1 - _TOP), _TOP)
    minutes = kind.minutes_per_job * math.exp(sigma * _NORMAL.inv_cdf(quantile))
    return Fraction(round(minutes * 10), 10)


@functools.lru_cache(maxsize=1024, typed=True)
def _exact(minutes: float) -> Fraction:
    """`exact_decimal`, remembered: a kind's median, for each of its jobs."""
    return exact_decimal(minutes)


def _week(week: int) -> tuple[str, ...]:
    """The seed's part for the week's number: none for week 0 (the week `plan` always drew)."""
    return (f"week{week}",) if week else ()


def _seed(*parts: object) -> int:
    return zlib.crc32(":".join(str(part) for part in parts).encode())


def split_evenly(total: int, parts: int) -> list[int]:
    """`total` jobs over `parts` bursts, the first bursts taking the remainder."""
    quotient, remainder = divmod(total, parts)
    return [quotient + (1 if i < remainder else 0) for i in range(parts)]
