"""`platform.catalog` and `platform.allocatable_reserve`: overrides of the built-in node catalogue."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Annotated

from pydantic import Field

from infra.catalog import BUILTIN_CATALOG, DEFAULT_RESERVE_CPU, DEFAULT_RESERVE_MEMORY, Catalog, NodeType
from infra.config.base import MAX_LIST, CpuQuantity, MemoryQuantity, SpecModel, StrictInt

MAX_VCPUS = 512
MAX_MEMORY_GIB = 8192
MAX_GPUS = 16
MAX_GPU_MEMORY_GB = 1024
MAX_EUR_PER_HOUR = 1000
"""Bounds of a node type's figures: well above Scaleway's largest instances, low enough to catch a slip."""


class ReserveSpec(SpecModel):
    """What a node keeps for itself (kubelet, system, eviction threshold, DaemonSets): an assumption."""

    cpu: CpuQuantity = DEFAULT_RESERVE_CPU
    """CPU a node keeps for kubelet, system and DaemonSets (Kapsule does not publish it: measure it)."""
    memory: MemoryQuantity = DEFAULT_RESERVE_MEMORY
    """Memory a node keeps for kubelet, system, the eviction threshold and DaemonSets."""


class NodeTypeSpec(SpecModel):
    """A node type's figures; for a built-in type, only the fields given replace the catalogue's."""

    vcpus: StrictInt | None = Field(None, ge=1, le=MAX_VCPUS)
    """vCPUs of one node."""
    memory_gib: StrictInt | None = Field(None, ge=1, le=MAX_MEMORY_GIB)
    """Memory of one node, GiB."""
    gpus: StrictInt | None = Field(None, ge=0, le=MAX_GPUS)
    """GPUs of one node (0: a CPU type)."""
    gpu_model: str | None = Field(None, max_length=128)
    """GPU model, for the report (e.g. `NVIDIA L4`)."""
    gpu_memory_gb: StrictInt | None = Field(None, ge=0, le=MAX_GPU_MEMORY_GB)
    """Memory of one GPU, GB: what profiles' `gpu_memory_gb` is checked against."""
    eur_per_hour: Decimal | None = Field(None, ge=0, le=MAX_EUR_PER_HOUR, allow_inf_nan=False, max_digits=16)
    """Price of one node-hour, EUR excluding VAT (prices move: re-read them)."""
    zones: tuple[Annotated[str, Field(max_length=32)], ...] | None = Field(None, max_length=MAX_LIST)
    """Zones that sell the type (a pool elsewhere is refused); None: not restricted."""
    reserve: ReserveSpec | None = None
    """This type's reserve, instead of `allocatable_reserve`."""

    def missing_for_new_type(self) -> list[str]:
        """Fields a type absent from the built-in catalogue must state."""
        required = ("vcpus", "memory_gib", "gpus", "eur_per_hour")
        return [name for name in required if getattr(self, name) is None]


def build_catalog(overrides: dict[str, NodeTypeSpec], reserve: ReserveSpec) -> Catalog:
    """The built-in catalogue with the stack's default reserve, then its per-type overrides."""
    catalog = BUILTIN_CATALOG
    for name in catalog.names():
        catalog = catalog.with_override(name, reserve_cpu=reserve.cpu, reserve_memory=reserve.memory)
    for name, spec in sorted(overrides.items()):
        if name not in catalog and spec.missing_for_new_type():
            continue  # incomplete new type: reported by the spec's checks
        fields: dict[str, object] = {
            key: value
            for key, value in (
                ("vcpus", spec.vcpus),
                ("memory_gib", spec.memory_gib),
                ("gpus", spec.gpus),
                ("gpu_model", spec.gpu_model),
                ("gpu_memory_gb", spec.gpu_memory_gb),
                ("eur_per_hour", Fraction(spec.eur_per_hour) if spec.eur_per_hour is not None else None),
                ("zones", frozenset(spec.zones) if spec.zones is not None else None),
            )
            if value is not None
        }
        node_reserve = spec.reserve or reserve
        fields.update(reserve_cpu=node_reserve.cpu, reserve_memory=node_reserve.memory)
        if name not in catalog:
            fields.setdefault("gpu_model", None)
            fields.setdefault("gpu_memory_gb", 0)
            fields.setdefault("zones", None)
        catalog = catalog.with_override(name, **fields)
    return catalog


__all__ = ["NodeType", "NodeTypeSpec", "ReserveSpec", "build_catalog"]
