"""GpuSharing under mocks: the ConfigMap and the ClusterPolicy patch as the engine would receive them."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from infra.cloud.gpu_sharing import GpuSharing, GpuSharingArgs
from infra.cloud.names import T
from infra.model.platform import load_platform
from infra.offline.harness import ProgramRun
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
        assert _by_type(pulumi_mocks, T.JOB) == [] and sharing.operator_wait is None  # nothing to wait for

    return sharing.config_map.apply(check)


# ---------------------------------------------------------------------------------------------------------
# The first deploy: the patch waits for the operator's ClusterPolicy, which Kapsule installs after a GPU pool


def test_the_patch_waits_for_a_job_that_waits_for_the_operator_after_the_gpu_pools(dev_run: ProgramRun) -> None:
    """On a new cluster the GPU pools, then Kapsule's operator, then the patch: a patch before the CRD fails, and
    one before the ClusterPolicy would create an incomplete one. The engine awaits the Job until it completes."""
    job = dev_run.one(T.JOB, "gpu-sharing-operator-wait-job")
    patch = dev_run.one(PATCH, "gpu-sharing-cluster-policy")
    config_map = dev_run.one(CONFIG_MAP, "gpu-sharing-config")
    assert set(patch.options["dependencies"]) == {config_map.urn, job.urn}
    pools = [dev_run.one(T.POOL, f"kapsule-{name}") for name in ("ci-compile", "ci-training")]
    waits_for = set(job.options["dependencies"])
    assert {pool.urn for pool in pools} <= waits_for
    assert dev_run.one(T.POOL, "kapsule-system").urn not in waits_for  # the GPU pools are what installs it
    for kind, name in [
        (T.SERVICE_ACCOUNT, "gpu-sharing-operator-wait"),
        (T.CLUSTER_ROLE_BINDING, "gpu-sharing-operator-wait-binding"),
        (T.NETWORK_POLICY, "gpu-sharing-operator-wait-dns"),
        (T.CILIUM_NETWORK_POLICY, "gpu-sharing-operator-wait-apiserver"),
    ]:
        assert dev_run.one(kind, name).urn in waits_for, name
    # The engine's wait outlasts the Job's own deadline, so the Job's failure is what `up` reports.
    assert job.options["custom_timeouts"]["create"] == "35m"
    assert job.options["delete_before_replace"] is True
    spec = job.plain_inputs["spec"]
    assert (spec["activeDeadlineSeconds"], spec["backoffLimit"]) == (30 * 60, 0)


def test_the_wait_job_polls_for_the_named_cluster_policy_with_least_privilege(dev_run: ProgramRun) -> None:
    job = dev_run.one(T.JOB, "gpu-sharing-operator-wait-job").plain_inputs
    assert job["metadata"]["namespace"] == "gitlab-runner"
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert {e["name"]: e["value"] for e in container["env"]}["POLICY"] == "cluster-policy"
    assert "/apis/nvidia.com/v1/clusterpolicies/$POLICY" in container["command"][-1]
    assert container["image"] == "curlimages/curl:8.11.1"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["runAsNonRoot"] is True
    assert pod["nodeSelector"] == {"k8s.scaleway.com/pool-name": "system"}
    assert (pod["serviceAccountName"], pod["restartPolicy"]) == ("gpu-ci-operator-wait", "Never")
    role = dev_run.one(T.CLUSTER_ROLE, "gpu-sharing-operator-wait-role").plain_inputs
    assert role["rules"] == [
        {
            "apiGroups": ["nvidia.com"],
            "resources": ["clusterpolicies"],
            "resourceNames": ["cluster-policy"],
            "verbs": ["get"],
        }
    ]
    labels = job["spec"]["template"]["metadata"]["labels"]
    for kind, name in [
        (T.NETWORK_POLICY, "gpu-sharing-operator-wait-dns"),
        (T.CILIUM_NETWORK_POLICY, "gpu-sharing-operator-wait-apiserver"),
    ]:
        inputs = dev_run.one(kind, name).plain_inputs
        selector = inputs["spec"].get("podSelector") or inputs["spec"]["endpointSelector"]
        assert selector["matchLabels"].items() <= labels.items()
