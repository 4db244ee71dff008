"""What a candidate of `recommend` cannot beat, known before it is simulated (pure): the search's bounds.

Each bound is sound for a candidate that fails no job (one that fails a job is no candidate):
- **cost floor**: a pool's EUR/week is at least its always-on nodes around the clock, plus its warm windows'
  nodes over their hours (placeholders hold them up), plus the work those warm nodes cannot have done at a
  node's most throughput (`node_throughput`: a job runs no faster than alone on its GPU, and jobs sharing a GPU
  of utilisation u get through at most 1/u of their work a minute together);
- **slots**: a merge-request job waits longer than the target when at least as many of the pool's merge-request
  jobs queued before it are still running then as the pool has slots: GitLab hands out jobs by id, so every
  earlier merge-request job is taken before it, and none can end before its own length after its queueing;
- **cold start**: with a cold start longer than the target, a merge-request job that arrives on a pool that
  must be empty (no job queued within `quiet_minutes` before it, no warm window over that time, no `min_size`)
  waits at least the cold start.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from infra.sim.gitlab import GITLAB_PENDING_OUTDATED_MINUTES
from infra.sim.platform_scenario import PlannedJob

Span = tuple[int, int, int]
"""A warm span: [start, end) minutes of the week and the nodes held (`infra.model.warm.week_spans`)."""


def node_throughput(jobs_per_node: int, gpus: int, utilization: Fraction | None) -> Fraction:
    """The most minutes of work alone a node gets through per minute: its jobs, at most 1/u per GPU when they
    share it (time-slicing slows n jobs by u x n, MPS caps each at 1/replicas); u None: sharing is free."""
    if utilization is None:
        return Fraction(jobs_per_node)
    per_gpu = Fraction(jobs_per_node, max(1, gpus))
    return min(Fraction(jobs_per_node), max(1, gpus) * max(min(per_gpu, 1 / utilization), Fraction(1)))


def cost_floor(
    *,
    eur_per_hour: Fraction,
    min_size: int,
    throughput: Fraction,
    spans: Sequence[Span],
    work_minutes: Fraction,
    minutes_per_week: int,
) -> Fraction:
    """The least EUR a week the pool can bill (see the module docstring)."""
    warm_minutes = sum((Fraction(end - start) * nodes for start, end, nodes in spans), Fraction(0))
    warm_work = warm_minutes * throughput
    rest = max(Fraction(0), work_minutes - warm_work) / max(Fraction(1), throughput)
    node_minutes = Fraction(min_size * minutes_per_week) + warm_minutes + rest
    return node_minutes * eur_per_hour / 60


@dataclass(frozen=True)
class WaitBounds:
    """Per merge-request job of a pool, what forces its wait past the target, for any candidate's slots."""

    ahead: tuple[int, ...]
    """Per merge-request job: earlier merge-request jobs still running when its wait reaches the target."""
    quiet: tuple[Fraction, ...]
    """Queueing minutes of the merge-request jobs that arrive on a pool that must be empty."""
    cold_start_over: bool
    """Whether the pool's cold start is longer than the target (else a cold arrival can still meet it)."""

    def over(self, slots: int, spans: Sequence[Span], min_size: int, quiet_minutes: Fraction) -> int:
        """Merge-request jobs certainly over the target with `slots` slots and these warm spans."""
        cold = self.cold_start_over and not min_size
        count = 0
        for index, ahead in enumerate(self.ahead):
            if ahead >= slots or (cold and index < len(self.quiet) and _cold(self.quiet[index], spans, quiet_minutes)):
                count += 1
        return count


def wait_bounds(
    jobs: Sequence[PlannedJob], target: Fraction, cold_start: Fraction, slower: Fraction, quiet_minutes: Fraction
) -> WaitBounds:
    """The bounds of one pool's jobs (in queue order) with run times `slower` times their estimate."""
    requests = [job for job in jobs if job.job_class == "merge_request"]
    ahead = []
    for index, job in enumerate(requests):
        deadline = job.created_minute + target
        ahead.append(sum(1 for other in requests[:index] if other.created_minute + other.minutes * slower > deadline))
    created = sorted(job.created_minute for job in jobs)
    quiet = []
    for job in requests:
        earliest = bisect_left(created, job.created_minute - quiet_minutes)
        before = bisect_left(created, job.created_minute)
        quiet.append(job.created_minute if before == earliest else Fraction(-1))
    return WaitBounds(tuple(ahead), tuple(quiet), cold_start > target)


def quiet_minutes(job_timeout: Fraction, scale_down: Fraction) -> Fraction:
    """How long before a job no other may have been queued for the pool to be empty when it arrives: GitLab
    drops a job pending 24 h, a taken one ends within its timeout, an empty node goes after scale-down."""
    return Fraction(GITLAB_PENDING_OUTDATED_MINUTES) + job_timeout + scale_down + 1


def _cold(at: Fraction, spans: Sequence[Span], quiet: Fraction) -> bool:
    """A job queued at `at` on a pool that was quiet before it, with no warm span over that time."""
    if at < 0:
        return False
    return not any(start < at + 1 and end > at - quiet for start, end, _ in spans)
