"""One small scenario, driven through the real scheduler on kwok nodes and through the simulation's model of it
(`infra.sim.cluster.Cluster.bind`, where the simulation decides placement and preemption), step by step, so
that the engine tests can compare the two (tests/engine/test_cluster_checks.py; docs/simulation.md).

The scenario, per GPU pool: its nodes at `max_size` up and ready, its warm window's placeholders bound (one per
node), then the pool's job pods submitted one at a time, one more than the pool's nodes hold. After each job, a
`Step`: where the job went, each node's jobs and whether a placeholder holds one of its slots, and how many
placeholders were preempted.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from infra.sim.cluster import Cluster
from infra.sim.scenario import SimJob, SimPool
from infra.sim.schedule import Schedule
from infra.sim.state import JobState
from support.cluster import ControlPlane

MINUTE_MS = 60_000
SETTLE_TIMEOUT = 60.0


@dataclass(frozen=True)
class Step:
    """The state after one more job of a pool was submitted."""

    node: str | None
    """Where the job runs (None: Pending)."""
    nodes: tuple[tuple[int, bool], ...]
    """Each node's (jobs, holds a placeholder), sorted: nodes are alike, their names are not compared."""
    preempted: int
    """Placeholders this job's arrival removed from a node."""


def simulated(pool: SimPool, placeholders: int, jobs: int) -> list[Step]:
    """The scenario through the model: the pool's nodes ready at 0, `placeholders` of its warm window, then
    `jobs` pods of the pool, each bound (or left Pending) at once."""
    spec = dataclasses.replace(pool, warm_nodes=pool.max_nodes, warm_windows=(), stockouts=())
    cluster = Cluster((spec,), Schedule(budget=10_000))
    state = cluster.pools[spec.name]
    cluster.warm(state, placeholders, 0)
    cluster.bind(0)
    steps = []
    for index in range(jobs):
        held = {id(node) for node in state.live if node.placeholder}
        job = JobState(SimJob(index, f"job-{index}", frozenset(), spec.name, 60), 60 * MINUTE_MS, None, 0)
        job.state = "pending"
        cluster.add_pod(job)
        cluster.bind(0)
        preempted = sum(1 for node in state.live if id(node) in held and not node.placeholder)
        steps.append(
            Step(
                job.node.name if job.node is not None else None,
                tuple(sorted((node.used, node.placeholder) for node in state.live)),
                preempted,
            )
        )
    return steps


def label_selector(labels: Mapping[str, str]) -> str:
    """`labels` as a `labelSelector` query value (`k%3Dv,...`)."""
    return ",".join(f"{key}%3D{value}" for key, value in labels.items())


def pods(plane: ControlPlane, namespace: str, selector: str) -> list[dict[str, Any]]:
    return list(plane.get(f"/api/v1/namespaces/{namespace}/pods?labelSelector={selector}")["items"])


def condition(pod: Mapping[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in pod["status"].get("conditions", []) if c["type"] == kind), {})


def settled(pod: Mapping[str, Any]) -> bool:
    """Running on a node, or Pending with nowhere to go: unschedulable and no node nominated (a preemption
    under way nominates one)."""
    if pod["metadata"].get("deletionTimestamp"):
        return False
    if pod["status"].get("phase") == "Running":
        return True
    unschedulable = condition(pod, "PodScheduled").get("reason") == "Unschedulable"
    return unschedulable and not pod["status"].get("nominatedNodeName") and not pod["spec"].get("nodeName")


@dataclass
class RealPool:
    """The scenario through the real scheduler: the pool's kwok nodes, its placeholders' Deployment (their
    namespace and label selector) and the namespace the job pods go to."""

    plane: ControlPlane
    nodes: list[str]
    placeholder_namespace: str
    placeholder_selector: str

    def _settled(self, path: str) -> dict[str, Any] | None:
        pod: dict[str, Any] = self.plane.get(path)
        return pod if settled(pod) else None

    def placeholders(self) -> list[dict[str, Any]]:
        return pods(self.plane, self.placeholder_namespace, self.placeholder_selector)

    def wait_placeholders(self, count: int, *, bound: bool = False) -> list[dict[str, Any]]:
        """The placeholders, once `count` of them exist and each is settled (`bound`: running)."""

        def probe() -> list[dict[str, Any]] | None:
            found = [p for p in self.placeholders() if not p["metadata"].get("deletionTimestamp")]
            ready = all(p["status"].get("phase") == "Running" if bound else settled(p) for p in found)
            return found if len(found) == count and ready else None

        return self.plane.wait_for(f"{count} placeholders settled", probe, SETTLE_TIMEOUT)

    def run(
        self, jobs: list[dict[str, Any]], placeholders: int, record: Callable[[dict[str, Any]], None]
    ) -> list[Step]:
        """Submits each job pod, waits until it and the placeholders settle, and records a Step; `record`
        sees each job pod as it settled."""
        namespace = jobs[0]["metadata"]["namespace"]
        steps = []
        bound = {p["metadata"]["name"] for p in self.wait_placeholders(placeholders, bound=True)}
        submitted: list[str] = []
        for job in jobs:
            created = self.plane.request("POST", f"/api/v1/namespaces/{namespace}/pods", job)
            assert created.status_code == 201, created.text
            name = job["metadata"]["name"]
            submitted.append(name)
            path = f"/api/v1/namespaces/{namespace}/pods/{name}"
            pod = self.plane.wait_for(f"job pod {name} settled", functools.partial(self._settled, path))
            holders = self.wait_placeholders(placeholders)
            record(pod)
            now = {p["metadata"]["name"] for p in holders if p["spec"].get("nodeName")}
            running = [self.plane.get(f"/api/v1/namespaces/{namespace}/pods/{n}") for n in submitted]
            per_node = {
                node: (
                    sum(1 for p in running if p["spec"].get("nodeName") == node),
                    any(p["spec"].get("nodeName") == node for p in holders),
                )
                for node in self.nodes
            }
            steps.append(Step(pod["spec"].get("nodeName"), tuple(sorted(per_node.values())), len(bound - now)))
            bound = now
        return steps
