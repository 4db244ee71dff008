"""The placement model on its own (`infra.sim.cluster.Cluster.bind`), on the scenario that
tests/engine/test_cluster_checks.py drives through the real scheduler (`support.kube_scenario.simulated`): the steps
the scheduler takes there, held here without a cluster, so that a change of the model shows in the fast suite and not
only where the engine is built."""

from __future__ import annotations

import pytest
from support.kube_scenario import Step, simulated
from support.warm_variant import GPU_POOLS, NODES, warm_platform

from infra.model.platform import load_platform
from infra.offline.stack_config import StackConfig
from infra.sim.platform_scenario import sim_pools


def _spread(jobs: int) -> tuple[tuple[int, bool], ...]:
    """`jobs` spread over NODES nodes beside a placeholder each, as LeastAllocated spreads pods of one size."""
    return tuple(sorted((jobs // NODES + (1 if i < jobs % NODES else 0), True) for i in range(NODES)))


@pytest.mark.parametrize("pool", GPU_POOLS)
def test_jobs_spread_then_each_preempts_one_placeholder_then_the_last_waits(dev_stack: StackConfig, pool: str) -> None:
    (spec,) = (p for p in sim_pools(load_platform(warm_platform(dev_stack.get("platform")))) if p.name == pool)
    free = (spec.slots_per_node - 1) * NODES  # a placeholder holds one slot of each node
    steps = simulated(spec, NODES, spec.slots_per_node * NODES + 1)
    assert steps[:free] == [Step(steps[i].node, _spread(i + 1), 0) for i in range(free)]
    preempting = steps[free : free + NODES]
    assert all(step.node is not None and step.preempted == 1 for step in preempting), preempting
    assert preempting[-1].nodes == ((spec.slots_per_node, False),) * NODES
    (last,) = steps[free + NODES :]
    assert (last.node, last.preempted) == (None, 0)  # the recreated placeholders preempt nothing either
    assert all(step.node is not None for step in steps[:-1])
