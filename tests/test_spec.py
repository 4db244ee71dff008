"""The platform spec: the dev stack is valid, and each kind of bad input is one line naming key and value."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from infra.spec.errors import SpecError
from infra.spec.platform import load_spec

Edit = Callable[[dict[str, Any]], None]


def test_dev_stack_is_the_design(dev_platform: dict[str, Any]) -> None:
    spec = load_spec(dev_platform)
    assert spec.gpu_pools() == ["ci-compile", "ci-training"]
    assert spec.always_on_pools() == ["system"]
    assert spec.pools["ci-compile"].node_type == "L4-1-24G"
    assert spec.pools["ci-training"].node_type == "L40S-1-48G"
    for name in ("ci-compile", "ci-training"):
        pool = spec.pools[name]
        assert (pool.min_size, pool.max_size, pool.autoscaling, pool.initial_size) == (0, 1, True, 0)
    rl, supervised = spec.profiles["rl"], spec.profiles["supervised"]
    assert (rl.pool, rl.families, rl.template) == ("ci-compile", ("dqn", "ppo"), ".train-rl-base")
    assert (rl.cpu_request.millicores, rl.cpu_limit.millicores) == (3000, 3800)
    assert (rl.memory_request.bytes, rl.memory_limit.bytes) == (8 * 2**30, 16 * 2**30)
    assert rl.variables == {"HYPEROPT_EPOCHS": "8"}
    assert supervised.pool == "ci-training"
    assert set(supervised.families) == {"tft", "mamba2", "tggn", "tlob", "liquid", "kan", "xlstm", "diffusion"}
    assert (supervised.cpu_request.millicores, supervised.memory_limit.bytes) == (1000, 40 * 2**30)
    assert spec.pools["ci-compile"].sharing_replicas() == 2
    assert spec.pools["ci-training"].sharing_replicas() == 4


def test_dev_stack_warns_about_memory_overcommit(dev_platform: dict[str, Any]) -> None:
    warnings = [str(w) for w in load_spec(dev_platform).warnings()]
    assert warnings == [
        "platform.profiles.supervised.memory_limit='40Gi': x 4 jobs per node = 160 GiB overcommits "
        "one L40S-1-48G node's allocatable 92 GiB (OOM if all hit the limit)"
    ]


def test_catalogue_override_changes_price_and_adds_types(dev_platform: dict[str, Any]) -> None:
    dev_platform["node_types"] = {
        "L4-1-24G": {"eur_per_hour": "0.80"},
        "H200-1-141G": {"vcpus": 24, "memory_gib": 240, "gpus": 1, "eur_per_hour": "4.0", "gpu_memory_gb": 141},
    }
    dev_platform["pools"]["ci-big"] = {"node_type": "H200-1-141G", "zone": "fr-par-2"}
    spec = load_spec(dev_platform)
    assert float(spec.catalog["L4-1-24G"].eur_per_hour) == 0.80
    assert spec.catalog["L4-1-24G"].vcpus == 8  # fields not given keep the catalogue's value
    assert spec.catalog["H200-1-141G"].is_gpu


def test_reserve_override_changes_allocatable(dev_platform: dict[str, Any]) -> None:
    dev_platform["allocatable_reserve"] = {"cpu": "500m", "memory": "2Gi"}
    dev_platform["node_types"] = {"L40S-1-48G": {"reserve": {"cpu": "2", "memory": "8Gi"}}}
    spec = load_spec(dev_platform)
    assert spec.catalog["L4-1-24G"].allocatable_millicores == 7500
    assert spec.catalog["L40S-1-48G"].allocatable_memory_bytes == 88 * 2**30


@dataclass(frozen=True)
class Bad:
    id: str
    edit: Edit
    line: str
    """The whole expected error line (regex-escaped by the test)."""


def _set(*path: str, value: Any) -> Edit:
    def edit(platform: dict[str, Any]) -> None:
        node = platform
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value

    return edit


def _drop(*path: str) -> Edit:
    def edit(platform: dict[str, Any]) -> None:
        node = platform
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return edit


BAD_INPUTS = [
    Bad(
        "no-profiles",
        _set("profiles", value={}),
        "platform.profiles={}: no profile: the runner routes jobs by profile, give at least one",
    ),
    Bad(
        "typo-node-type",
        _set("pools", "ci-compile", "node_type", value="L4-1-24GB"),
        "platform.pools.ci-compile.node_type='L4-1-24GB': unknown node type; did you mean 'L4-1-24G'? "
        "(add it under platform.node_types)",
    ),
    Bad(
        "malformed-cpu",
        _set("profiles", "rl", "cpu_request", value="3 cores"),
        "platform.profiles.rl.cpu_request='3 cores': not a Kubernetes CPU quantity",
    ),
    Bad(
        "millibytes",
        _set("profiles", "rl", "memory_request", value="8m"),
        "platform.profiles.rl.memory_request='8m': suffix 'm' means 1/1000 of a byte here; did you mean Mi or M?",
    ),
    Bad(
        "request-bigger-than-node",
        lambda p: p["profiles"]["supervised"].update(memory_request="100Gi", memory_limit="100Gi"),
        "platform.profiles.supervised.memory_request='100Gi': is larger than one L40S-1-48G node's allocatable 92 GiB",
    ),
    Bad(
        "requests-times-jobs-overflow",
        _set("profiles", "rl", "cpu_request", value="3600m"),
        "platform.profiles.rl.cpu_request='3600m': x 2 jobs per node = 7200m exceeds one L4-1-24G node's "
        "allocatable 7000m; lower it or the pool's replicas",
    ),
    Bad(
        "min-above-max",
        _set("pools", "ci-training", "min_size", value=2),
        "platform.pools.ci-training.min_size=2: is above max_size=1",
    ),
    Bad(
        "unknown-pool",
        _set("profiles", "supervised", "pool", value="ci-trainig"),
        "platform.profiles.supervised.pool='ci-trainig': no such pool (pools: ci-compile, ci-training, system)",
    ),
    Bad(
        "profile-without-pool",
        _drop("profiles", "rl", "pool"),
        "platform.profiles.rl.pool=<missing>: required key is missing",
    ),
    Bad(
        "typo-key",
        _set("pools", "ci-compile", "max_sise", value=2),
        "platform.pools.ci-compile.max_sise=2: unknown key (allowed: autohealing, autoscaling, cold_start_minutes, "
        "gpu_sharing, labels, max_size, min_size, node_type, root_volume_size_gb, root_volume_type, zone)",
    ),
    Bad(
        "negative-size",
        _set("pools", "ci-compile", "max_size", value=-1),
        "platform.pools.ci-compile.max_size=-1: Input should be greater than or equal to 0",
    ),
    Bad(
        "limit-below-request",
        _set("profiles", "rl", "memory_limit", value="4Gi"),
        "platform.profiles.rl.memory_limit='4Gi': is below memory_request=8Gi",
    ),
    Bad(
        "l40s-in-wrong-zone",
        _set("pools", "ci-training", "zone", value="fr-par-1"),
        "platform.pools.ci-training.zone='fr-par-1': L40S-1-48G is not sold there (zones: fr-par-2, pl-waw-2)",
    ),
    Bad(
        "zone-outside-region",
        _set("pools", "ci-compile", "zone", value="nl-ams-1"),
        "platform.pools.ci-compile.zone='nl-ams-1': is not a zone of the region 'fr-par'",
    ),
    Bad(
        "sharing-with-one-replica",
        _set("pools", "ci-compile", "gpu_sharing", "replicas", value=1),
        "platform.pools.ci-compile.gpu_sharing.replicas=1: time-slicing needs >= 2 replicas "
        "(use strategy 'none' for one job per GPU)",
    ),
    Bad(
        "sharing-on-cpu-pool",
        _set("pools", "system", "gpu_sharing", value={"strategy": "mps", "replicas": 2}),
        "platform.pools.system.gpu_sharing.strategy='mps': PRO2-XXS has no GPU to share",
    ),
    Bad(
        "duplicate-template",
        _set("profiles", "supervised", "template", value=".train-rl-base"),
        "platform.profiles.supervised.template='.train-rl-base': already used by profile 'rl'",
    ),
    Bad(
        "family-routed-twice",
        _set("profiles", "supervised", "families", value=["tft", "ppo"]),
        "platform.profiles.supervised.families='ppo': already routed by profile 'rl'",
    ),
    Bad(
        "profile-on-cpu-pool",
        _set("profiles", "rl", "pool", value="system"),
        "platform.profiles.rl.pool='system': is not a GPU pool (PRO2-XXS); every CI job requests one nvidia.com/gpu",
    ),
    Bad(
        "fixed-pool-with-range",
        _set("pools", "system", "max_size", value=3),
        "platform.pools.system.max_size=3: a pool without autoscaling has a fixed size: set it equal to min_size=1",
    ),
    Bad(
        "no-always-on-pool",
        lambda p: p["pools"]["system"].update(min_size=0, autoscaling=True),
        "platform.pools=['ci-compile', 'ci-training', 'system']: no pool has min_size >= 1: a mutualized Kapsule "
        "cluster needs an always-on pool (runner manager, kube-system)",
    ),
    Bad(
        "pool-name-breaks-regex",
        _set("pools", "ci.gpu|x", value={"node_type": "L4-1-24G", "zone": "fr-par-2"}),
        "platform.pools.ci.gpu|x='ci.gpu|x': pool name must be 1-63 of a-z, 0-9 and '-' (it is a label value and "
        "part of the runner's node-selector regex)",
    ),
    Bad(
        "cuda-volume-too-small",
        _set("pools", "ci-training", "root_volume_size_gb", value=40),
        "platform.pools.ci-training.root_volume_size_gb=40: must be >= 100 GB (CUDA images need room)",
    ),
    Bad(
        "reserved-label",
        _set("pools", "ci-compile", "labels", value={"k8s.scaleway.com/pool-name": "ci-training"}),
        "platform.pools.ci-compile.labels.k8s.scaleway.com/pool-name='ci-training': prefix reserved: "
        "k8s.scaleway.com/pool-name is set by Kapsule, nvidia.com/ labels by gpu-ci",
    ),
    Bad(
        "bad-version",
        _set("cluster", "version", value="latest"),
        "platform.cluster.version='latest': not a Kubernetes version like 1.35 or 1.35.3",
    ),
    Bad(
        "patch-version-with-auto-upgrade",
        _set("cluster", "version", value="1.35.3"),
        "platform.cluster.version='1.35.3': auto_upgrade needs a minor version (e.g. 1.35): patches are applied "
        "by Scaleway",
    ),
    Bad(
        "bad-existing-id",
        _set("cluster", "existing_id", value="my-cluster"),
        "platform.cluster.existing_id='my-cluster': not a Kapsule cluster id like "
        "fr-par/11111111-2222-3333-4444-555555555555",
    ),
    Bad(
        "bad-duration",
        _set("cluster", "autoscaler", "scale_down_unneeded_time", value="five minutes"),
        "platform.cluster.autoscaler.scale_down_unneeded_time='five minutes': not a duration like 5m, 300s or 1h",
    ),
    Bad(
        "template-not-hidden",
        _set("profiles", "rl", "template", value="train-rl-base"),
        "platform.profiles.rl.template='train-rl-base': a hidden GitLab CI job name starts with '.', then a-z, "
        "0-9, '-' or '_'",
    ),
    Bad(
        "new-node-type-without-figures",
        _set("node_types", "X1-1", value={"eur_per_hour": "1"}),
        "platform.node_types.X1-1='X1-1': not a built-in node type, so it must state vcpus, memory_gib, gpus",
    ),
    # GPU sharing, the GPU operator and the workload (issue 4)
    Bad(
        "replicas-times-memory-requests-overflow",
        _set("pools", "ci-training", "gpu_sharing", "replicas", value=6),
        "platform.profiles.supervised.memory_request='16Gi': x 6 jobs per node = 96 GiB exceeds one L40S-1-48G "
        "node's allocatable 92 GiB; lower it or the pool's replicas",
    ),
    Bad(
        "vram-need-above-mps-share",
        lambda p: (
            p["pools"]["ci-training"].update(gpu_sharing={"strategy": "mps", "replicas": 4}),
            p["profiles"]["supervised"].update(gpu_memory_gb=16),
        ),
        "platform.profiles.supervised.gpu_memory_gb=16: is more than one MPS replica's share of one L40S-1-48G "
        "GPU's 48 GB / 4 = 12 GB; lower the pool's replicas or use time-slicing",
    ),
    Bad(
        "vram-need-above-gpu",
        _set("profiles", "rl", "gpu_memory_gb", value=30),
        "platform.profiles.rl.gpu_memory_gb=30: is more than one L4-1-24G GPU's 24 GB",
    ),
    Bad(
        "bad-operator-namespace",
        _set("gpu_operator", "namespace", value="Kube_System"),
        "platform.gpu_operator.namespace='Kube_System': not a Kubernetes namespace name (a-z, 0-9 and '-', at most 63)",
    ),
    Bad(
        "workload-of-unknown-profile",
        _set("workload", "profiles", "rll", value={"jobs_per_day": 1, "minutes_per_job": 10}),
        "platform.workload.profiles.rll='rll': no such profile (profiles: rl, supervised)",
    ),
    Bad(
        "workload-without-duration",
        _drop("workload", "profiles", "rl", "minutes_per_job"),
        "platform.workload.profiles.rl.minutes_per_job=<missing>: required key is missing",
    ),
    Bad(
        "baseline-without-gpu",
        _set("workload", "baseline", "node_type", value="PRO2-XXS"),
        "platform.workload.baseline.node_type='PRO2-XXS': has no GPU to run the jobs on",
    ),
    Bad(
        "baseline-unknown-idle-node",
        _set("workload", "baseline", "idle_node_types", value=["L4-1-24GB"]),
        "platform.workload.baseline.idle_node_types='L4-1-24GB': unknown node type",
    ),
]


@pytest.mark.parametrize("case", BAD_INPUTS, ids=[case.id for case in BAD_INPUTS])
def test_bad_input_fails_with_one_line_naming_key_and_value(dev_platform: dict[str, Any], case: Bad) -> None:
    case.edit(dev_platform)
    with pytest.raises(SpecError) as caught:
        load_spec(dev_platform)
    assert str(caught.value) == case.line
    assert len(caught.value.problems) == 1


def test_several_problems_give_one_line_each(dev_platform: dict[str, Any]) -> None:
    dev_platform["pools"]["ci-compile"]["node_type"] = "L5"
    dev_platform["profiles"]["supervised"]["cpu_limit"] = "500m"
    with pytest.raises(SpecError) as caught:
        load_spec(dev_platform)
    lines = str(caught.value).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("platform.pools.ci-compile.node_type='L5': unknown node type")
    assert lines[1] == "platform.profiles.supervised.cpu_limit='500m': is below cpu_request=1000m"


def test_not_an_object() -> None:
    with pytest.raises(SpecError, match=r"^platform='x': must be an object"):
        load_spec("x")


def test_mps_replicas_are_capped_by_nvidia(dev_platform: dict[str, Any]) -> None:
    dev_platform["pools"]["ci-training"]["gpu_sharing"] = {"strategy": "mps", "replicas": 49}
    with pytest.raises(SpecError) as caught:
        load_spec(dev_platform)
    assert (
        "platform.pools.ci-training.gpu_sharing.replicas=49: MPS allows at most 48 replicas per GPU "
        "(NVIDIA GPU operator limit)"
    ) in str(caught.value).splitlines()


def test_time_sliced_vram_that_cannot_all_fit_is_a_warning(dev_platform: dict[str, Any]) -> None:
    dev_platform["profiles"]["supervised"]["gpu_memory_gb"] = 16
    warnings = [str(w) for w in load_spec(dev_platform).warnings()]
    assert (
        "platform.profiles.supervised.gpu_memory_gb=16: x 4 jobs per GPU = 64 GB exceeds one L40S-1-48G GPU's "
        "48 GB: time-slicing does not isolate GPU memory, so jobs may OOM each other"
    ) in warnings
    dev_platform["pools"]["ci-training"]["gpu_sharing"]["replicas"] = 3  # 3 x 16 = 48 GB: fits
    assert not any("gpu_memory_gb" in str(w) for w in load_spec(dev_platform).warnings())


def test_mps_need_within_the_share_is_fine(dev_platform: dict[str, Any]) -> None:
    dev_platform["pools"]["ci-training"]["gpu_sharing"] = {"strategy": "mps", "replicas": 4}
    dev_platform["profiles"]["supervised"]["gpu_memory_gb"] = 12
    spec = load_spec(dev_platform)
    assert spec.pools["ci-training"].sharing_replicas() == 4
