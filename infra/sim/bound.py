"""The shortest makespan any dispatch of a scenario that runs every job can reach (pure): a lower bound, what a
good dispatch nears (a dispatch that loses jobs may end sooner: short and wrong).

Per pool, no job runs before a node of the pool is ready: at once with a warm node (`warm_nodes`), else the
pool's fastest boot after its first job's queueing or its first warm window's start, whichever is earlier. From
then on the pool gets through at most `max_nodes` x a node's most throughput of work a minute (jobs alone run at
most at full speed, jobs sharing a GPU of utilisation u together at most 1/u: `infra.sim.floors.node_throughput`),
and no job ends sooner than its own length (at its GPU's fastest: alone, or capped by MPS) after it is queued and
a node is ready. Stock-outs, upgrades, retries and the scheduler's choices only delay. The makespan counts from
the first job's queueing.
"""

from __future__ import annotations

from fractions import Fraction

from infra.quantity import exact_decimal
from infra.sim.cluster import slowdown
from infra.sim.floors import node_throughput
from infra.sim.scenario import Scenario, check_scenario


def bound_makespan(scenario: Scenario) -> Fraction:
    """The least makespan (minutes) of any dispatch of `scenario` (see the module docstring); a pool with
    max_nodes 0 and jobs has none: its jobs never run (ValueError)."""
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
        queued = min(exact_decimal(j.created_minute) for j in jobs)
        warmed = min((exact_decimal(start) for start, _, _ in pool.warm_windows), default=queued)
        ready = first if pool.warm_nodes else min(queued, warmed) + pool.boots.fastest
        utilizations = [j.exact_utilization for j in jobs]
        least = None if None in utilizations else min(u for u in utilizations if u is not None)
        rate = pool.max_nodes * node_throughput(pool.slots_per_node, pool.gpus_per_node, least)
        work = sum((exact_decimal(j.minutes) for j in jobs), Fraction(0))
        bound = max(bound, ready + work / rate)
        for job in jobs:
            alone = slowdown(job.exact_utilization, 1, mps=pool.mps, replicas=pool.replicas)
            bound = max(bound, max(exact_decimal(job.created_minute), ready) + exact_decimal(job.minutes) * alone)
    return bound - first
