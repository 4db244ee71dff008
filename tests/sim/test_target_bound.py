"""The target's bound (`infra.sim.target_bound`): worked cases, a brute-force clairvoyant dispatcher on small weeks it
must never beat, and the simulation: no simulated spec that meets the target on a week bills less than that week's
bound.

The brute force is a real dispatch (each job started in its window on a grid, the jobs partitioned over nodes, a
node up from a boot before its first job to its last job's end, jobs sharing its GPU slowed by max(1, u x jobs)):
what it finds is a platform that meets the target, so the bound must be at or below its cheapest.
"""

from __future__ import annotations

import copy
import itertools
import random
from collections.abc import Iterator, Sequence
from fractions import Fraction
from typing import Any

import pytest

from infra.model.platform import load_platform
from infra.offline.stack_config import load_stack_config
from infra.sim.arrivals import week_jobs
from infra.sim.floors import node_throughput
from infra.sim.levers import apply
from infra.sim.target_bound import BoundJob, BoundPool, pool_floor, week_floor
from infra.sim.target_cost import bound_pools, week_bound
from infra.sim.week import simulate_week

F = Fraction
W = F(15)


def _pool(slots: int = 2, utilization: Fraction | None = None, boot: int = 15) -> BoundPool:
    stretch = F(1) if utilization is None else max(F(1), utilization * slots)
    return BoundPool("p", F(60), F(boot), slots, node_throughput(slots, 1, utilization), stretch)


def _mr(at: int, minutes: float) -> BoundJob:
    return BoundJob(F(at), F(str(minutes)), True)


# worked cases (EUR = node-minutes: 60 EUR an hour)


def test_one_burst_on_free_sharing_boots_one_node_for_its_jobs() -> None:
    """Two 30-min jobs at once, 2 slots: one node booted at the queueing (15 min), both run 30 min: 45."""
    floor = pool_floor(_pool(), [_mr(0, 30), _mr(0, 30)], W)
    assert floor.node_minutes == 45
    assert floor.boots == 1 and floor.forced_minutes == 30  # the boot and the 15 min the jobs certainly hold


def test_a_burst_larger_than_a_node_forces_two_nodes_and_its_work_their_time() -> None:
    """8 jobs of 40 min at 34 % on 5 slots: 2 nodes ready by minute 15, and 320 min of work at 1/0.34 a node-minute
    keeps them 108.8 min: 2 x 15 + 108.8 = 138.8 (what 4 jobs a node sharing its GPU at 1.36x take)."""
    floor = pool_floor(_pool(5, F(34, 100)), [_mr(0, 40)] * 8, W)
    assert floor.node_minutes == F("138.8")
    assert floor.boots == 2


def test_a_second_burst_within_a_boot_keeps_the_node_up() -> None:
    """Pairs at 0 and 40: the node, ready at 15, is free again at 45 for the second pair (waiting 5 min): 75."""
    assert pool_floor(_pool(), [_mr(0, 30), _mr(0, 30), _mr(40, 30), _mr(40, 30)], W).node_minutes == 75


def test_a_job_no_longer_than_the_target_forces_no_level_but_still_a_boot() -> None:
    floor = pool_floor(_pool(), [_mr(0, 10)], W)
    assert floor.boots == 0 and floor.node_minutes == 15 + 10


def test_batch_jobs_cost_their_work_and_one_boot() -> None:
    jobs = [BoundJob(F(0), F(60), False), BoundJob(F(600), F(60), False)]
    assert pool_floor(_pool(), jobs, W).node_minutes == 15 + 60  # work / 2 a node-minute, or the longest alone


def test_a_pool_is_never_dearer_than_a_node_all_week() -> None:
    jobs = [_mr(at, 60) for at in range(0, 7 * 24 * 60, 30)]  # two nodes busy all week
    assert pool_floor(_pool(1), jobs, W).node_minutes == 7 * 24 * 60


def test_the_p95_lets_allowed_over_jobs_off_and_never_raises_the_bound() -> None:
    jobs = [("p", _mr(at, 40)) for at in range(0, 2000, 100)]
    strict = week_floor([_pool()], jobs, W, allowed_over=0)
    relieved = week_floor([_pool()], jobs, W, allowed_over=1)
    assert relieved.eur < strict.eur == relieved.strict_eur


# the brute force: a real clairvoyant dispatch on a grid


def _partitions(items: Sequence[int]) -> Iterator[list[list[int]]]:
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for partition in _partitions(rest):
        for index in range(len(partition)):
            yield [*partition[:index], [first, *partition[index]], *partition[index + 1 :]]
        yield [[first], *partition]


def _node_run(
    starts: Sequence[Fraction], minutes: Sequence[Fraction], slots: int, u: Fraction | None
) -> Fraction | None:
    """The end of a node's last job, its jobs started at `starts` sharing one GPU (None: more than `slots` at once)."""
    left = list(minutes)
    running: set[int] = set()
    now = min(starts)
    pending = sorted(range(len(starts)), key=lambda i: starts[i])
    while pending or running:
        while pending and starts[pending[0]] <= now:
            running.add(pending.pop(0))
        if len(running) > slots:
            return None
        if not running:
            now = starts[pending[0]]
            continue
        rate = F(1) / max(F(1), (u or F(0)) * len(running))
        step = min(left[i] for i in running) / rate
        if pending:
            step = min(step, starts[pending[0]] - now)
        for i in running:
            left[i] -= step * rate
        now += step
        running = {i for i in running if left[i] > 0}
    return now


def _brute(pool: BoundPool, jobs: Sequence[BoundJob], u: Fraction | None, grid: int = 5) -> Fraction:
    best: Fraction | None = None
    windows = [range(int(j.created), int(j.created + (W if j.merge_request else 60)) + 1, grid) for j in jobs]
    for starts in itertools.product(*windows):
        for partition in _partitions(list(range(len(jobs)))):
            total = F(0)
            for block in partition:
                end = _node_run([F(starts[i]) for i in block], [jobs[i].minutes for i in block], pool.slots, u)
                if end is None:
                    break
                total += end - min(starts[i] for i in block) + pool.boot
            else:
                best = total if best is None else min(best, total)
    assert best is not None
    return best


@pytest.mark.parametrize("seed", range(40))
def test_no_clairvoyant_dispatch_on_a_small_week_beats_the_bound(seed: int) -> None:
    rng = random.Random(seed)
    u = rng.choice([None, F(1, 2), F(34, 100)])
    pool = _pool(rng.choice([1, 2, 3]), u, rng.choice([5, 10, 15]))
    jobs = [
        BoundJob(F(rng.randrange(0, 60, 5)), F(rng.choice([10, 20, 30, 45])), rng.random() < 0.75)
        for _ in range(rng.choice([1, 2, 3]))
    ]
    found = pool_floor(pool, jobs, W).node_minutes
    best = _brute(pool, jobs, u)
    assert found <= best
    if len(jobs) == 1:
        assert found == best  # a job alone: a boot and its run, exactly


# the simulation never beats it


def _dev() -> dict[str, Any]:
    return copy.deepcopy(load_stack_config("dev").get("platform"))


def _random_spec(rng: random.Random) -> Any:
    """The dev platform with random levers and a small random week (few jobs: a fast simulation)."""
    raw = _dev()
    kinds = raw["workload"]["profiles"]
    for profile in ("rl", "supervised"):
        for kind in kinds[profile]["kinds"].values():
            kind["jobs_per_day"] = rng.choice([0, 1, 2, 8]) if kind["class"] == "batch" else rng.choice([2, 4, 8])
            kind["days"] = rng.choice(["Mon", "Mon-Tue", "Wed,Fri"])
    changes: list[tuple[tuple[str, ...], object]] = [(("slo", "merge_request_wait_minutes"), rng.choice([10, 15, 30]))]
    for pool, most in (("ci-compile", 3), ("ci-training", 4)):
        size = rng.randint(1, most)
        changes.append((("pools", pool, "max_size"), size))
        changes.append((("pools", pool, "cold_start_minutes"), rng.choice([4, 8, 15])))
        if rng.random() < 0.25:
            start = rng.choice(["08:00", "09:00", "12:00"])
            window = {"days": "Mon-Fri", "from": start, "to": "18:00", "nodes": rng.randint(1, size)}
            changes.append((("pools", pool, "warm"), [window]))
    changes.append((("pools", "ci-training", "gpu_sharing", "replicas"), rng.choice([2, 4, 5])))
    if rng.random() < 0.3:
        changes.append((("cluster", "autoscaler", "scale_down_unneeded_time"), rng.choice(["1m", "10m", "30m"])))
    return apply(raw, changes)


@pytest.mark.parametrize("seed", range(24))
def test_no_simulated_spec_that_meets_the_target_bills_less_than_its_bound(seed: int) -> None:
    rng = random.Random(1000 + seed)
    platform = load_platform(_random_spec(rng))
    week = simulate_week(platform)
    assert week is not None
    floor = week_bound(platform, week_jobs(platform), bound_pools(platform))
    if week.failed_jobs == 0 and week.target_met:
        assert week.eur_per_week >= floor.eur
    requests, target = week.waits("merge_request"), platform.spec.slo.merge_request_wait_minutes
    assert target is not None
    if week.failed_jobs == 0 and requests.longest is not None and requests.longest <= target:
        assert week.eur_per_week >= floor.strict_eur  # every merge-request job within the target


def test_the_dev_weeks_bound_is_between_the_work_and_the_spec_that_meets_the_target() -> None:
    """On the dev stack's first week: above the GPU work at each pool's most throughput (the floor that ignores
    boots), below what the recommended spec bills."""
    raw = _dev()
    platform = load_platform(raw)
    jobs = week_jobs(platform)
    floor = week_bound(platform, jobs)
    work = sum((f.work_minutes / f.pool.throughput * f.pool.eur_per_hour / 60 for f in floor.strict), F(0))
    assert floor.fixed_eur + work < floor.eur < floor.strict_eur
    recommended = apply(
        raw,
        [
            (("pools", "ci-compile", "max_size"), 2),
            (("pools", "ci-compile", "warm"), [{"days": "Mon-Fri", "from": "09:00", "to": "18:00", "nodes": 1}]),
            (("pools", "ci-training", "max_size"), 3),
            (("pools", "ci-training", "gpu_sharing", "replicas"), 5),
            (("pools", "ci-training", "warm"), [{"days": "Mon-Fri", "from": "09:00", "to": "18:00", "nodes": 3}]),
        ],
    )
    week = simulate_week(load_platform(recommended))
    assert week is not None and week.target_met
    assert week.eur_per_week > floor.eur
