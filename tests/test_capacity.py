"""Capacity math on the design's figures, checked by hand."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from infra.capacity import profile_fit
from infra.config.load import load_spec
from infra.config.platform import PlatformSpec
from infra.model.checks import fit_problems
from infra.model.platform import load_platform
from infra.render.report import capacity_rows, render_pool_table


def test_design_concurrency_and_what_binds_it(dev_platform: dict[str, Any]) -> None:
    spec = load_spec(dev_platform)
    rl = profile_fit("rl", spec.profiles["rl"], spec.pools["ci-compile"], spec.catalog["L4-1-24G"])
    # L4: 8 vCPU - 1 reserved = 7000m // 3000m = 2; 48 - 4 = 44 GiB // 8 GiB = 5; time-sliced x2.
    assert (rl.gpu_slots, rl.by_cpu, rl.by_memory, rl.jobs_per_node) == (2, 2, 5, 2)
    assert rl.binding == "GPU replicas = CPU"
    supervised = profile_fit(
        "supervised", spec.profiles["supervised"], spec.pools["ci-training"], spec.catalog["L40S-1-48G"]
    )
    # L40S: 7000m // 1000m = 7; 92 GiB // 16 GiB = 5; time-sliced x4.
    assert (supervised.gpu_slots, supervised.by_cpu, supervised.by_memory) == (4, 7, 5)
    assert (supervised.jobs_per_node, supervised.binding) == (4, "GPU replicas")


def test_derived_pools_and_their_report_rows(dev_platform: dict[str, Any]) -> None:
    platform = load_platform(dev_platform)
    pools = platform.pools
    assert set(pools) == {"ci-compile", "ci-training", "system"}
    assert pools["ci-compile"].eur_per_hour == Fraction("0.7875")
    assert pools["ci-compile"].idle_eur_per_hour == 0  # scaled to zero: nothing billed
    assert pools["ci-training"].idle_eur_per_hour == 0
    assert pools["system"].idle_eur_per_hour == Fraction("0.0561")
    assert (pools["ci-training"].jobs_per_node, pools["ci-training"].slots) == (4, 4)
    assert pools["system"].jobs_per_node == 0 and pools["system"].runner is None
    rows = {row["pool"]: row for row in capacity_rows(platform)}
    assert (rows["ci-training"]["jobs_per_node"], rows["ci-training"]["max_concurrent_jobs"]) == (4, 4)
    assert rows["ci-training"]["runner"] == "ci-training" and rows["system"]["runner"] is None
    table = render_pool_table(platform)
    assert "ci-training  L40S-1-48G" in table
    assert "time-slicing x4" in table


def test_more_replicas_than_cpu_allows_is_an_error(dev_platform: dict[str, Any]) -> None:
    dev_platform["pools"]["ci-compile"]["gpu_sharing"]["replicas"] = 3
    spec_problems = _fit(dev_platform)
    assert [str(p) for p in spec_problems if p.severity == "error"] == [
        "platform.profiles.rl.cpu_request='3000m': x 3 jobs per node = 9000m exceeds one L4-1-24G node's "
        "allocatable 7000m; lower it or the pool's replicas"
    ]


def test_mps_without_sharing_counts_one_job_per_gpu(dev_platform: dict[str, Any]) -> None:
    dev_platform["pools"]["ci-training"]["gpu_sharing"] = {"strategy": "none"}
    pool = load_platform(dev_platform).pools["ci-training"]
    assert (pool.jobs_per_node, pool.binding, pool.slots) == (1, "GPU replicas", 1)
    assert pool.sharing.label == "none"


def _fit(platform: dict[str, Any]) -> list[Any]:
    """Fit problems of a spec that may be invalid (load_spec would raise on the errors)."""
    return fit_problems(PlatformSpec.model_validate(platform))
