"""The Kapsule cluster and its pools (policy/policies/cluster_pools.py): each rule called directly."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi_policy import StackValidationArgs
from pulumi_policy.policy import _NotApplicableError
from support.policy import (
    AUTOSCALED,
    CLUSTER,
    CLUSTER_POLICY_PATCH,
    CONFIG_MAP,
    POOL,
    gpu_pool,
    options,
    recorder,
    resource_args,
    stack_resource,
    violations,
)

from infra.model.pools import DEVICE_PLUGIN_CONFIG_LABEL
from infra.offline.policy_check import engine_props
from policy.policies import cluster_pools as pol

# ---------------------------------------------------------------------------------------------------------
# GPU pools


def test_a_gpu_pool_at_zero_with_size_ignored_passes() -> None:
    assert violations(pol.gpu_pool_scales_to_zero, resource_args(POOL, gpu_pool(), opts=AUTOSCALED)) == []


def test_a_gpu_pool_that_does_not_scale_to_zero_is_named_with_its_value() -> None:
    args = resource_args(POOL, gpu_pool(minSize=1), opts=AUTOSCALED)
    assert violations(pol.gpu_pool_scales_to_zero, args) == [
        "GPU pool 'ci-training' (L40S-1-48G): minSize=1: a GPU pool must scale to zero (minSize 0) so that it "
        "costs nothing while no job runs (gpu-ci: platform.pools.ci-training.min_size: 0), or list the pool in "
        "this policy's always_on_pools"
    ]


def test_a_fixed_gpu_pool_whose_size_pulumi_owns_fails_three_ways() -> None:
    args = resource_args(POOL, gpu_pool(autoscaling=False, minSize=1, size=1))
    found = violations(pol.gpu_pool_scales_to_zero, args)
    assert [m.split(": ")[1] for m in found] == ["autoscaling=False", "minSize=1", "ignoreChanges=[]"]


def test_always_on_pools_exempts_a_named_pool_from_min_size_only() -> None:
    config = {"always_on_pools": ["ci-training"]}
    args = resource_args(POOL, gpu_pool(minSize=1), opts=AUTOSCALED, config=config)
    assert violations(pol.gpu_pool_scales_to_zero, args) == []
    other = resource_args(POOL, gpu_pool(name="ci-compile", minSize=1), opts=AUTOSCALED, config=config)
    assert len(violations(pol.gpu_pool_scales_to_zero, other)) == 1


@pytest.mark.parametrize(
    ("props", "gpu"),
    [
        ({"nodeType": "PRO2-XXS"}, False),
        ({"nodeType": "L4-1-24G"}, True),
        ({"nodeType": "l40s_1_48g"}, True),  # the API's spelling
        ({"nodeType": "H100-SXM-2-80G"}, True),
        ({"nodeType": "POP2-2C-8G", "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]}, True),
    ],
)
def test_what_counts_as_a_gpu_pool(props: dict[str, Any], gpu: bool) -> None:
    assert pol.is_gpu_pool(engine_props(props)) is gpu


def test_a_cpu_pool_may_be_always_on() -> None:
    props = {"name": "system", "nodeType": "PRO2-XXS", "minSize": 1, "maxSize": 1, "autoscaling": False}
    for validate in (pol.gpu_pool_scales_to_zero, pol.gpu_pool_taint_and_config_label):
        assert violations(validate, resource_args(POOL, props)) == []


def test_the_gpu_node_type_pattern_is_configurable() -> None:
    props = gpu_pool(nodeType="ACME-GPU-1", minSize=1, taints=[])
    assert violations(pol.gpu_pool_scales_to_zero, resource_args(POOL, props, opts=AUTOSCALED)) == []
    config = {"gpu_node_type_pattern": "^ACME-GPU"}
    args = resource_args(POOL, props, opts=AUTOSCALED, config=config)
    assert len(violations(pol.gpu_pool_scales_to_zero, args)) == 1


def test_a_gpu_pool_with_taint_and_label_passes() -> None:
    assert violations(pol.gpu_pool_taint_and_config_label, resource_args(POOL, gpu_pool())) == []


def test_a_gpu_pool_without_the_taint_or_the_label_fails() -> None:
    args = resource_args(POOL, gpu_pool(taints=[], labels={}))
    assert violations(pol.gpu_pool_taint_and_config_label, args) == [
        "GPU pool 'ci-training' (L40S-1-48G): nvidia.com/gpu taint=none: a GPU pool must be tainted "
        "nvidia.com/gpu:NoSchedule so that only CI jobs (which tolerate it) and the GPU operator run there",
        "GPU pool 'ci-training' (L40S-1-48G): label nvidia.com/device-plugin.config=unset: a GPU pool must name "
        "its device-plugin config, or its nodes get the default (one job per GPU)",
    ]


def test_a_prefer_no_schedule_taint_does_not_keep_pods_off() -> None:
    soft = [{"key": "nvidia.com/gpu", "value": "present", "effect": "PreferNoSchedule"}]
    found = violations(pol.gpu_pool_taint_and_config_label, resource_args(POOL, gpu_pool(taints=soft)))
    assert found[0].startswith("GPU pool 'ci-training' (L40S-1-48G): nvidia.com/gpu taint=['nvidia.com/gpu=present:")


# ---------------------------------------------------------------------------------------------------------
# The cluster, and every pool


def test_a_protected_cluster_passes_and_an_unprotected_one_fails() -> None:
    props = {"name": "gpu-ci", "type": "kapsule"}
    assert violations(pol.kapsule_cluster_protected, resource_args(CLUSTER, props, opts=options(protect=True))) == []
    assert violations(pol.kapsule_cluster_protected, resource_args(CLUSTER, props)) == [
        "Kapsule cluster 'gpu-ci': protect=False: the cluster must be protected so that no `pulumi up` or "
        "`destroy` deletes it (gpu-ci protects it always: see docs/security.md)"
    ]


def test_an_adopted_cluster_read_with_get_is_not_applicable() -> None:
    with pytest.raises(_NotApplicableError):
        violations(pol.kapsule_cluster_protected, resource_args(CLUSTER, {}))


def test_pools_must_be_protected() -> None:
    props = {"name": "system", "nodeType": "PRO2-XXS"}
    assert violations(pol.kapsule_pool_protected, resource_args(POOL, props, opts=options(protect=True))) == []
    assert violations(pol.kapsule_pool_protected, resource_args(POOL, props)) == [
        "Kapsule pool 'system': protect=False: pools must be protected; a node-type change goes through a new pool "
        "(docs/security.md, 'Safe replacements')"
    ]


# ---------------------------------------------------------------------------------------------------------
# Stack: the device-plugin config each GPU pool selects exists


def sharing_stack(pool_key: str = "ci-training", data_keys: tuple[str, ...] = ("ci-training", "no_sharing")) -> list:
    return [
        stack_resource(POOL, "kapsule-ci-training", gpu_pool(labels={DEVICE_PLUGIN_CONFIG_LABEL: pool_key})),
        stack_resource(POOL, "kapsule-system", {"name": "system", "nodeType": "PRO2-XXS"}),
        stack_resource(
            CONFIG_MAP,
            "gpu-sharing-config",
            {"metadata": {"name": "sharing", "namespace": "kube-system"}, "data": dict.fromkeys(data_keys, "v")},
        ),
        stack_resource(
            CLUSTER_POLICY_PATCH, "cp", {"spec": {"devicePlugin": {"config": {"name": "sharing", "default": "x"}}}}
        ),
    ]


def test_gpu_pools_selecting_existing_configs_pass() -> None:
    assert violations(pol.gpu_pool_config_exists, StackValidationArgs(sharing_stack())) == []


def test_a_gpu_pool_selecting_a_missing_config_fails_on_the_pool() -> None:
    reported: list[tuple[str, str | None]] = []
    args = StackValidationArgs(sharing_stack(pool_key="ci-trainig"))
    pol.gpu_pool_config_exists(args, recorder(reported))
    assert reported == [
        (
            "GPU pool 'ci-training': nvidia.com/device-plugin.config='ci-trainig' is not a key of the device-plugin "
            "ConfigMap 'sharing' (its keys are ['ci-training', 'no_sharing'])",
            f"urn:pulumi:dev::gpu-ci::{POOL}::kapsule-ci-training",
        )
    ]


def test_a_missing_config_map_fails() -> None:
    resources = [r for r in sharing_stack() if r.resource_type != CONFIG_MAP]
    (found,) = violations(pol.gpu_pool_config_exists, StackValidationArgs(resources))
    assert found.endswith("is not a key of the device-plugin ConfigMap 'sharing' (no such ConfigMap is in the stack)")


def test_a_config_map_whose_state_is_not_known_yet_is_not_judged() -> None:
    """A first preview, before the cluster exists: the engine hands the stack rules no state for resources whose
    provider it cannot configure (the kubeconfig is unknown), so the ConfigMap has no props at all."""
    resources = [
        stack_resource(CONFIG_MAP, "gpu-sharing-config", {}) if r.resource_type == CONFIG_MAP else r
        for r in sharing_stack()
    ]
    assert violations(pol.gpu_pool_config_exists, StackValidationArgs(resources)) == []
