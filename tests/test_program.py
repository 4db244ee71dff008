"""The whole program (`__main__.py`) with the committed Pulumi.dev.yaml, re-run per test under mocks."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from infra.offline.harness import run_program
from infra.offline.mocks import MOCK_KUBECONFIG_PREFIX
from infra.offline.stack_config import StackConfig

POOL = "scaleway:kubernetes/pool:Pool"
CLUSTER = "scaleway:kubernetes/cluster:Cluster"


def test_dev_stack_registers_the_design(dev_stack: StackConfig) -> None:
    run = run_program(dev_stack)
    counts: dict[str, int] = {}
    for resource in run.resources:
        counts[resource.type] = counts.get(resource.type, 0) + 1
    assert counts == {
        "gpu-ci:infra:KapsuleCluster": 1,
        "scaleway:network/vpc:Vpc": 1,
        "scaleway:network/privateNetwork:PrivateNetwork": 1,
        CLUSTER: 1,
        POOL: 3,
        "pulumi:providers:kubernetes": 1,
        # issue 3: registry, runner, CI templates and variables
        "gpu-ci:infra:ContainerRegistry": 1,
        "scaleway:registry/namespace:Namespace": 1,
        "scaleway:iam/application:Application": 1,
        "scaleway:iam/policy:Policy": 1,
        "scaleway:iam/apiKey:ApiKey": 1,
        "gpu-ci:infra:GitlabRunner": 1,
        "gitlab:index/userRunner:UserRunner": 1,
        "kubernetes:core/v1:Namespace": 1,
        "kubernetes:core/v1:Secret": 2,
        "kubernetes:helm.sh/v3:Release": 1,
        "gpu-ci:infra:GitlabCi": 1,
        "gitlab:index/repositoryFile:RepositoryFile": 1,
        "gitlab:index/projectVariable:ProjectVariable": 1,
    }
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


def test_exports_ids_and_a_secret_kubeconfig(dev_stack: StackConfig) -> None:
    run = run_program(dev_stack)
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


def test_overcommit_is_logged_as_a_warning(dev_stack: StackConfig) -> None:
    run = run_program(dev_stack)
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
    assert str(run.error) == line
    assert run.resources == []


def test_missing_platform_config_is_pulumis_own_error(dev_stack: StackConfig) -> None:
    bare = StackConfig(dev_stack.project, dev_stack.stack, {}, ())
    run = run_program(bare, check=False)
    assert isinstance(run.error, pulumi.ConfigMissingError)
    assert "gpu-ci:platform" in str(run.error)
    assert run.resources == []
