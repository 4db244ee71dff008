"""Capacity math, without Pulumi: how many jobs of a profile one node takes, and what binds it.

A GPU pool's jobs-per-node is its GPU sharing replicas (the scheduler enforces it: each job requests
one `nvidia.com/gpu`), unless fewer fit the node's allocatable CPU or memory by their requests. The pool
takes the tightest over its profiles (`infra.model.pools`); whether a full node fits at all, and what
overcommits, is checked by `infra.model.checks`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from infra.quantity import Cpu, Memory

if TYPE_CHECKING:
    from infra.catalog import NodeType
    from infra.config.pools import PoolSpec
    from infra.config.profiles import ProfileSpec


MANAGER_CPU_REQUEST = Cpu.parse("100m")
MANAGER_MEMORY_REQUEST = Memory.parse("128Mi")
"""What one runner manager pod asks of the manager pool (its Helm values set these requests)."""


@dataclass(frozen=True)
class ProfileFit:
    """How many jobs of one profile one node of its pool could hold, by each resource."""

    profile: str
    pool: str
    gpu_slots: int
    by_cpu: int
    by_memory: int

    @property
    def jobs_per_node(self) -> int:
        return min(self.gpu_slots, self.by_cpu, self.by_memory)

    @property
    def binding(self) -> str:
        """The resource(s) that set jobs_per_node, e.g. "GPU replicas" or "GPU replicas = CPU"."""
        limits = {"GPU replicas": self.gpu_slots, "CPU": self.by_cpu, "memory": self.by_memory}
        return " = ".join(name for name, count in limits.items() if count == self.jobs_per_node)


def gpu_slots(pool: PoolSpec, node: NodeType) -> int:
    """Jobs one node of the pool schedules: GPUs x sharing replicas (CPU pools run no CI jobs)."""
    return node.gpus * pool.gpu_sharing.replicas_per_gpu


def profile_fit(name: str, profile: ProfileSpec, pool: PoolSpec, node: NodeType) -> ProfileFit:
    return ProfileFit(
        profile=name,
        pool=profile.pool,
        gpu_slots=gpu_slots(pool, node),
        by_cpu=node.allocatable_millicores // profile.cpu_request.millicores,
        by_memory=node.allocatable_memory_bytes // profile.memory_request.bytes,
    )


def gpu_memory_per_replica_gb(pool: PoolSpec, node: NodeType) -> Fraction:
    """One job's share of its GPU's memory: enforced by MPS (total / replicas), only nominal otherwise."""
    return Fraction(node.gpu_memory_gb) / pool.gpu_sharing.replicas_per_gpu


def format_gb(amount: Fraction) -> str:
    value = float(amount)
    return f"{value:.0f} GB" if value == int(value) else f"{value:.1f} GB"
