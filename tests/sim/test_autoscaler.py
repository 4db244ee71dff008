"""The cluster-autoscaler as Scaleway's template node makes it count, and warm capacity's placeholders as the
overprovisioning pattern really behaves: N Pending job pods ask for one node each (the template holds the
physical GPU, not the replicas), and a placeholder a job preempts is recreated, Pending, and gets a node."""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction

import pytest

from infra.sim.engine import simulate
from infra.sim.scenario import Scenario, SimJob, SimPool, SimRunner

TAGS = frozenset({"kapsule", "ci-training"})


def _pool(**overrides: object) -> SimPool:
    """An L40S-like pool: 4 jobs share its one GPU, 15-min boots, scale-down after 5 min."""
    pool = SimPool("ci-training", 4, 1, 3, 0, 15, Fraction("1.4699"), 5, 5, template_slots=1)
    return replace(pool, **overrides)  # type: ignore[arg-type]


def _run(pool: SimPool, jobs: list[SimJob], concurrent: int | None = None) -> Scenario:
    runner = SimRunner(
        "ci-training", TAGS, frozenset({pool.name}), concurrent or pool.slots_per_node * pool.max_nodes, 49, 210
    )
    return Scenario(pools=(pool,), runners=(runner,), jobs=tuple(jobs))


def _jobs(count: int, minutes: float = 40, at: float = 0, first: int = 1) -> list[SimJob]:
    return [SimJob(first + i, f"j{first + i}", TAGS, "ci-training", minutes, created_minute=at) for i in range(count)]


@pytest.mark.parametrize(
    ("pending", "max_nodes", "template", "nodes"),
    [
        (8, 3, 1, 3),  # the template holds one GPU: 8 pods ask 8 nodes, max_size caps them at 3
        (8, 3, 0, 2),  # the model before: the template held the 4 replicas, 8 pods asked 2 nodes
        (2, 3, 1, 2),
        (8, 12, 1, 8),
        (1, 3, 1, 1),
    ],
)
def test_pending_pods_on_a_pool_at_zero_ask_one_node_per_gpu(
    pending: int, max_nodes: int, template: int, nodes: int
) -> None:
    result = simulate(_run(_pool(max_nodes=max_nodes, template_slots=template), _jobs(pending)))
    pool = result.pool("ci-training")
    assert (pool.nodes_created, result.failed) == (nodes, ())
    assert all(created == 0 for _, created, _ in pool.boots)  # all asked for at once, in one scale-up


def test_the_extra_nodes_are_billed_until_scale_down() -> None:
    """8 jobs on max_size 3: 3 L40S boot where 2 would do; the pods spread over all three (LeastAllocated)."""
    one_by_gpu = simulate(_run(_pool(), _jobs(8)))
    by_replicas = simulate(_run(_pool(template_slots=0), _jobs(8)))
    assert one_by_gpu.pool("ci-training").scaled_node_minutes > by_replicas.pool("ci-training").scaled_node_minutes
    assert len({job.node for job in one_by_gpu.jobs}) == 3 and len({job.node for job in by_replicas.jobs}) == 2
    assert one_by_gpu.failed == by_replicas.failed == ()


def test_a_pool_not_at_zero_asks_for_the_pods_no_free_slot_or_booting_node_holds() -> None:
    """One node up and full: 2 more pods ask 2 nodes; a third, while those boot, one more (each booting node
    holds one pod as the template counts it), up to max_size."""
    jobs = [*_jobs(4), *_jobs(2, at=20, first=5), *_jobs(1, at=25, first=7)]
    result = simulate(_run(_pool(max_nodes=4, warm_nodes=1), jobs))
    assert sorted(created for _, created, _ in result.pool("ci-training").boots) == [20, 20, 25]
    at_max = simulate(_run(_pool(max_nodes=2, warm_nodes=1), jobs))
    assert sorted(created for _, created, _ in at_max.pool("ci-training").boots) == [20]


def test_free_slots_on_a_ready_node_ask_for_nothing() -> None:
    result = simulate(_run(_pool(), [*_jobs(1), *_jobs(3, at=20, first=2)]))
    assert result.pool("ci-training").nodes_created == 1
    assert all(job.node_wait == 0 for job in result.jobs if job.created == 20)


def test_a_preempted_placeholder_is_recreated_pending_and_gets_a_node() -> None:
    """Warm 1 node: a placeholder holds one of its 4 slots; 3 jobs take the free ones, a 4th preempts it, and
    its Deployment's new pod is Pending: the autoscaler adds a node for it, billed while the window lasts."""
    warm = _pool(warm_windows=((0, 120, 1),))
    three = simulate(_run(warm, _jobs(3, at=30)))
    four = simulate(_run(warm, _jobs(4, at=30)))
    assert three.pool("ci-training").nodes_created == 1  # the warm node only
    assert four.pool("ci-training").nodes_created == 2
    (_, created, _) = four.pool("ci-training").boots[1]
    assert created == 30  # at the preemption
    assert all(job.node_wait == 0 for job in four.jobs)  # the job itself did not wait
    assert four.pool("ci-training").scaled_node_minutes > three.pool("ci-training").scaled_node_minutes


def test_a_placeholder_at_max_size_stays_pending() -> None:
    warm = _pool(max_nodes=1, warm_windows=((0, 120, 1),))
    result = simulate(_run(warm, _jobs(4, at=30)))
    assert result.pool("ci-training").nodes_created == 1 and result.failed == ()


def test_a_warm_window_opening_mid_burst_asks_as_the_template_counts() -> None:
    """Two jobs Pending on a cold pool, two nodes booting for them, when a 2-node window opens: the autoscaler
    counts each booting node as one pod, so the two placeholders ask for more nodes (up to max_size), though
    the nodes booting would hold them all; the placeholders then keep two nodes up to the window's end."""
    result = simulate(_run(_pool(warm_windows=((10, 200, 2),)), _jobs(2, at=5)))
    assert sorted(created for _, created, _ in result.pool("ci-training").boots) == [5, 5, 10]
    assert result.failed == () and result.end >= 200
    before = simulate(_run(_pool(warm_windows=((0, 200, 2),)), _jobs(2, at=30)))
    assert before.pool("ci-training").nodes_created == 2
    assert all(job.node_wait == 0 for job in before.jobs)  # the window opened before the burst: warm


def test_random_orders_and_slower_jobs_lose_nothing_with_the_template_count() -> None:
    generator = random.Random(7)
    for minutes in (40, 44):
        jobs = _jobs(12, minutes=minutes)
        ids = generator.sample(range(1, 13), 12)
        shuffled = [replace(job, id=ids[i]) for i, job in enumerate(jobs)]
        result = simulate(_run(_pool(warm_windows=((0, 60, 1),)), shuffled))
        assert result.failed == () and result.pool("ci-training").peak_nodes == 3


def test_a_warm_count_that_changes_through_the_day_is_what_each_burst_finds() -> None:
    """Adjacent windows of 2, 1 and 3 nodes (a morning, a lunch dip, an afternoon peak): 8 jobs in the morning
    start at once on the two warm nodes, 8 at lunch find one node's 4 slots and the other 4 wait a boot, 12 in
    the afternoon start at once on three nodes; the placeholders ask for the count of the window open, not of
    the day's first."""
    pool = _pool(max_nodes=3, warm_windows=((0, 60, 2), (60, 180, 1), (180, 300, 3)))
    jobs = _jobs(8, minutes=20, at=30) + _jobs(8, minutes=20, at=120, first=9) + _jobs(12, minutes=20, at=200, first=17)
    result = simulate(_run(pool, jobs))
    waits = [job.node_wait for job in sorted(result.jobs, key=lambda job: job.id)]
    assert result.failed == ()
    assert waits[:8] == [0] * 8 and sorted(waits[8:16]) == [0] * 4 + [15] * 4 and waits[16:] == [0] * 12
    assert len({job.node for job in result.jobs if job.id > 16}) == 3
    booted = [created for _, created, _ in result.pool("ci-training").boots]
    assert sum(1 for at in booted if at == 180) == 2  # the afternoon's window boots the two nodes the lunch dip let go
