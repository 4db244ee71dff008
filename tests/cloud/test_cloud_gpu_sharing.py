"""GpuSharing under mocks: the ConfigMap and the ClusterPolicy patch as the engine would receive them."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from infra.cloud.gpu_sharing import GpuSharing, GpuSharingArgs
from infra.cloud.names import T
from infra.model.platform import load_platform
from infra.offline.mocks import RecordedResource, RecordingMonitor
from infra.render.device_plugin import NO_SHARING_KEY, cluster_policy_patch, device_plugin_configs

CONFIG_MAP = T.CONFIG_MAP
PATCH = T.CLUSTER_POLICY_PATCH


def _args(config: dict[str, Any]) -> GpuSharingArgs:
    platform = load_platform(config)
    return GpuSharingArgs(
        operator=platform.spec.gpu_operator,
        configs=device_plugin_configs(platform),
        cluster_policy_patch=cluster_policy_patch(platform),
        pool_keys={p.name: p.device_plugin_key for p in platform.pools.values() if p.device_plugin_key},
    )


def _build(platform: dict[str, Any]) -> tuple[GpuSharing, k8s.Provider]:
    provider = k8s.Provider("k8s", kubeconfig="apiVersion: v1\nkind: Config\n")
    sharing = GpuSharing("gpu-sharing", _args(platform), pulumi.ResourceOptions(providers=[provider]))
    return sharing, provider


def _by_type(monitor: RecordingMonitor, type_token: str) -> list[RecordedResource]:
    return [r for r in monitor.recorded if r.type == type_token]


@pulumi.runtime.test
def test_config_map_holds_one_config_per_pool_in_the_operator_namespace(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> pulumi.Output[Any]:
    sharing, provider = _build(dev_platform)

    def check(values: list[Any]) -> None:
        config_map_ref, provider_urn, provider_id = values
        (config_map,) = _by_type(pulumi_mocks, CONFIG_MAP)
        inputs = config_map.plain_inputs
        assert config_map.name == "gpu-sharing-config"
        assert inputs["metadata"]["name"] == "gpu-ci-device-plugin-config"
        assert inputs["metadata"]["namespace"] == "kube-system"
        assert inputs["data"] == device_plugin_configs(load_platform(dev_platform))
        assert yaml.safe_load(inputs["data"]["ci-compile"])["sharing"]["timeSlicing"]["resources"][0]["replicas"] == 2
        assert config_map.options["provider"] == f"{provider_urn}::{provider_id}"
        assert config_map.options["delete_before_replace"] is True  # fixed name: a replacement deletes first
        assert config_map_ref == "kube-system/gpu-ci-device-plugin-config"
        assert sharing.pool_keys == {"ci-compile": "ci-compile", "ci-training": "ci-training"}

    return pulumi.Output.all(sharing.config_map, provider.urn, provider.id).apply(check)


@pulumi.runtime.test
def test_cluster_policy_patch_points_at_the_config_map(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> pulumi.Output[Any]:
    sharing, _ = _build(dev_platform)

    def check(_: Any) -> None:
        (config_map,) = _by_type(pulumi_mocks, CONFIG_MAP)
        (patch,) = _by_type(pulumi_mocks, PATCH)
        inputs = patch.plain_inputs
        assert (inputs["apiVersion"], inputs["kind"]) == ("nvidia.com/v1", "ClusterPolicy")
        assert inputs["metadata"]["name"] == "cluster-policy"
        assert inputs["metadata"]["annotations"] == {
            "pulumi.com/patchForce": "true",
            "pulumi.com/patchFieldManager": "gpu-ci",
        }
        config = inputs["spec"]["devicePlugin"]["config"]
        assert config["name"] == config_map.plain_inputs["metadata"]["name"]
        assert config["default"] == NO_SHARING_KEY
        assert config["default"] in config_map.plain_inputs["data"]
        assert set(inputs["spec"]) == {"devicePlugin"}  # nothing else of the operator's policy is touched
        assert config_map.urn in patch.options["dependencies"]  # created after the ConfigMap it names
        assert patch.options["delete_before_replace"] is False

    assert sharing.cluster_policy_patch is not None
    return pulumi.Output.all(sharing.config_map, sharing.cluster_policy_patch.urn).apply(check)


@pulumi.runtime.test
def test_operator_names_come_from_the_spec_and_the_patch_can_be_left_out(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> pulumi.Output[Any]:
    dev_platform["gpu_operator"] = {"namespace": "gpu-operator", "config_map": "sharing", "patch_cluster_policy": False}
    sharing, _ = _build(dev_platform)

    def check(reference: str) -> None:
        assert reference == "gpu-operator/sharing"
        assert _by_type(pulumi_mocks, PATCH) == []
        assert sharing.cluster_policy_patch is None

    return sharing.config_map.apply(check)
