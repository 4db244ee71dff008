"""The whole program (`__main__.py`) with the committed Pulumi.dev.yaml, re-run per test under mocks."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest
import yaml
from support.sealing import assert_res, assert_res_counts

from infra.cloud.names import T
from infra.offline.harness import ProgramRun, run_program
from infra.offline.mocks import MOCK_KUBECONFIG_PREFIX
from infra.offline.stack_config import StackConfig

POOL = T.POOL
CLUSTER = T.CLUSTER
CONFIG_MAP = T.CONFIG_MAP
CLUSTER_POLICY_PATCH = T.CLUSTER_POLICY_PATCH


def test_dev_stack_registers_the_design(dev_run: ProgramRun) -> None:
    run = dev_run
    assert_res_counts(
        run,
        {
            T.KAPSULE: 1,
            T.VPC: 1,
            T.PRIVATE_NETWORK: 1,
            CLUSTER: 1,
            POOL: 3,
            T.K8S_PROVIDER: 1,
            # issue 4: GPU sharing
            T.GPU_SHARING: 1,
            CONFIG_MAP: 1,
            CLUSTER_POLICY_PATCH: 1,
            # issue 29: the patch waits for the operator's ClusterPolicy (a Job, its account, its egress)
            T.JOB: 1,
            T.SERVICE_ACCOUNT: 1,
            T.CLUSTER_ROLE: 1,
            T.CLUSTER_ROLE_BINDING: 1,
            # issue 3: registry, runner, CI templates and variables
            T.REGISTRY: 1,
            T.REGISTRY_NAMESPACE: 1,
            T.RUNNERS: 1,
            # issue 9: one runner per GPU pool (registration, token Secret, release), isolated namespace
            T.USER_RUNNER: 2,
            T.NAMESPACE: 1,
            T.SECRET: 3,
            T.HELM_RELEASE: 2,
            T.NETWORK_POLICY: 4,
            T.CILIUM_NETWORK_POLICY: 2,
            T.GITLAB_CI: 1,
            T.REPOSITORY_FILE: 1,
            T.PROJECT_VARIABLE: 1,
        },
    )
    assert_res(run, T.HELM_RELEASE, "runner-ci-training-release", name="gitlab-runner-ci-training", skipAwait=True)
    assert_res(run, T.USER_RUNNER, "runner-registration", tagLists=["kapsule", "gpu", "ci-compile"], untagged=False)
    pools = {r.plain_inputs["name"]: r for r in run.by_type(POOL)}
    assert {name: p.plain_inputs["nodeType"] for name, p in pools.items()} == {
        "ci-compile": "L4-1-24G",
        "ci-training": "L40S-1-48G",
        "system": "PRO2-XXS",
    }
    for name in ("ci-compile", "ci-training"):
        inputs = pools[name].plain_inputs
        assert (inputs["size"], inputs["minSize"], inputs["maxSize"], inputs["autoscaling"]) == (0, 0, 1, True)
        assert pools[name].options["ignore_changes"] == ["size"]
    assert run.one(CLUSTER, "kapsule-cluster").options["protect"] is True


def test_exports_ids_and_a_secret_kubeconfig(dev_run: ProgramRun) -> None:
    run = dev_run
    assert set(run.outputs) >= {"cluster_id", "pool_ids", "kubeconfig", "capacity"}
    assert run.outputs["kubeconfig"].secret is True
    assert run.outputs["kubeconfig"].value.startswith(MOCK_KUBECONFIG_PREFIX)
    assert run.outputs["cluster_id"].secret is False
    assert run.outputs["cluster_id"].value == run.one(CLUSTER, "kapsule-cluster").id
    pool_ids = run.outputs["pool_ids"].value
    assert pool_ids == {r.plain_inputs["name"]: r.id for r in run.by_type(POOL)}
    capacity = {row["pool"]: row for row in run.outputs["capacity"].value}
    assert capacity["ci-training"]["jobs_per_node"] == 4
    for name, output in run.outputs.items():
        if name != "kubeconfig":
            assert MOCK_KUBECONFIG_PREFIX not in str(output.value), f"kubeconfig leaked into output {name}"


def test_overcommit_is_logged_as_a_warning(dev_run: ProgramRun) -> None:
    run = dev_run
    warnings = [message for level, message in run.logs if level == "warning"]
    assert any(w.startswith("platform.profiles.supervised.memory_limit='40Gi'") for w in warnings)


@pytest.mark.parametrize(
    ("edit", "line"),
    [
        (
            lambda p: p["pools"]["ci-training"].update(node_type="L40S-1-48"),
            "platform.pools.ci-training.node_type='L40S-1-48': unknown node type; did you mean 'L40S-1-48G'? "
            "(add it under platform.node_types)",
        ),
        (
            lambda p: p["profiles"]["rl"].update(cpu_request="3 cores"),
            "platform.profiles.rl.cpu_request='3 cores': not a Kubernetes CPU quantity",
        ),
    ],
    ids=["typo-node-type", "malformed-quantity"],
)
def test_bad_config_registers_nothing(
    dev_stack: StackConfig, dev_platform: dict[str, Any], edit: Any, line: str
) -> None:
    edit(dev_platform)
    run = run_program(dev_stack.with_values({"platform": dev_platform}), check=False)
    assert isinstance(run.error, pulumi.RunError)
    assert str(run.error) == f"Pulumi.dev.yaml: {line}"
    assert run.resources == []


def test_missing_platform_config_is_one_line_naming_the_file_and_key(dev_stack: StackConfig) -> None:
    """Not the SDK's ConfigMissingError: two lines, the second a tab and a command that cannot set an object."""
    bare = StackConfig(dev_stack.project, dev_stack.stack, {}, ())
    run = run_program(bare, check=False)
    assert type(run.error) is pulumi.RunError
    assert str(run.error).startswith("Pulumi.dev.yaml: gpu-ci:platform: missing: the stack holds no platform spec")
    assert "\n" not in str(run.error) and "\t" not in str(run.error)
    assert run.resources == []


def _sharing_replicas(run: Any) -> dict[str, int]:
    """Per pool, the replicas its nodes get: pool label -> ConfigMap key -> parsed plugin config."""
    data = run.one(CONFIG_MAP, "gpu-sharing-config").plain_inputs["data"]
    replicas = {}
    for pool in run.by_type(POOL):
        key = pool.plain_inputs.get("labels", {}).get("nvidia.com/device-plugin.config")
        if key is None:
            continue
        assert key in data, f"pool {pool.plain_inputs['name']} selects {key!r}, not a key of the ConfigMap"
        sharing = yaml.safe_load(data[key]).get("sharing", {})
        (section,) = sharing.values() if sharing else ({"resources": [{"replicas": 1}]},)
        replicas[pool.plain_inputs["name"]] = section["resources"][0]["replicas"]
    return replicas


def test_design_concurrency_from_the_rendered_configs(dev_run: ProgramRun) -> None:
    """The design: 2 RL jobs per L4 (time-sliced x2, CPU-bound too), 4 supervised per L40S (time-sliced x4)."""
    run = dev_run
    assert _sharing_replicas(run) == {"ci-compile": 2, "ci-training": 4}
    capacity = {row["pool"]: row for row in run.outputs["capacity"].value}
    assert (capacity["ci-compile"]["jobs_per_node"], capacity["ci-compile"]["node_type"]) == (2, "L4-1-24G")
    assert (capacity["ci-training"]["jobs_per_node"], capacity["ci-training"]["node_type"]) == (4, "L40S-1-48G")
    system_labels = run.one(POOL, "kapsule-system").plain_inputs.get("labels", {})
    assert "nvidia.com/device-plugin.config" not in system_labels  # the CPU pool gets no plugin config


def test_cluster_policy_patch_points_at_the_config_map(dev_run: ProgramRun) -> None:
    run = dev_run
    config_map = run.one(CONFIG_MAP, "gpu-sharing-config")
    patch = run.one(CLUSTER_POLICY_PATCH, "gpu-sharing-cluster-policy")
    config = patch.plain_inputs["spec"]["devicePlugin"]["config"]
    assert config["name"] == config_map.plain_inputs["metadata"]["name"]
    assert config["default"] in config_map.plain_inputs["data"]
    assert config_map.plain_inputs["metadata"]["namespace"] == "kube-system"
    provider = run.one(T.K8S_PROVIDER, "kapsule-k8s")
    assert config_map.options["provider"].startswith(provider.urn)  # the cluster's provider, not a default one
    for resource in (config_map, patch):
        assert MOCK_KUBECONFIG_PREFIX not in str(resource.plain_inputs), "kubeconfig leaked into " + resource.name
    assert run.outputs["gpu_sharing"].value == {
        "config_map": "kube-system/gpu-ci-device-plugin-config",
        "pool_keys": {"ci-compile": "ci-compile", "ci-training": "ci-training"},
    }


def test_a_sharing_change_rewrites_only_the_config_map(
    dev_stack: StackConfig, dev_platform: dict[str, Any], dev_run: ProgramRun
) -> None:
    """What `pulumi up` changes for a new sharing: the ConfigMap's data. The pool labels and the ClusterPolicy
    patch stay as they are, so nothing restarts on a running GPU node (docs/routing-and-sharing.md)."""
    before = dev_run
    dev_platform["pools"]["ci-training"]["gpu_sharing"] = {"strategy": "mps", "replicas": 3}
    dev_platform["runner"]["access_level"] = "ref_protected"  # MPS: protected branches only
    after = run_program(dev_stack.with_values({"platform": dev_platform}))
    for type_token, name in ((CLUSTER_POLICY_PATCH, "gpu-sharing-cluster-policy"), (POOL, "kapsule-ci-training")):
        assert before.one(type_token, name).plain_inputs == after.one(type_token, name).plain_inputs, name
    old_map, new_map = (run.one(CONFIG_MAP, "gpu-sharing-config").plain_inputs for run in (before, after))
    assert old_map["metadata"] == new_map["metadata"]
    assert old_map["data"]["ci-compile"] == new_map["data"]["ci-compile"]
    assert yaml.safe_load(new_map["data"]["ci-training"])["sharing"]["mps"]["resources"][0]["replicas"] == 3


def test_cost_is_exported(dev_run: ProgramRun) -> None:
    cost = dev_run.outputs["cost"]
    assert cost.secret is False
    assert cost.value["baseline"]["node_type"] == "L40S-1-48G"
    assert cost.value["eur_per_day"] < cost.value["baseline"]["eur_per_day"]
    assert {p["pool"] for p in cost.value["pools"]} == {"ci-compile", "ci-training", "system"}


_OLD = "urn:pulumi:dev::gpu-ci::gpu-ci:infra:GitlabRunner$"
SINGLE_RUNNER_LAYOUT = {
    "urn:pulumi:dev::gpu-ci::gpu-ci:infra:GitlabRunner::runner": None,
    f"{_OLD}gitlab:index/userRunner:UserRunner::runner-registration": None,
    f"{_OLD}kubernetes:core/v1:Namespace::runner-namespace": "gitlab-runner",
    f"{_OLD}kubernetes:core/v1:Secret::runner-registry-pull": "registry-pull",
    f"{_OLD}kubernetes:core/v1:Secret::runner-token": "gitlab-runner-token",
    f"{_OLD}kubernetes:helm.sh/v3:Release::runner-release": "gitlab-runner",
}
"""The URNs and physical names of the single runner (before one runner per pool), as the dev stack's state has them."""


def test_migration_from_one_runner_keeps_its_registration_token_and_release(dev_run: ProgramRun) -> None:
    """`pulumi up` on a stack with the single runner: same URNs (no re-registration, no new token, no replaced
    release), same physical names; the other pool's runner is added beside them."""
    run = dev_run
    by_urn = {r.urn: r for r in run.resources}
    for urn, physical in SINGLE_RUNNER_LAYOUT.items():
        assert urn in by_urn, f"{urn} would be deleted and recreated"
        inputs = by_urn[urn].plain_inputs
        assert (inputs.get("name") or inputs.get("metadata", {}).get("name")) == physical, urn
    registration = by_urn[next(u for u in SINGLE_RUNNER_LAYOUT if u.endswith("::runner-registration"))]
    # In-place updates only: tags and description change, the runner's scope (what GitLab replaces on) does not.
    assert registration.plain_inputs["runnerType"] == "project_type"
    added = {r.name for r in run.resources if "GitlabRunner" in r.urn and r.urn not in SINGLE_RUNNER_LAYOUT}
    assert added == {
        "runner-ci-training-registration",
        "runner-ci-training-token",
        "runner-ci-training-release",
        "runner-netpol-default-deny",
        "runner-netpol-jobs-egress",
        "runner-netpol-managers-egress",
        "runner-netpol-managers-apiserver",
    }
