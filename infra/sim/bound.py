"""The makespan the slots allow (pure): an analytic bound that a good dispatch reaches within 1.1x."""

from __future__ import annotations

from fractions import Fraction

from infra.quantity import exact_decimal
from infra.sim.cluster import slowdown
from infra.sim.scenario import Scenario, SimJob, SimPool, check_scenario


def bound_makespan(scenario: Scenario) -> Fraction:
    """The makespan the slots allow (minutes), the figure a good dispatch reaches within 1.1x.

    Per pool: its cold start (none with a warm node) + ceil(jobs / (slots_per_node x max_nodes)) waves of its
    longest job, counted from the pool's first job's creation; the largest over pools, from the first job's
    creation. With a `gpu_utilization` a wave lasts as long as that job takes sharing its GPU: a full wave
    with ceil(slots_per_node / gpus_per_node) jobs per GPU, a last partial wave spread as thin as the nodes
    and GPUs allow (MPS: max(1, u x replicas) always). A pool with max_nodes 0 and jobs has no bound: its
    jobs never run (ValueError).
    """
    check_scenario(scenario)
    if not scenario.jobs:
        return Fraction(0)
    first = min(exact_decimal(j.created_minute) for j in scenario.jobs)
    bound = Fraction(0)
    for pool in scenario.pools:
        jobs = [j for j in scenario.jobs if j.pool == pool.name]
        if not jobs:
            continue
        if pool.max_nodes == 0:
            raise ValueError(f"SimPool {pool.name!r}: max_nodes is 0 but {len(jobs)} job(s) need it")

        def wave(sharers: int, jobs: list[SimJob] = jobs, pool: SimPool = pool) -> Fraction:
            return max(
                exact_decimal(j.minutes) * slowdown(j.exact_utilization, sharers, mps=pool.mps, replicas=pool.replicas)
                for j in jobs
            )

        full_waves, rest = divmod(len(jobs), pool.slots_per_node * pool.max_nodes)
        length = full_waves * wave(pool.full_gpu)
        if rest:
            length += wave(-(-rest // (pool.max_nodes * pool.gpus_per_node)))
        cold = Fraction(0) if pool.warm_nodes else exact_decimal(pool.cold_start_minutes)
        start = min(exact_decimal(j.created_minute) for j in jobs) - first
        bound = max(bound, start + cold + length)
    return bound
