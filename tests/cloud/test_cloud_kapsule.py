"""KapsuleCluster under mocks: the inputs and options the engine would receive for the cluster and pools."""

from __future__ import annotations

from typing import Any

import pulumi
from support.specs import add_h100_pool

from infra.cloud.kapsule import KapsuleCluster, KapsuleClusterArgs
from infra.cloud.names import T
from infra.model.platform import load_platform
from infra.offline.harness import ProgramRun, run_program
from infra.offline.mocks import MOCK_KUBECONFIG_PREFIX, RecordedResource, RecordingMonitor, is_secret
from infra.offline.stack_config import StackConfig

EXISTING = "fr-par/0b5e1f4c-2d7a-4c1e-9a4e-3f1c2b7d9e10"


def _args(config: dict[str, Any]) -> KapsuleClusterArgs:
    platform = load_platform(config)
    return KapsuleClusterArgs(region=platform.spec.region, cluster=platform.spec.cluster, pools=platform.pools)


def _by_name(monitor: RecordingMonitor) -> dict[str, RecordedResource]:
    return {r.name: r for r in monitor.recorded}


def _settled(kapsule: KapsuleCluster) -> pulumi.Output[Any]:
    """Everything the component registers, resolved: the pools depend on the cluster id."""
    return pulumi.Output.all(kapsule.cluster_id, kapsule.kubeconfig, kapsule.provider.urn, *kapsule.pool_ids.values())


@pulumi.runtime.test
def test_gpu_pools_scale_from_zero_and_autoscaler_owns_size(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> pulumi.Output[Any]:
    kapsule = KapsuleCluster("kapsule", _args(dev_platform))

    def check(_: Any) -> None:
        res = _by_name(pulumi_mocks)
        for name, node_type in (("ci-compile", "L4-1-24G"), ("ci-training", "L40S-1-48G")):
            pool = res[f"kapsule-{name}"]
            assert pool.type == T.POOL
            inputs = pool.plain_inputs
            assert (inputs["name"], inputs["nodeType"], inputs["zone"]) == (name, node_type, "fr-par-2")
            assert (inputs["size"], inputs["minSize"], inputs["maxSize"]) == (0, 0, 1)
            assert inputs["autoscaling"] is True and inputs["autohealing"] is True
            assert inputs["rootVolumeSizeInGb"] == 150
            assert inputs["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
            assert pool.options["ignore_changes"] == ["size"]
            assert pool.options["delete_before_replace"] is True
            assert pool.options["protect"] is True  # a replacement would lose its running jobs
        system = res["kapsule-system"]
        assert system.options["protect"] is True  # the only runner manager runs there
        assert (system.plain_inputs["size"], system.plain_inputs["autoscaling"]) == (1, False)
        assert "taints" not in system.plain_inputs
        assert system.options["ignore_changes"] == []  # a fixed pool's size is Pulumi's to keep

    return _settled(kapsule).apply(check)


@pulumi.runtime.test
def test_each_pool_states_its_upgrade_policy_and_the_manager_pool_surges(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> pulumi.Output[Any]:
    """The provider's default (surge 0, unavailable 1) would drain the one system node, and every runner manager
    with it, before a replacement is up: the system pool gets a new node first. GPU pools keep drain-first (no
    extra GPU node); a pool's own policy wins."""
    dev_platform["pools"]["ci-compile"]["upgrade_policy"] = {"max_surge": 1, "max_unavailable": 1}
    kapsule = KapsuleCluster("kapsule", _args(dev_platform))

    def check(_: Any) -> None:
        res = _by_name(pulumi_mocks)
        policies = {name: res[f"kapsule-{name}"].plain_inputs["upgradePolicy"] for name in dev_platform["pools"]}
        assert policies == {
            "system": {"maxSurge": 1, "maxUnavailable": 0},
            "ci-training": {"maxSurge": 0, "maxUnavailable": 1},
            "ci-compile": {"maxSurge": 1, "maxUnavailable": 1},
        }

    return _settled(kapsule).apply(check)


@pulumi.runtime.test
def test_cluster_is_protected_private_and_scales_down_soon(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> pulumi.Output[Any]:
    kapsule = KapsuleCluster("kapsule", _args(dev_platform))

    def check(_: Any) -> None:
        res = _by_name(pulumi_mocks)
        cluster = res["kapsule-cluster"]
        inputs = cluster.plain_inputs
        # Always protected, with the network it lives in: there is no knob to turn it off.
        assert [res[n].options["protect"] for n in ("kapsule-vpc", "kapsule-pn", "kapsule-cluster")] == [True] * 3
        assert (inputs["name"], inputs["version"], inputs["cni"], inputs["type"]) == (
            "gpu-ci",
            "1.36",
            "cilium",
            "kapsule",
        )
        assert inputs["privateNetworkId"] == res["kapsule-pn"].id
        assert inputs["deleteAdditionalResources"] is False
        autoscaler = inputs["autoscalerConfig"]
        assert autoscaler["scaleDownUnneededTime"] == "5m"
        assert autoscaler["scaleDownDelayAfterAdd"] == "5m"
        assert autoscaler["ignoreDaemonsetsUtilization"] is True
        assert autoscaler["expander"] == "least_waste"
        assert inputs["autoUpgrade"] == {
            "enable": True,
            "maintenanceWindowDay": "sunday",
            "maintenanceWindowStartHour": 3,
        }
        assert res["kapsule-pn"].plain_inputs["vpcId"] == res["kapsule-vpc"].id
        for pool in ("kapsule-ci-compile", "kapsule-ci-training", "kapsule-system"):
            assert res[pool].plain_inputs["clusterId"] == cluster.id

    return _settled(kapsule).apply(check)


@pulumi.runtime.test
def test_provider_waits_for_the_always_on_pool_and_kubeconfig_is_secret(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> pulumi.Output[Any]:
    kapsule = KapsuleCluster("kapsule", _args(dev_platform))

    def check(_: Any) -> None:
        res = _by_name(pulumi_mocks)
        provider = res["kapsule-k8s"]
        assert provider.type == T.K8S_PROVIDER
        assert res["kapsule-system"].urn in provider.options["dependencies"]
        assert res["kapsule-ci-compile"].urn not in provider.options["dependencies"]
        kubeconfig = provider.inputs["kubeconfig"]
        assert is_secret(kubeconfig), "the engine must receive the kubeconfig as a secret"
        assert kubeconfig["value"].startswith(MOCK_KUBECONFIG_PREFIX)

    return _settled(kapsule).apply(check)


@pulumi.runtime.test
def test_adopting_an_existing_cluster_reads_it_and_creates_only_pools(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> pulumi.Output[Any]:
    dev_platform["cluster"]["existing_id"] = EXISTING
    kapsule = KapsuleCluster("kapsule", _args(dev_platform))

    def check(_: Any) -> None:
        res = _by_name(pulumi_mocks)
        assert "kapsule-vpc" not in res and "kapsule-pn" not in res
        cluster = res["kapsule-cluster"]
        assert cluster.options["read"] is True and cluster.id == EXISTING
        assert res["kapsule-ci-training"].plain_inputs["clusterId"] == EXISTING

    return _settled(kapsule).apply(check)


@pulumi.runtime.test
def test_pool_labels_and_the_device_plugin_key_reach_the_pool(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> pulumi.Output[Any]:
    dev_platform["pools"]["ci-training"]["labels"] = {"team": "ml"}
    kapsule = KapsuleCluster("kapsule", _args(dev_platform))

    def check(_: Any) -> None:
        res = _by_name(pulumi_mocks)
        labels = res["kapsule-ci-training"].plain_inputs["labels"]
        assert labels == {"team": "ml", "nvidia.com/device-plugin.config": "ci-training"}
        assert "labels" not in res["kapsule-system"].plain_inputs or res["kapsule-system"].plain_inputs["labels"] == {}

    return _settled(kapsule).apply(check)


def test_urns_are_stable_when_a_pool_is_added(
    dev_stack: StackConfig, dev_platform: dict[str, Any], dev_run: ProgramRun
) -> None:
    """Names come from spec keys, never list positions: adding a pool (and the profile that targets it) renames
    nothing; what is new is the pool and its runner."""
    before = {r.urn for r in dev_run.resources}
    add_h100_pool(dev_platform)
    after = {r.urn for r in run_program(dev_stack.with_values({"platform": dev_platform})).resources}
    assert before < after
    added = after - before
    assert "urn:pulumi:dev::gpu-ci::gpu-ci:infra:KapsuleCluster$scaleway:kubernetes/pool:Pool::kapsule-ci-h100" in added
    assert all("ci-h100" in urn for urn in added), sorted(added)
