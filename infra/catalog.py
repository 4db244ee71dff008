"""The node-type catalogue: what a Scaleway node offers and what it costs, without Pulumi.

Figures are Scaleway's, as recorded from the Instance API (`/instance/v1/zones/{zone}/products/servers`
and `.../availability`) on PRICES_AS_OF. Prices are EUR per hour,
excluding VAT. Every entry can be overridden, and new types added, from the stack config
(`platform.catalog`), because prices move (+5 % in June 2026) and stock differs per zone.

Kapsule does not publish what it reserves per node (kubelet, system, eviction, DaemonSets such as
Cilium and the GPU operator). `DEFAULT_RESERVE` is our stated assumption; measure it on the first node
with `kubectl get node -o jsonpath='{.status.allocatable}'` and override it in config.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from fractions import Fraction

from infra.quantity import Cpu, Memory

PRICES_AS_OF = "2026-07-30"

DEFAULT_RESERVE_CPU = Cpu.parse("1")
DEFAULT_RESERVE_MEMORY = Memory.parse("4Gi")


@dataclass(frozen=True)
class NodeType:
    """One Scaleway node type: capacity, GPU, price and where it can be had."""

    name: str
    vcpus: int
    memory_gib: int
    gpus: int
    gpu_model: str | None
    gpu_memory_gb: int
    eur_per_hour: Fraction
    zones: frozenset[str] | None
    """Zones that sell it; None means the catalogue does not restrict it."""
    reserve_cpu: Cpu = DEFAULT_RESERVE_CPU
    reserve_memory: Memory = DEFAULT_RESERVE_MEMORY

    @property
    def is_gpu(self) -> bool:
        return self.gpus > 0

    @property
    def gpu_summary(self) -> str | None:
        """Its GPUs as the report and the reference show them ("1x L4 24 GB"); None without a GPU."""
        return f"{self.gpus}x {self.gpu_model} {self.gpu_memory_gb} GB" if self.is_gpu else None

    @property
    def allocatable_millicores(self) -> int:
        return self.vcpus * 1000 - self.reserve_cpu.millicores

    @property
    def allocatable_memory_bytes(self) -> int:
        return self.memory_gib * 2**30 - self.reserve_memory.bytes

    @property
    def allocatable_cpu(self) -> Cpu:
        return Cpu.from_millicores(self.allocatable_millicores)

    @property
    def allocatable_memory(self) -> Memory:
        return Memory.from_bytes(self.allocatable_memory_bytes)


def _node(
    name: str,
    vcpus: int,
    memory_gib: int,
    eur_per_hour: str,
    *,
    gpus: int = 0,
    gpu_model: str | None = None,
    gpu_memory_gb: int = 0,
    zones: tuple[str, ...] | None = None,
) -> NodeType:
    return NodeType(
        name=name,
        vcpus=vcpus,
        memory_gib=memory_gib,
        gpus=gpus,
        gpu_model=gpu_model,
        gpu_memory_gb=gpu_memory_gb,
        eur_per_hour=Fraction(eur_per_hour),
        zones=frozenset(zones) if zones is not None else None,
    )


BUILTIN_NODE_TYPES: dict[str, NodeType] = {
    node.name: node
    for node in (
        _node(
            "L4-1-24G",
            8,
            48,
            "0.7875",
            gpus=1,
            gpu_model="NVIDIA L4",
            gpu_memory_gb=24,
            zones=("fr-par-1", "fr-par-2", "pl-waw-2"),
        ),
        _node(
            "L40S-1-48G",
            8,
            96,
            "1.469916",
            gpus=1,
            gpu_model="NVIDIA L40S",
            gpu_memory_gb=48,
            zones=("fr-par-2", "pl-waw-2"),
        ),
        _node(
            "H100-1-80G",
            24,
            240,
            "2.8665",
            gpus=1,
            gpu_model="NVIDIA H100 PCIe",
            gpu_memory_gb=80,
            zones=("fr-par-2", "pl-waw-2"),
        ),
        _node(
            "H100-SXM-2-80G",
            32,
            240,
            "6.6198",
            gpus=2,
            gpu_model="NVIDIA H100 SXM",
            gpu_memory_gb=80,
            zones=("fr-par-2",),
        ),
        _node("RENDER-S", 10, 42, "1.221", gpus=1, gpu_model="NVIDIA P100", gpu_memory_gb=16, zones=("fr-par-1",)),
        # Always-on candidates for the runner manager and kube-system (CPU only).
        _node("PRO2-XXS", 2, 8, "0.0561"),
        _node("POP2-2C-8G", 2, 8, "0.0735"),
        _node("PLAY2-NANO", 2, 4, "0.0275"),
        _node("DEV1-M", 3, 4, "0.0202"),
    )
}


NODE_TYPE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
"""A node type's name as Scaleway spells them (`L4-1-24G`, `PRO2-XXS`; its API answers `l4_1_24g`)."""


def scaleway_key(name: str) -> str:
    """A node type's name as Scaleway compares two of them: case ignored, `-` and `_` alike (its Terraform
    provider, which pulumiverse-scaleway wraps, suppresses a pool's node_type diff on exactly that:
    `dsf.IgnoreCaseAndHyphen` in scaleway/terraform-provider-scaleway internal/dsf/strings.go)."""
    return name.lower().replace("-", "_")


class Catalog:
    """The built-in node types with the stack's overrides applied."""

    def __init__(self, node_types: dict[str, NodeType]) -> None:
        self._node_types = dict(node_types)

    def __contains__(self, name: object) -> bool:
        return name in self._node_types

    def __getitem__(self, name: str) -> NodeType:
        return self._node_types[name]

    def names(self) -> list[str]:
        return sorted(self._node_types)

    def spelled(self, name: str) -> str | None:
        """The catalogue's spelling of the type Scaleway would read `name` as, when `name` is spelled otherwise."""
        key = scaleway_key(name)
        return next((known for known in self.names() if known != name and scaleway_key(known) == key), None)

    def with_override(self, name: str, **fields: object) -> Catalog:
        """A copy where `name` has `fields` replaced (or is added, when all fields are given)."""
        nodes = dict(self._node_types)
        nodes[name] = replace(nodes[name], **fields) if name in nodes else NodeType(name=name, **fields)  # type: ignore[arg-type]
        return Catalog(nodes)


BUILTIN_CATALOG = Catalog(BUILTIN_NODE_TYPES)
