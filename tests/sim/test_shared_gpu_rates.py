"""A job's work on a shared GPU, which the cluster counts in integers (`JobState.remaining`, in `scale` units), ends
at the very millisecond exact rational arithmetic gives: processor sharing worked out here with Fractions, as the
engine did before it counted in integers, over random changes of the jobs on the GPU."""

from __future__ import annotations

import math
import random
from fractions import Fraction
from types import SimpleNamespace

import pytest

from infra.sim.cluster import Cluster, slowdown
from infra.sim.scenario import SimJob
from infra.sim.schedule import FINISH, Schedule
from infra.sim.state import JobState


def _job(work: int, utilization: Fraction | None) -> JobState:
    return JobState(SimJob(1, "j", frozenset({"t"}), "p", Fraction(work, 60_000)), work, utilization, 0)


def _by_fractions(
    work: int, utilization: Fraction, changes: list[tuple[int, int]], *, mps: bool, replicas: int
) -> list[int]:
    """The finish time set at each change of the job's rate: work left -= elapsed / slowdown, finish = now +
    ceil(work left x slowdown), in Fractions."""
    remaining, rate, since, finishes = Fraction(work), None, 0, []
    for now, sharers in changes:
        if rate is not None:
            remaining -= Fraction(now - since) / rate
        since = now
        new = slowdown(utilization, sharers, mps=mps, replicas=replicas)
        if new != rate:
            rate = new
            finishes.append(now + (0 if remaining <= 0 else math.ceil(remaining * rate)))
    return finishes


def _by_the_cluster(
    work: int, utilization: Fraction, changes: list[tuple[int, int]], *, mps: bool, replicas: int
) -> list[int]:
    """The finish events the cluster pushes for the job over the same changes (the others on its GPU: jobs
    without a utilization, whose own events are left out)."""
    cluster = Cluster((), Schedule(10**9))
    pool = SimpleNamespace(spec=SimpleNamespace(mps=mps, replicas=replicas))
    job = _job(work, utilization)
    job.remaining, job.since = job.work * job.scale, 0
    others = [_job(work, None) for _ in range(max(n for _, n in changes))]
    for now, sharers in changes:
        gpu = [job, *others[: sharers - 1]]
        for other in gpu[1:]:
            other.since = now
        cluster._advance([job], now)
        cluster._reschedule(gpu, pool, now)  # type: ignore[arg-type]
    heap = cluster.schedule.heap
    pushed = sorted(heap, key=lambda event: event[2])  # in the order pushed
    return [at for at, kind, _, payload in pushed if kind == FINISH and payload[0] is job]  # type: ignore[index]


@pytest.mark.parametrize("mps", [False, True], ids=["time-slicing", "mps"])
def test_the_integer_count_finishes_where_fractions_do(mps: bool) -> None:
    rng = random.Random(28)
    for _ in range(400):
        utilization = Fraction(rng.randint(1, 100), rng.choice([100, 3, 7, 1000]))
        utilization = min(utilization, Fraction(1))
        work = rng.randint(1, 90 * 60_000)
        now, changes = 0, [(0, rng.randint(1, 16))]
        for _ in range(rng.randint(0, 12)):
            now += rng.choice([1, 7, 1000, rng.randint(1, 40 * 60_000)])
            changes.append((now, rng.randint(1, 16)))
        replicas = rng.randint(1, 16)
        expected = _by_fractions(work, utilization, changes, mps=mps, replicas=replicas)
        assert _by_the_cluster(work, utilization, changes, mps=mps, replicas=replicas) == expected, (
            work,
            utilization,
            changes,
        )
