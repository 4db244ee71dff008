"""The node catalogue: Scaleway's figures as recorded, allocatable from the stated reserve, overrides."""

from fractions import Fraction

from infra.catalog import BUILTIN_CATALOG, PRICES_AS_OF
from infra.quantity import Cpu, Memory


def test_design_node_types_carry_scaleways_recorded_figures() -> None:
    l4, l40s = BUILTIN_CATALOG["L4-1-24G"], BUILTIN_CATALOG["L40S-1-48G"]
    assert PRICES_AS_OF == "2026-07-30"
    assert (l4.vcpus, l4.memory_gib, l4.gpus, l4.gpu_memory_gb, l4.eur_per_hour) == (8, 48, 1, 24, Fraction("0.7875"))
    assert (l40s.vcpus, l40s.memory_gib, l40s.gpus, l40s.gpu_memory_gb) == (8, 96, 1, 48)
    assert round(float(l40s.eur_per_hour), 4) == 1.4699


def test_l40s_is_only_sold_in_par2_and_waw2() -> None:
    assert BUILTIN_CATALOG["L40S-1-48G"].zones == {"fr-par-2", "pl-waw-2"}
    assert "fr-par-1" in (BUILTIN_CATALOG["L4-1-24G"].zones or ())


def test_allocatable_is_capacity_minus_the_reserve() -> None:
    l4 = BUILTIN_CATALOG["L4-1-24G"]
    assert l4.allocatable_millicores == 8000 - 1000
    assert l4.allocatable_memory_bytes == (48 - 4) * 2**30
    smaller = BUILTIN_CATALOG.with_override(
        "L4-1-24G", reserve_cpu=Cpu.parse("500m"), reserve_memory=Memory.parse("2Gi")
    )
    assert smaller["L4-1-24G"].allocatable_millicores == 7500
    assert smaller["L4-1-24G"].allocatable_memory_bytes == 46 * 2**30
    assert BUILTIN_CATALOG["L4-1-24G"].allocatable_millicores == 7000  # the original is untouched


def test_cpu_types_are_not_gpu_types() -> None:
    assert not BUILTIN_CATALOG["PRO2-XXS"].is_gpu
    assert BUILTIN_CATALOG["H100-1-80G"].is_gpu
