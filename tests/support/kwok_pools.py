"""kwok nodes for a platform's pools, as Kapsule makes them: one per node the pool has at `max_size`, with
the labels (Kapsule's pool-name label, the pool's own, the device plugin's config key), the taints and the
capacity the catalogue and the pool spec give: the node type's vCPUs and memory, its allocatable after the
reserve, and `nvidia.com/gpu` at the GPUs times the pool's sharing replicas (what the device plugin advertises
under time-slicing or MPS)."""

from __future__ import annotations

from typing import Any

from infra.config.pools import POOL_NAME_LABEL
from infra.model.platform import Platform
from infra.model.pools import Pool
from support.cluster import ControlPlane

GPU_RESOURCE = "nvidia.com/gpu"


def node_name(prefix: str, pool: str, index: int) -> str:
    return f"{prefix}-{pool}-{index}"


def gpu_replicas(pool: Pool) -> int:
    """`nvidia.com/gpu` a node of the pool advertises: its GPUs times the sharing replicas."""
    return pool.node.gpus * max(1, pool.sharing.replicas_per_gpu)


def pool_node(pool: Pool) -> dict[str, Any]:
    """The labels, taints, capacity and allocatable of one node of `pool` (`ControlPlane.add_node`'s)."""
    node = pool.node
    capacity = {"cpu": str(node.vcpus), "memory": f"{node.memory_gib}Gi", "pods": "110"}
    allocatable = {"cpu": f"{node.allocatable_millicores}m", "memory": str(node.allocatable_memory_bytes)}
    if node.is_gpu:
        capacity[GPU_RESOURCE] = allocatable[GPU_RESOURCE] = str(gpu_replicas(pool))
    return {
        "labels": {POOL_NAME_LABEL: pool.name, **pool.labels},
        "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in pool.taints],
        "capacity": capacity,
        "allocatable": allocatable,
    }


def add_pool_nodes(plane: ControlPlane, platform: Platform, prefix: str) -> dict[str, list[str]]:
    """Every pool's nodes at `max_size` on `plane`, named `<prefix>-<pool>-<i>`; their names by pool."""
    names: dict[str, list[str]] = {}
    for pool in platform.pools.values():
        for index in range(pool.max_size):
            name = node_name(prefix, pool.name, index)
            plane.add_node(name, **pool_node(pool))
            names.setdefault(pool.name, []).append(name)
    return names
