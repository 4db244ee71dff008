"""Capacity math, without Pulumi: how many jobs a node takes, what binds it, what a pool costs.

A GPU pool's jobs-per-node is its GPU sharing replicas (the scheduler enforces it: each job requests
one `nvidia.com/gpu`). The spec is only valid if that many jobs of each profile also fit the node's
allocatable CPU and memory by their requests; limits above allocatable are overcommit, a warning.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Literal

from infra.config.base import MAX_POOL_NODES
from infra.config.errors import Problem, key_path
from infra.config.runner import manager_pool, targeted_pools
from infra.quantity import Cpu, Memory, exact_decimal, format_gib

if TYPE_CHECKING:
    from infra.catalog import NodeType
    from infra.config.platform import PlatformSpec
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


def fit_problems(spec: PlatformSpec) -> list[Problem]:
    """Errors where a full node of jobs does not fit by requests; warnings where limits overcommit."""
    problems: list[Problem] = []
    for name, profile in sorted(spec.profiles.items()):
        node = spec.pool_node(profile.pool)
        if node is None or not node.is_gpu:
            continue  # reported as a reference error
        pool = spec.pools[profile.pool]
        slots = gpu_slots(pool, node)
        # (key, text, per job, allocatable, shown as, severity when n jobs do not fit; None: not checked).
        # One job above the node is an error for limits too: the limit becomes the runner's maximum, and a
        # job could never use it. n CPU limits above the node only throttle; n memory limits risk OOM.
        checks: tuple[tuple[str, str, int, int, Callable[[int], str], Literal["error", "warning"] | None], ...] = (
            (
                "cpu_request",
                profile.cpu_request.text,
                profile.cpu_request.millicores,
                node.allocatable_millicores,
                _millicores,
                "error",
            ),
            (
                "cpu_limit",
                profile.cpu_limit.text,
                profile.cpu_limit.millicores,
                node.allocatable_millicores,
                _millicores,
                None,
            ),
            (
                "memory_request",
                profile.memory_request.text,
                profile.memory_request.bytes,
                node.allocatable_memory_bytes,
                _gib,
                "error",
            ),
            (
                "memory_limit",
                profile.memory_limit.text,
                profile.memory_limit.bytes,
                node.allocatable_memory_bytes,
                _gib,
                "warning",
            ),
        )
        too_large: set[str] = set()
        for key, text, per_job, allocatable, show, severity in checks:
            where = f"one {pool.node_type} node's allocatable {show(max(allocatable, 0))}"
            resource = key.split("_")[0]
            if per_job > allocatable:
                if resource not in too_large:  # a limit above a request that is already too large: said once
                    problems.append(Problem(key_path("profiles", name, key), text, f"is larger than {where}"))
                too_large.add(resource)
            elif severity is not None and slots * per_job > allocatable:
                verb = "exceeds" if severity == "error" else "overcommits"
                reason = f"x {slots} jobs per node = {show(slots * per_job)} {verb} {where}"
                reason += "; lower it or the pool's replicas" if severity == "error" else " (OOM if all hit the limit)"
                problems.append(Problem(key_path("profiles", name, key), text, reason, severity))
        problems += _gpu_memory_problems(name, profile, pool, node)
    return problems + _quota_problems(spec) + _manager_problems(spec) + _idle_gpu_pool_problems(spec)


def _quota_problems(spec: PlatformSpec) -> list[Problem]:
    """All pools at max_size together stay within MAX_POOL_NODES (each pool alone is bounded by its field)."""
    total = sum(pool.max_size for pool in spec.pools.values())
    if total <= MAX_POOL_NODES:
        return []
    sizes = {name: pool.max_size for name, pool in sorted(spec.pools.items())}
    return [
        Problem(
            key_path("pools"),
            sizes,
            f"{total} nodes at max_size in all, above gpu-ci's quota of {MAX_POOL_NODES} (docs/config-limits.md)",
        )
    ]


def _manager_problems(spec: PlatformSpec) -> list[Problem]:
    """The manager pool must hold every runner manager (one per GPU pool a profile targets) after the node's
    reserve: PLAY2-NANO (4 GiB) minus the default 4Gi reserve holds none. The managers' requests are the ones
    their Helm values set (`MANAGER_*_REQUEST`: the chart's default resources are empty)."""
    name = manager_pool(spec)
    node = spec.pool_node(name) if name is not None else None
    if name is None or node is None or node.is_gpu:
        return []  # reported by the runner's checks
    managers = max(1, sum(spec.is_gpu_pool(pool) for pool in targeted_pools(spec)))
    cpu, memory = MANAGER_CPU_REQUEST.millicores * managers, MANAGER_MEMORY_REQUEST.bytes * managers
    short = [
        f"{what} {shown(max(have, 0))} < {shown(need)}"
        for what, have, need, shown in (
            ("CPU", node.allocatable_millicores, cpu, _millicores),
            ("memory", node.allocatable_memory_bytes, memory, _mib),
        )
        if have < need
    ]
    if not short:
        return []
    each = f"{MANAGER_CPU_REQUEST}, {MANAGER_MEMORY_REQUEST} each"
    return [
        Problem(
            key_path("pools", name, "node_type"),
            spec.pools[name].node_type,
            f"cannot hold the {managers} runner manager{'s' if managers > 1 else ''} ({each}): allocatable "
            f"{', '.join(short)} after the node's reserve; pick a larger type or lower allocatable_reserve",
        )
    ]


def _idle_gpu_pool_problems(spec: PlatformSpec) -> list[Problem]:
    """A GPU pool no profile targets takes no CI job: a warning, it is probably a typo or a leftover."""
    targeted = targeted_pools(spec)
    return [
        Problem(
            key_path("pools", name),
            spec.pools[name].node_type,
            "no profile targets this GPU pool: no CI job will run on it (point a profile's pool at it, or remove it)",
            "warning",
        )
        for name in spec.gpu_pools()
        if name not in targeted
    ]


def gpu_memory_per_replica_gb(pool: PoolSpec, node: NodeType) -> Fraction:
    """One job's share of its GPU's memory: enforced by MPS (total / replicas), only nominal otherwise."""
    return Fraction(node.gpu_memory_gb) / pool.gpu_sharing.replicas_per_gpu


def _gpu_memory_problems(name: str, profile: ProfileSpec, pool: PoolSpec, node: NodeType) -> list[Problem]:
    """A job's stated VRAM need against its GPU: MPS caps each replica at total / replicas (an error when the
    need is above it); time-slicing does not isolate memory, so jobs that could not all fit may OOM each other."""
    if profile.gpu_memory_gb is None or not node.gpu_memory_gb:
        return []
    need = exact_decimal(profile.gpu_memory_gb)
    shown = int(need) if need.denominator == 1 else profile.gpu_memory_gb  # 16, as written, not 16.0
    path = key_path("profiles", name, "gpu_memory_gb")
    sharing, total = pool.gpu_sharing, node.gpu_memory_gb
    replicas = sharing.replicas_per_gpu
    gpu = f"one {pool.node_type} GPU's {total} GB"
    if need > total:
        return [Problem(path, shown, f"is more than {gpu}")]
    share = gpu_memory_per_replica_gb(pool, node)
    if sharing.isolates_memory and replicas > 1 and need > share:
        reason = (
            f"is more than one MPS replica's share of {gpu} / {replicas} = {format_gb(share)}; "
            "lower the pool's replicas or use time-slicing"
        )
        return [Problem(path, shown, reason)]
    if not sharing.isolates_memory and need * replicas > total:
        reason = (
            f"x {replicas} jobs per GPU = {format_gb(need * replicas)} exceeds {gpu}: "
            "time-slicing does not isolate GPU memory, so jobs may OOM each other"
        )
        return [Problem(path, shown, reason, "warning")]
    return []


def format_gb(amount: Fraction) -> str:
    value = float(amount)
    return f"{value:.0f} GB" if value == int(value) else f"{value:.1f} GB"


def _millicores(value: int) -> str:
    return f"{value}m"


def _mib(value: int) -> str:
    return f"{value // 2**20}Mi"


def _gib(value: int) -> str:
    return format_gib(Fraction(value, 2**30))
