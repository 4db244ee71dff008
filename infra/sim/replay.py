"""A measured window replayed through the engine (pure): the jobs GitLab ran, queued when they were and running
as long as they ran, dispatched by the platform as the stack file has it; what each waited, by the model.

Not drawn: `infra.sim.arrivals` draws a week from `platform.workload`; here each job is one that ran, in GitLab's
id order (the hand-out order), created at its minute of the window and running its measured run time (its
`duration` less the wait for its pod). The pools, runners and tags are the platform's
(`infra.sim.platform_scenario.scenario`), each pool's cold start the one given (the measured median where a
trace told it), warm windows repeated over every week the window spans (minute 0 is a Monday 00:00 in the
workload's time zone, as in the simulated week). Retries are not replayed: a job GitLab retried is in the
history twice already. Held against the measured waits, the model's error (`infra.workload.model_error`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING

from infra.config.workload import JobClass
from infra.sim.engine import simulate
from infra.sim.platform_scenario import PlannedJob, scenario
from infra.sim.scenario import MAX_MINUTES, Minutes, Scenario, SimPool

if TYPE_CHECKING:
    from infra.model.platform import Platform

MINUTES_PER_WEEK = 7 * 24 * 60


@dataclass(frozen=True)
class ReplayedJob:
    """One job as it ran: its key (GitLab's id), profile, class, when it was queued and how long it ran."""

    key: int
    profile: str
    job_class: JobClass
    created_minute: Fraction
    """Minutes from the replay's minute 0 (a Monday 00:00)."""
    minutes: Fraction
    """Its run time, more than 0."""


def replay(
    platform: Platform, jobs: Sequence[ReplayedJob], cold_starts: Mapping[str, int] | None = None
) -> dict[int, Fraction | None]:
    """Each job's wait by the model (by key), from queued to running (None: the model never ran it); ValueError
    naming what the engine cannot take (a window longer than its `MAX_MINUTES`, too many jobs)."""
    ordered = sorted(jobs, key=lambda job: job.key)
    planned = [
        PlannedJob(f"job-{job.key}", job.profile, job.minutes, job.created_minute, job_class=job.job_class)
        for job in ordered
    ]
    last = max((job.created_minute for job in ordered), default=Fraction(0))
    if last > MAX_MINUTES:
        raise ValueError(f"a window of more than {MAX_MINUTES // (24 * 60)} days (the simulation's longest)")
    built = scenario(platform, planned)
    weeks = int(last // MINUTES_PER_WEEK) + 2  # the last job's week and the next (it may run into it)
    pools = tuple(_pool(pool, (cold_starts or {}).get(pool.name), weeks) for pool in built.pools)
    result = simulate(
        Scenario(
            pools=pools,
            runners=built.runners,
            jobs=tuple(replace(job, retry_max=0, retry_when=frozenset()) for job in built.jobs),
        )
    )
    waits = result.waits()
    started = {final.first_id for final in result.finals if final.started is not None}
    return {
        job.key: (sum(waits[index], Fraction(0)) if index in started else None)
        for index, job in enumerate(ordered, start=1)
    }


def _pool(pool: SimPool, cold_start: int | None, weeks: int) -> SimPool:
    """The pool with the cold start given, and its week's warm windows over `weeks` weeks."""
    spans = tuple(
        (start + week * MINUTES_PER_WEEK, end + week * MINUTES_PER_WEEK, nodes)
        for week in range(weeks)
        for start, end, nodes in pool.warm_windows
        if end + week * MINUTES_PER_WEEK <= MAX_MINUTES
    )
    return replace(
        pool,
        cold_start_minutes=pool.cold_start_minutes if cold_start is None else cold_start,
        warm_windows=_merged(spans),
    )


def _merged(spans: tuple[tuple[Minutes, Minutes, int], ...]) -> tuple[tuple[Minutes, Minutes, int], ...]:
    """Windows that touch across a week's end are one (the engine takes sorted windows that do not overlap)."""
    merged: list[tuple[Minutes, Minutes, int]] = []
    for start, end, nodes in spans:
        if merged and start <= merged[-1][1]:
            first, _, most = merged[-1]
            merged[-1] = (first, end, max(most, nodes))
        else:
            merged.append((start, end, nodes))
    return tuple(merged)
