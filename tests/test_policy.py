"""The policy pack (policy/): each rule called directly, then every rule over the real program's resources.

The pack cannot run here (`pulumi preview --policy-pack` needs the CLI), and `policy/__main__.py` is never
imported: building the PolicyPack starts a gRPC server and blocks. Props reach the rules the way
pulumi-policy 1.21's analyzer hands them over (`engine_props`): through a protobuf Struct (numbers become
floats), deserialised with secrets unwrapped, inside the unknown-checking proxy.
"""

from __future__ import annotations

import ast
import copy
import importlib.metadata
import re
import sys
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import tomli_w
import yaml
from pulumi.runtime import rpc
from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    StackValidationArgs,
)
from pulumi_policy.policy import _NotApplicableError
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError

from infra.catalog import BUILTIN_NODE_TYPES
from infra.config.errors import SpecError
from infra.config.gpu_operator import GpuOperatorSpec
from infra.config.load import load_spec
from infra.config.pools import GPU_TAINT_EFFECT, GPU_TAINT_KEY, PoolSpec
from infra.model.checks import POLICY_MIN_POLL_TIMEOUT_SECONDS
from infra.model.pools import DEVICE_PLUGIN_CONFIG_LABEL
from infra.offline import policy_check
from infra.offline.harness import ProgramRun, run_program
from infra.offline.policy_check import analyzed, engine_props
from infra.offline.stack_config import PROJECT_ROOT, StackConfig
from policy import policies as pol

POLICY_DIR = PROJECT_ROOT / "policy"
POOL = "scaleway:kubernetes/pool:Pool"
CLUSTER = "scaleway:kubernetes/cluster:Cluster"
RELEASE = "kubernetes:helm.sh/v3:Release"
PROJECT_VARIABLE = "gitlab:index/projectVariable:ProjectVariable"
BUCKET = "scaleway:object/bucket:Bucket"
BUCKET_ACL = "scaleway:object/bucketAcl:BucketAcl"
BUCKET_POLICY = "scaleway:object/bucketPolicy:BucketPolicy"
NAMESPACE = "scaleway:registry/namespace:Namespace"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
CLUSTER_POLICY_PATCH = "kubernetes:nvidia.com/v1:ClusterPolicyPatch"

Validate = Callable[[Any, Any], None]


# ---------------------------------------------------------------------------------------------------------
# How the analyzer presents a resource to a policy


# engine_props: `inputs` as `Analyze` hands them to a policy (infra.offline.policy_check, shared with `plan`).


def _record(reported: list[tuple[str, str | None]]) -> Callable[..., None]:
    """A report_violation that keeps (message, urn)."""

    def report(message: str, urn: str | None = None) -> None:
        reported.append((message, urn))

    return report


def options(*, protect: bool = False, ignore_changes: list[str] | None = None) -> PolicyResourceOptions:
    return PolicyResourceOptions(
        protect=protect,
        ignore_changes=list(ignore_changes or []),
        delete_before_replace=None,
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(0, 0, 0),
        additional_secret_outputs=[],
    )


def resource_args(
    type_token: str,
    props: Mapping[str, Any],
    *,
    name: str = "r",
    opts: PolicyResourceOptions | None = None,
    config: Mapping[str, Any] | None = None,
) -> ResourceValidationArgs:
    urn = f"urn:pulumi:dev::gpu-ci::{type_token}::{name}"
    return ResourceValidationArgs(type_token, engine_props(props), urn, name, opts or options(), None, config)


def violations(validate: Validate, args: ResourceValidationArgs | StackValidationArgs) -> list[str]:
    found: list[str] = []
    validate(args, lambda message, urn=None: found.append(message))
    return found


# ---------------------------------------------------------------------------------------------------------
# GPU pools


def gpu_pool(**changes: Any) -> dict[str, Any]:
    props = {
        "name": "ci-training",
        "nodeType": "L40S-1-48G",
        "size": 0,
        "minSize": 0,
        "maxSize": 1,
        "autoscaling": True,
        "labels": {DEVICE_PLUGIN_CONFIG_LABEL: "ci-training"},
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
    }
    props.update(changes)
    return props


AUTOSCALED = options(ignore_changes=["size"])


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
# The cluster


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


# ---------------------------------------------------------------------------------------------------------
# The runner


def runner_release(kubernetes: dict[str, Any] | None = None, **values: Any) -> dict[str, Any]:
    """A gitlab-runner release whose config.toml has one kubernetes runner with `kubernetes` settings."""
    entry = {"executor": "kubernetes", "kubernetes": {"namespace": "gitlab-runner", **(kubernetes or {})}}
    chart_values = {"runners": {"config": tomli_w.dumps({"runners": [entry]})}, **values}
    return {"name": "gitlab-runner", "chart": "gitlab-runner", "atomic": True, "timeout": 600, "values": chart_values}


def test_a_poll_timeout_covering_a_cold_start_passes() -> None:
    args = resource_args(RELEASE, runner_release({"poll_timeout": 900}))
    assert violations(pol.runner_poll_timeout_covers_cold_start, args) == []


def test_a_short_poll_timeout_fails_with_its_value() -> None:
    args = resource_args(RELEASE, runner_release({"poll_timeout": 300}))
    assert violations(pol.runner_poll_timeout_covers_cold_start, args) == [
        "Helm release 'gitlab-runner' (gitlab-runner): runners.config [[runners]] '0': kubernetes.poll_timeout=300: "
        "below 900 s, the time a GPU node takes from zero to a running job pod; such jobs fail waiting (gpu-ci: "
        "raise platform.pools.<pool>.cold_start_minutes, or lower this policy's min_poll_timeout_seconds)"
    ]


def test_no_poll_timeout_means_the_runners_180_seconds() -> None:
    found = violations(pol.runner_poll_timeout_covers_cold_start, resource_args(RELEASE, runner_release()))
    assert "kubernetes.poll_timeout=180: below 900 s" in found[0]


def test_the_minimum_poll_timeout_is_configurable() -> None:
    args = resource_args(RELEASE, runner_release({"poll_timeout": 300}), config={"min_poll_timeout_seconds": 300.0})
    assert violations(pol.runner_poll_timeout_covers_cold_start, args) == []


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"runners": {"secret": "gitlab-runner-token"}}, "values.runners.config=unset: the chart's default config"),
        ({"runners": {"config": "[[runners]\nexecutor="}}, "values.runners.config is not TOML the policy can read"),
    ],
    ids=["chart-default", "not-toml"],
)
def test_a_runner_config_the_policy_cannot_check_is_a_violation(values: dict[str, Any], expected: str) -> None:
    props = {**runner_release(), "values": values}
    (found,) = violations(pol.runner_poll_timeout_covers_cold_start, resource_args(RELEASE, props))
    assert expected in found


def test_other_charts_are_not_the_runner() -> None:
    props = {**runner_release(), "chart": "ingress-nginx"}
    for validate in (pol.runner_poll_timeout_covers_cold_start, pol.runner_job_pods_unprivileged):
        assert violations(validate, resource_args(RELEASE, props)) == []
    assert pol._runner_release(resource_args(RELEASE, {**props, "chart": "oci://registry.example/gitlab-runner"}))


def test_unprivileged_job_pods_pass() -> None:
    settings = {"privileged": False, "build_container_security_context": {"allow_privilege_escalation": False}}
    assert violations(pol.runner_job_pods_unprivileged, resource_args(RELEASE, runner_release(settings))) == []


@pytest.mark.parametrize(
    ("settings", "shown"),
    [
        ({"privileged": True}, "kubernetes.privileged=True"),
        ({"allow_privilege_escalation": True}, "kubernetes.allow_privilege_escalation=True"),
        (
            {"build_container_security_context": {"privileged": True}},
            "kubernetes.build_container_security_context.privileged=True",
        ),
        ({"cap_add": ["NET_ADMIN", "sys_admin"]}, "kubernetes.cap_add=['NET_ADMIN', 'SYS_ADMIN']"),
    ],
    ids=["privileged", "escalation", "build-context", "sys-admin"],
)
def test_privileged_job_pods_fail(settings: dict[str, Any], shown: str) -> None:
    found = violations(pol.runner_job_pods_unprivileged, resource_args(RELEASE, runner_release(settings)))
    assert found == [
        f"Helm release 'gitlab-runner' (gitlab-runner): runners.config [[runners]] '0': {shown}: job pods must not "
        "be privileged or escalate privileges (a job would be root on the GPU node)"
    ]


def test_runner_rbac_in_its_namespace_passes_and_cluster_wide_fails() -> None:
    namespaced = resource_args(RELEASE, runner_release(rbac={"create": True, "clusterWideAccess": False}))
    assert violations(pol.runner_rbac_namespaced, namespaced) == []
    wide = resource_args(RELEASE, runner_release(rbac={"create": True, "clusterWideAccess": True}))
    assert violations(pol.runner_rbac_namespaced, wide) == [
        "Helm release 'gitlab-runner' (gitlab-runner): values.rbac.clusterWideAccess=True: the runner's Role must "
        "be limited to its namespace (a ClusterRole lets it create pods and read secrets anywhere)"
    ]


def test_an_atomic_release_with_a_timeout_passes_and_others_fail() -> None:
    assert violations(pol.helm_release_atomic, resource_args(RELEASE, runner_release())) == []
    props = {"name": "ingress", "chart": "ingress-nginx", "timeout": 0}
    assert violations(pol.helm_release_atomic, resource_args(RELEASE, props)) == [
        "Helm release 'ingress' (chart 'ingress-nginx'): atomic=unset: set atomic: true so a failed upgrade rolls back "
        "(a runner release may instead skip the await with strategy Recreate)",
        "Helm release 'ingress' (chart 'ingress-nginx'): timeout=0: set a timeout (seconds) after which the "
        "release rolls back",
    ]


def test_a_runner_release_may_drain_instead_of_being_atomic() -> None:
    """skipAwait + Recreate: the old manager finishes its jobs before the new one starts; Helm must not wait."""
    draining = {**runner_release(strategy={"type": "Recreate"}), "skipAwait": True}
    del draining["atomic"]
    assert violations(pol.helm_release_atomic, resource_args(RELEASE, draining)) == []
    rolling = {**draining, "values": {**draining["values"], "strategy": {"type": "RollingUpdate"}}}
    not_runner = {**draining, "chart": "ingress-nginx"}
    for props in (rolling, not_runner, {**draining, "skipAwait": False}):
        assert len(violations(pol.helm_release_atomic, resource_args(RELEASE, props))) == 1


# ---------------------------------------------------------------------------------------------------------
# Job pods: pod_spec patches, capabilities, the service-account token, identity overrides, isolation

GPU_PATCH = {"name": "gpu", "patch_type": "strategic", "patch": "containers:\n- name: build\n"}


def _patch(patch: str, patch_type: str = "strategic") -> dict[str, Any]:
    return {"pod_spec": [GPU_PATCH, {"name": "extra", "patch_type": patch_type, "patch": patch}]}


@pytest.mark.parametrize(
    ("settings", "shown"),
    [
        (
            _patch("containers:\n- name: build\n  securityContext: {privileged: true}\n"),
            "pod_spec[extra].patch.containers[0].securityContext.privileged=True",
        ),
        (_patch('{"hostPID": true}', "merge"), "pod_spec[extra].patch.hostPID=True"),
        (_patch("hostNetwork: true\n"), "pod_spec[extra].patch.hostNetwork=True"),
        (_patch("volumes:\n- name: root\n  hostPath: {path: /}\n"), "pod_spec[extra].patch.volumes[0].hostPath='/'"),
        (_patch('[{"op": "add", "path": "/hostPID", "value": true}]', "json"), "pod_spec[extra].patch.hostPID=True"),
        (
            _patch("containers:\n- name: build\n  securityContext: {capabilities: {add: [NET_RAW]}}\n"),
            "pod_spec[extra].patch.containers[0].securityContext.capabilities.add=['NET_RAW']",
        ),
        ({"cap_add": ["NET_RAW"]}, "kubernetes.cap_add=['NET_RAW']"),
        ({"automount_service_account_token": True}, "kubernetes.automount_service_account_token=True"),
        (
            {"pod_spec": [{"name": "file", "patch_path": "/etc/patch.yaml"}]},
            "pod_spec[file].patch_path='/etc/patch.yaml'",
        ),
    ],
    ids=[
        "patch-privileged",
        "host-pid",
        "host-network",
        "host-path",
        "json-patch",
        "patch-cap",
        "net-raw",
        "automount",
        "patch-path",
    ],
)
def test_patches_and_settings_that_reach_the_host_fail(settings: dict[str, Any], shown: str) -> None:
    found = violations(pol.runner_job_pods_unprivileged, resource_args(RELEASE, runner_release(settings)))
    shown = shown if shown.startswith("kubernetes.") else f"kubernetes.{shown}"
    assert found == [
        f"Helm release 'gitlab-runner' (gitlab-runner): runners.config [[runners]] '0': {shown}: job pods must not "
        "be privileged or escalate privileges (a job would be root on the GPU node)"
    ]


def test_the_gpu_patch_and_an_allowed_capability_pass() -> None:
    settings = {"pod_spec": [GPU_PATCH], "cap_add": ["NET_BIND_SERVICE"], "automount_service_account_token": False}
    args = resource_args(RELEASE, runner_release(settings), config={"allowed_capabilities": ["CAP_NET_BIND_SERVICE"]})
    assert violations(pol.runner_job_pods_unprivileged, args) == []
    assert len(violations(pol.runner_job_pods_unprivileged, resource_args(RELEASE, runner_release(settings)))) == 1
    privileged = resource_args(
        RELEASE, runner_release({"cap_add": ["SYS_ADMIN"]}), config={"allowed_capabilities": ["SYS_ADMIN"]}
    )
    assert len(violations(pol.runner_job_pods_unprivileged, privileged)) == 1  # never allowed


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("service_account_overwrite_allowed", ".*"),
        ("bearer_token_overwrite_allowed", True),
        ("namespace_overwrite_allowed", "ci-.*"),
    ],
)
def test_a_job_choosing_its_identity_or_namespace_fails(key: str, value: Any) -> None:
    assert violations(pol.runner_no_identity_overrides, resource_args(RELEASE, runner_release())) == []
    (found,) = violations(pol.runner_no_identity_overrides, resource_args(RELEASE, runner_release({key: value})))
    assert f"kubernetes.{key}={pol._show(value)}: a job must not choose its service account" in found


ISOLATED = {
    "allowed_images": ["rg.fr-par.scw.cloud/gpu-ci/**"],
    "allowed_services": [],
    "cap_drop": ["ALL"],
    "privileged": False,
    "automount_service_account_token": False,
}


def test_a_runner_stating_its_isolation_passes() -> None:
    assert violations(pol.runner_job_isolation, resource_args(RELEASE, runner_release(ISOLATED))) == []


@pytest.mark.parametrize(
    ("change", "shown"),
    [
        ({"allowed_images": []}, "kubernetes.allowed_images=[]"),
        ({"allowed_images": ["*"]}, "kubernetes.allowed_images=['*']"),
        ({"allowed_services": ["**/*"]}, "kubernetes.allowed_services=['**/*']"),
        ({"allowed_services": None}, "kubernetes.allowed_services=unset"),
        ({"cap_drop": ["NET_RAW"]}, "kubernetes.cap_drop=['NET_RAW']"),
        ({"privileged": None}, "kubernetes.privileged=unset"),
        ({"automount_service_account_token": None}, "kubernetes.automount_service_account_token=unset"),
    ],
    ids=[
        "no-images",
        "any-image",
        "any-service",
        "services-unset",
        "no-drop-all",
        "privileged-unset",
        "automount-unset",
    ],
)
def test_a_runner_missing_an_isolation_setting_fails(change: dict[str, Any], shown: str) -> None:
    settings = {k: v for k, v in {**ISOLATED, **change}.items() if v is not None}
    (found,) = violations(pol.runner_job_isolation, resource_args(RELEASE, runner_release(settings)))
    assert f"runners.config [[runners]] '0': {shown}: " in found


# ---------------------------------------------------------------------------------------------------------
# RBAC, the runner registration, pools, namespaces

ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
USER_RUNNER = "gitlab:index/userRunner:UserRunner"
K8S_NAMESPACE = "kubernetes:core/v1:Namespace"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
PODS_RULE = {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "delete", "get"]}


def test_a_role_granting_a_wildcard_fails_and_a_named_one_passes() -> None:
    named = {"metadata": {"name": "runner"}, "rules": [PODS_RULE]}
    assert violations(pol.rbac_least_privilege, resource_args(ROLE, named)) == []
    wide = {"metadata": {"name": "runner"}, "rules": [PODS_RULE, {**PODS_RULE, "resources": ["*"]}]}
    assert violations(pol.rbac_least_privilege, resource_args(ROLE, wide)) == [
        "Role 'runner': rules[1].resources contains '*': grant the resources and verbs the workload needs, by name"
    ]


def test_runner_chart_rbac_rules_are_listed_and_named() -> None:
    listed = runner_release(rbac={"create": True, "rules": [PODS_RULE]})
    assert violations(pol.rbac_least_privilege, resource_args(RELEASE, listed)) == []
    default = runner_release(rbac={"create": True})
    assert (
        "values.rbac.rules=unset: the chart's default Role"
        in violations(pol.rbac_least_privilege, resource_args(RELEASE, default))[0]
    )
    wide = runner_release(rbac={"create": True, "rules": [{**PODS_RULE, "verbs": ["*"]}]})
    (found,) = violations(pol.rbac_least_privilege, resource_args(RELEASE, wide))
    assert "values.rbac.rules[0].verbs contains '*'" in found


def registration(**changes: Any) -> dict[str, Any]:
    props = {
        "description": "gpu-ci",
        "runnerType": "project_type",
        "projectId": 42,
        "tagLists": ["kapsule", "gpu"],
        "untagged": False,
        "locked": True,
        "accessLevel": "not_protected",
    }
    props.update(changes)
    return props


def test_a_tagged_locked_registration_passes() -> None:
    assert violations(pol.runner_registration_scoped, resource_args(USER_RUNNER, registration())) == []
    group = registration(runnerType="group_type", projectId=None, groupId=7, locked=None)
    assert violations(pol.runner_registration_scoped, resource_args(USER_RUNNER, group)) == []


@pytest.mark.parametrize(
    ("changes", "config", "expected"),
    [
        ({"untagged": True}, None, "GitLab runner 'gpu-ci': untagged=True: set untagged: false"),
        ({"untagged": None}, None, "GitLab runner 'gpu-ci': untagged=unset"),
        ({"locked": False}, None, "GitLab runner 'gpu-ci': locked=False: a project runner must be locked"),
        (
            {},
            {"allowed_access_levels": ["ref_protected"]},
            "GitLab runner 'gpu-ci': accessLevel='not_protected': allowed are ['ref_protected']",
        ),
        ({"accessLevel": None}, None, "GitLab runner 'gpu-ci': accessLevel=unset"),
    ],
    ids=["untagged", "untagged-unset", "unlocked", "level-not-allowed", "level-unset"],
)
def test_a_loose_registration_fails(changes: dict[str, Any], config: dict[str, Any] | None, expected: str) -> None:
    props = {k: v for k, v in registration(**changes).items() if v is not None}
    (found,) = violations(pol.runner_registration_scoped, resource_args(USER_RUNNER, props, config=config))
    assert found.startswith(expected)


def test_pools_must_be_protected() -> None:
    props = {"name": "system", "nodeType": "PRO2-XXS"}
    assert violations(pol.kapsule_pool_protected, resource_args(POOL, props, opts=options(protect=True))) == []
    assert violations(pol.kapsule_pool_protected, resource_args(POOL, props)) == [
        "Kapsule pool 'system': protect=False: pools must be protected; a node-type change goes through a new pool "
        "(docs/security.md, 'Safe replacements')"
    ]


@pytest.mark.parametrize(
    ("level", "ok"), [("baseline", True), ("restricted", True), ("privileged", False), (None, False)]
)
def test_namespaces_enforce_baseline_pod_security(level: str | None, ok: bool) -> None:
    labels = {"app.kubernetes.io/part-of": "gpu-ci", **({pol.POD_SECURITY_ENFORCE_LABEL: level} if level else {})}
    props = {"metadata": {"name": "gitlab-runner", "labels": labels}}
    args = resource_args(K8S_NAMESPACE, props)
    found = violations(pol.namespace_pod_security, args)
    assert found == (
        []
        if ok
        else [
            f"namespace 'gitlab-runner': label pod-security.kubernetes.io/enforce={pol._show(level)}: set it to "
            "'baseline' or 'restricted' so the API server refuses privileged job pods"
        ]
    )
    exempt = resource_args(K8S_NAMESPACE, props, config={"exempt_namespaces": ["gitlab-runner"]})
    assert violations(pol.namespace_pod_security, exempt) == []


DENY_ALL = {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}


def _namespace_stack(spec: dict[str, Any] | None, namespace: str = "gitlab-runner") -> list[PolicyResource]:
    resources = [stack_resource(K8S_NAMESPACE, "runner-namespace", {"metadata": {"name": "gitlab-runner"}})]
    if spec is not None:
        props = {"metadata": {"name": "default-deny", "namespace": namespace}, "spec": spec}
        resources.append(stack_resource(NETWORK_POLICY, "deny", props))
    return resources


def test_a_default_deny_network_policy_in_the_runner_namespace_passes() -> None:
    assert violations(pol.runner_namespace_default_deny, StackValidationArgs(_namespace_stack(DENY_ALL))) == []
    selector = {**DENY_ALL, "podSelector": {"matchLabels": {}}}
    assert violations(pol.runner_namespace_default_deny, StackValidationArgs(_namespace_stack(selector))) == []


@pytest.mark.parametrize(
    ("spec", "namespace"),
    [
        (None, "gitlab-runner"),
        (DENY_ALL, "other"),
        ({**DENY_ALL, "policyTypes": ["Ingress"]}, "gitlab-runner"),
        ({**DENY_ALL, "egress": [{}]}, "gitlab-runner"),  # allow-all egress
        ({**DENY_ALL, "podSelector": {"matchLabels": {"job": "x"}}}, "gitlab-runner"),
    ],
    ids=["none", "elsewhere", "ingress-only", "allows-egress", "some-pods"],
)
def test_a_runner_namespace_without_default_deny_fails_on_the_namespace(
    spec: dict[str, Any] | None, namespace: str
) -> None:
    resources = _namespace_stack(spec, namespace)
    reported: list[tuple[str, str | None]] = []
    pol.runner_namespace_default_deny(StackValidationArgs(resources), _record(reported))
    assert reported == [
        (
            "namespace 'gitlab-runner': no default-deny NetworkPolicy (empty podSelector, policyTypes [Ingress, "
            "Egress], no rule): job pods could reach the whole cluster and the internet",
            f"urn:pulumi:dev::gpu-ci::{K8S_NAMESPACE}::runner-namespace",
        )
    ]


def test_a_runner_release_namespace_the_stack_does_not_create_is_checked_too() -> None:
    release = stack_resource(RELEASE, "runner-release", {**runner_release(), "namespace": "ci-jobs"})
    (found,) = violations(pol.runner_namespace_default_deny, StackValidationArgs([release]))
    assert found.startswith("namespace 'ci-jobs': no default-deny NetworkPolicy")


# ---------------------------------------------------------------------------------------------------------
# CI/CD variables

WANDB_KEY = "0123456789abcdef0123456789abcdef01234567"
GITLAB_TOKEN = "glpat-Abcdefghij0123456789"


def variable(key: str, value: Any, **flags: Any) -> dict[str, Any]:
    return {"project": "ml-team/training", "key": key, "value": value, **flags}


def test_secret_inputs_reach_a_policy_unwrapped() -> None:
    """Why the rule judges by name and value: the analyzer drops the secret marking before a policy sees it."""
    wrapped = {rpc._special_sig_key: rpc._special_secret_sig, "value": WANDB_KEY}
    assert engine_props({"value": wrapped})["value"] == WANDB_KEY


@pytest.mark.parametrize(
    "props",
    [
        variable("REGISTRY", "rg.fr-par.scw.cloud/gpu-ci"),
        variable("HYPEROPT_EPOCHS", "8", masked=False),
        variable("WANDB_API_KEY", WANDB_KEY, masked=True, protected=True),
        variable("HF_TOKEN", "hf_x", hidden=True, protected=True),
        variable("MAX_TOKENS", "4096"),
    ],
    ids=["plain", "plain-unmasked", "secret-masked", "secret-hidden", "not-a-token"],
)
def test_plain_or_masked_and_protected_variables_pass(props: dict[str, Any]) -> None:
    assert violations(pol.ci_secret_variables_masked, resource_args(PROJECT_VARIABLE, props)) == []


def test_a_credential_named_variable_left_unmasked_fails_without_showing_its_value() -> None:
    props = variable("WANDB_API_KEY", WANDB_KEY, masked=False, protected=True)
    found = violations(pol.ci_secret_variables_masked, resource_args(PROJECT_VARIABLE, props))
    assert found == [
        "CI variable 'WANDB_API_KEY' (ml-team/training): masked=False, protected=True: it looks like a credential "
        "(its name) and must be masked and protected (gpu-ci: platform.ci.variables.WANDB_API_KEY.secret, which "
        "defaults to both)"
    ]
    assert WANDB_KEY not in found[0]


def test_a_credential_value_under_any_name_fails_without_showing_it() -> None:
    props = variable("NOTES", f"use {GITLAB_TOKEN} to push", masked=True)
    (found,) = violations(pol.ci_secret_variables_masked, resource_args(PROJECT_VARIABLE, props))
    assert "CI variable 'NOTES' (ml-team/training): masked=True, protected=unset" in found
    assert "(its value)" in found
    assert GITLAB_TOKEN not in found


def test_an_unknown_value_is_judged_by_its_name_only() -> None:
    plain = variable("REGISTRY", UNKNOWN_STRING_VALUE)
    assert violations(pol.ci_secret_variables_masked, resource_args(PROJECT_VARIABLE, plain)) == []
    secret = variable("SCW_SECRET_KEY", UNKNOWN_STRING_VALUE)
    assert len(violations(pol.ci_secret_variables_masked, resource_args(PROJECT_VARIABLE, secret))) == 1


def test_secret_keys_and_unprotected_exemptions_are_configurable() -> None:
    props = variable("MODEL_SEED", "42", masked=True)
    config = {"extra_secret_keys": ["MODEL_SEED"]}
    (found,) = violations(pol.ci_secret_variables_masked, resource_args(PROJECT_VARIABLE, props, config=config))
    assert "(the policy's extra_secret_keys)" in found
    config["allow_unprotected"] = ["MODEL_SEED"]
    assert violations(pol.ci_secret_variables_masked, resource_args(PROJECT_VARIABLE, props, config=config)) == []


# ---------------------------------------------------------------------------------------------------------
# Public storage

ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"


@pytest.mark.parametrize(
    ("type_token", "props"),
    [
        (BUCKET, {"name": "gpu-ci-runner-cache", "region": "fr-par"}),
        (BUCKET, {"name": "gpu-ci-runner-cache", "acl": "private"}),
        (BUCKET_ACL, {"bucket": "gpu-ci-runner-cache", "acl": "private"}),
        (
            BUCKET_POLICY,
            {
                "bucket": "gpu-ci-runner-cache",
                "policy": '{"Version": "2023-04-17", "Statement": [{"Sid": "ci", "Effect": "Allow", '
                '"Principal": {"SCW": "application_id:1234"}, "Action": "s3:*"}]}',
            },
        ),
    ],
    ids=["bucket", "private-acl", "acl-resource", "policy-for-one-app"],
)
def test_private_buckets_pass(type_token: str, props: dict[str, Any]) -> None:
    assert violations(pol.no_public_buckets, resource_args(type_token, props)) == []


@pytest.mark.parametrize(
    ("type_token", "props", "expected"),
    [
        (BUCKET, {"name": "cache", "acl": "public-read"}, "bucket 'cache': acl='public-read'"),
        (
            BUCKET_ACL,
            {
                "bucket": "cache",
                "accessControlPolicy": {
                    "grants": [{"grantee": {"type": "Group", "uri": ALL_USERS}, "permission": "READ"}]
                },
            },
            f"bucket 'cache': grant {ALL_USERS}:READ",
        ),
        (
            BUCKET_POLICY,
            {
                "bucket": "cache",
                "policy": '{"Statement": [{"Sid": "anyone", "Effect": "Allow", "Principal": "*", '
                '"Action": "s3:GetObject"}]}',
            },
            "bucket 'cache': policy statement 'anyone' allows Principal '*'",
        ),
    ],
    ids=["canned-acl", "grant-all-users", "policy-for-anyone"],
)
def test_public_buckets_fail(type_token: str, props: dict[str, Any], expected: str) -> None:
    (found,) = violations(pol.no_public_buckets, resource_args(type_token, props))
    assert found == (
        f"{expected}: Object Storage buckets must stay private (or list the bucket in this policy's "
        "allowed_public_buckets)"
    )
    config = {"allowed_public_buckets": ["cache"]}
    assert violations(pol.no_public_buckets, resource_args(type_token, props, config=config)) == []


def test_a_public_registry_namespace_fails_unless_allowed() -> None:
    private = {"name": "gpu-ci", "region": "fr-par", "isPublic": False}
    assert violations(pol.registry_namespace_private, resource_args(NAMESPACE, private)) == []
    public = {**private, "isPublic": True}
    assert violations(pol.registry_namespace_private, resource_args(NAMESPACE, public)) == [
        "registry namespace 'gpu-ci': isPublic=True: anyone could pull the training images; keep it private "
        "(gpu-ci: platform.registry.is_public: false) or list it in this policy's allowed_public_namespaces"
    ]
    config = {"allowed_public_namespaces": ["gpu-ci"]}
    assert violations(pol.registry_namespace_private, resource_args(NAMESPACE, public, config=config)) == []


# ---------------------------------------------------------------------------------------------------------
# Stack: the device-plugin config each GPU pool selects exists


def stack_resource(type_token: str, name: str, props: Mapping[str, Any]) -> PolicyResource:
    urn = f"urn:pulumi:dev::gpu-ci::{type_token}::{name}"
    return PolicyResource(type_token, engine_props(props), urn, name, options(), None, None, [], {})


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
    pol.gpu_pool_config_exists(args, _record(reported))
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


# ---------------------------------------------------------------------------------------------------------
# The pack itself: what it runs, and that it agrees with the program


def test_the_pack_agrees_with_the_program_constants() -> None:
    assert pol.GPU_TAINT_KEY == GPU_TAINT_KEY
    assert GPU_TAINT_EFFECT in pol.GPU_TAINT_EFFECTS
    assert pol.DEVICE_PLUGIN_CONFIG_LABEL == DEVICE_PLUGIN_CONFIG_LABEL
    assert GpuOperatorSpec().config_map == pol.DEFAULT_DEVICE_PLUGIN_CONFIG_MAP
    default_cold_start = PoolSpec(node_type="L4-1-24G", zone="fr-par-2").cold_start_minutes
    assert 60 * default_cold_start == pol.DEFAULT_MIN_POLL_TIMEOUT_SECONDS == POLICY_MIN_POLL_TIMEOUT_SECONDS
    for node in BUILTIN_NODE_TYPES.values():
        assert pol.is_gpu_pool(engine_props({"nodeType": node.name})) is node.is_gpu, node.name


def test_policies_have_unique_names_and_schema_defaults_that_match_the_code() -> None:
    names = [p.name for p in pol.POLICIES]
    assert len(names) == len(set(names)) == 18
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", n) for n in names)
    schemas = {p.name: p.config_schema.properties for p in pol.POLICIES if p.config_schema}
    assert schemas["runner-poll-timeout-covers-cold-start"]["min_poll_timeout_seconds"]["default"] == 900
    assert schemas["gpu-pool-scales-to-zero"]["gpu_node_type_pattern"]["default"] == pol.DEFAULT_GPU_NODE_TYPE_PATTERN


def test_the_pack_project_runs_python_in_its_own_virtualenv() -> None:
    project = yaml.safe_load((POLICY_DIR / "PulumiPolicy.yaml").read_text(encoding="utf-8"))
    assert project["runtime"] == {"name": "python", "options": {"toolchain": "pip", "virtualenv": "venv"}}
    assert re.fullmatch(r"\d+\.\d+\.\d+", project["version"])
    pins = {line.split("==")[0]: line for line in _requirements(POLICY_DIR / "requirements.txt")}
    assert set(pins) == {"pulumi", "pulumi-policy"}
    assert set(pins.values()) <= set(_requirements(PROJECT_ROOT / "requirements.txt"))  # same versions as tested


def test_the_pack_entry_point_only_builds_the_pack() -> None:
    tree = ast.parse((POLICY_DIR / "__main__.py").read_text(encoding="utf-8"))
    statements = [s for s in tree.body if not isinstance(s, ast.Import | ast.ImportFrom)]
    docstring, build = statements
    assert isinstance(docstring, ast.Expr) and isinstance(docstring.value, ast.Constant)
    assert isinstance(build, ast.Expr) and isinstance(build.value, ast.Call)
    assert ast.unparse(build) == ("PolicyPack(name=PACK_NAME, policies=POLICIES, enforcement_level=ENFORCEMENT_LEVEL)")


def _requirements(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


# ---------------------------------------------------------------------------------------------------------
# Bridge: every rule over what the real program registers (an in-process stand-in for
# `pulumi preview --policy-pack policy/`).
#
# Caveats: the props are the program's raw inputs as the mocks recorded them, not what a provider's Check
# returns (no provider defaults, no normalisation); nothing is unknown (the mocks resolve every output);
# stack policies see the mocks' outputs (inputs echoed plus a few computed fields); read resources
# (`Cluster.get`) are left out, as the engine analyses registrations. A rule that passes here can still
# fail on a default a provider adds: the real preview is the authority.


def policy_report(run: ProgramRun, config: Mapping[str, Mapping[str, Any]] | None = None) -> list[tuple[str, str, str]]:
    """(policy, resource name, message) for every violation: the bridge `python -m infra plan` runs."""
    return [(v.policy, v.resource, v.message) for v in policy_check.policy_report(run, config, pack=pol)]


def test_the_rules_see_the_programs_resources(dev_run: ProgramRun) -> None:
    """Guards the bridge against passing vacuously: each rule finds what it checks."""
    run = dev_run
    pools = {r.plain_inputs["name"]: analyzed(r, None) for r in run.by_type(POOL)}
    assert {name for name, args in pools.items() if pol._gpu_pool(args)} == {"ci-compile", "ci-training"}
    releases = [analyzed(r, None) for r in run.by_type(RELEASE)]
    assert len(releases) == 2  # one runner per GPU pool
    for release in releases:
        assert pol._runner_release(release)
        ((_, entry),) = pol._runner_entries(release, lambda *_: pytest.fail("config.toml unreadable"))
        assert entry["kubernetes"]["poll_timeout"] == 25 * 60
    assert [analyzed(r, None).props["key"] for r in run.by_type(PROJECT_VARIABLE)] == ["REGISTRY"]
    assert len(run.by_type(CLUSTER)) == len(run.by_type(NAMESPACE)) == len(run.by_type(CONFIG_MAP)) == 1


def test_the_dev_stack_passes_every_rule(dev_run: ProgramRun) -> None:
    assert policy_report(dev_run) == []


def test_the_dev_stack_with_a_cache_and_a_secret_variable_passes_every_rule(
    dev_stack: StackConfig, dev_platform: dict[str, Any]
) -> None:
    dev_platform["runner"]["cache"] = {"bucket": "gpu-ci-runner-cache"}
    dev_platform["ci"]["variables"] = {"WANDB_API_KEY": {"secret": "wandb_api_key"}, "HYPEROPT_SEED": "7"}
    secrets = {"runner_cache_access_key": "SCWPOLICYACCESSKEY00", "runner_cache_secret_key": "s", "wandb_api_key": "k"}
    stack = dev_stack.with_values({"platform": dev_platform, **secrets}, secret_keys=tuple(secrets))
    run = run_program(stack)
    assert {r.type for r in run.resources} >= {BUCKET, PROJECT_VARIABLE}
    assert policy_report(run) == []


def _min_size_one(p: dict[str, Any]) -> None:
    p["pools"]["ci-training"]["min_size"] = 1


def _fixed_gpu_pool(p: dict[str, Any]) -> None:
    p["pools"]["ci-training"].update(min_size=1, max_size=1, autoscaling=False)


def _public_registry(p: dict[str, Any]) -> None:
    p["registry"]["is_public"] = True


def _fast_cold_start(p: dict[str, Any]) -> None:
    for name in ("ci-compile", "ci-training"):
        p["pools"][name]["cold_start_minutes"] = 3
    p["runner"]["poll_timeout_margin_minutes"] = 1


def _unmasked_secret(p: dict[str, Any]) -> None:
    # a token as a plain value is refused by the spec itself (platform.ci.variables: use secret:)
    p["ci"]["variables"] = {"HF_TOKEN": {"secret": "hf_token", "masked": False}}


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            _min_size_one,
            [
                (
                    "gpu-pool-scales-to-zero",
                    "kapsule-ci-training",
                    "GPU pool 'ci-training' (L40S-1-48G): minSize=1: a GPU pool must scale to zero",
                )
            ],
        ),
        (
            _fixed_gpu_pool,
            [
                (
                    "gpu-pool-scales-to-zero",
                    "kapsule-ci-training",
                    "GPU pool 'ci-training' (L40S-1-48G): autoscaling=False",
                ),
                ("gpu-pool-scales-to-zero", "kapsule-ci-training", "GPU pool 'ci-training' (L40S-1-48G): minSize=1"),
                (
                    "gpu-pool-scales-to-zero",
                    "kapsule-ci-training",
                    "GPU pool 'ci-training' (L40S-1-48G): ignoreChanges=[]",
                ),
            ],
        ),
        (
            _public_registry,
            [("registry-namespace-private", "registry-namespace", "registry namespace 'gpu-ci': isPublic=True")],
        ),
        (
            _fast_cold_start,
            [
                (
                    "runner-poll-timeout-covers-cold-start",
                    "runner-ci-training-release",
                    "Helm release 'gitlab-runner-ci-training' (gitlab-runner): runners.config [[runners]] '0': "
                    "kubernetes.poll_timeout=240: below 900 s",
                ),
                (
                    "runner-poll-timeout-covers-cold-start",
                    "runner-release",
                    "Helm release 'gitlab-runner' (gitlab-runner): runners.config [[runners]] '0': "
                    "kubernetes.poll_timeout=240: below 900 s",
                ),
            ],
        ),
        (
            _unmasked_secret,
            [
                (
                    "ci-secret-variables-masked",
                    "gitlab-ci-var-HF_TOKEN",
                    "CI variable 'HF_TOKEN' (ml-team/training): masked=False",
                )
            ],
        ),
    ],
    ids=["gpu-min-size-1", "fixed-gpu-pool", "public-registry", "short-poll", "unmasked-secret"],
)
def test_what_the_pack_refuses_the_spec_says_at_the_key(
    dev_stack: StackConfig, dev_platform: dict[str, Any], edit: Callable[[dict[str, Any]], None], expected: list
) -> None:
    """Valid for the spec (the program registers it), refused by the pack with its default config: the spec
    warns at the key (so `plan` shows it and, with the pack's verdict, exits 1), and the pack refuses."""
    edit(dev_platform)
    run = run_program(dev_stack.with_values({"platform": dev_platform, "hf_token": "x"}, secret_keys=("hf_token",)))
    found = sorted(policy_report(run))  # registration order depends on the event loop
    expected = sorted(expected)
    assert [(p, r) for p, r, _ in found] == [(p, r) for p, r, _ in expected]
    for (_, _, message), (_, _, start) in zip(found, expected, strict=True):
        assert message.startswith(start), message
    warned = [message for level, message in run.logs if level == "warning"]
    said = {
        "gpu-pool-scales-to-zero": "platform.pools.ci-training.min_size=1: an always-on GPU pool",
        "registry-namespace-private": "platform.registry.is_public=true: the policy pack",
        "runner-poll-timeout-covers-cold-start": "platform.pools.ci-training.cold_start_minutes=3: + ",
    }
    for policy, _, _ in found:
        if policy in said:
            assert any(w.startswith(said[policy]) for w in warned), (policy, warned)


def test_an_unprotected_cluster_cannot_be_asked_for(dev_platform: dict[str, Any]) -> None:
    """`cluster.protect` only existed to be refused by kapsule-cluster-protected: it is gone."""
    dev_platform["cluster"]["protect"] = False
    with pytest.raises(SpecError, match=r"^platform\.cluster\.protect=false: unknown key"):
        load_spec(dev_platform)


def test_the_policy_config_can_allow_an_always_on_gpu_pool(
    dev_stack: StackConfig, dev_platform: dict[str, Any]
) -> None:
    _min_size_one(dev_platform)
    run = run_program(dev_stack.with_values({"platform": dev_platform}))
    config = {"gpu-pool-scales-to-zero": {"always_on_pools": ["ci-training"]}}
    assert policy_report(run, config) == []


def _broken(run: ProgramRun, type_token: str, name: str, change: Callable[[dict[str, Any]], None]) -> ProgramRun:
    """A copy of `run` whose recorded inputs (and outputs) of one resource are changed by `change`."""
    resources = []
    for recorded in run.resources:
        resource = recorded
        if recorded.type == type_token and recorded.name == name:
            resource = copy.deepcopy(recorded)
            change(resource.inputs)
            change(resource.outputs)
        resources.append(resource)
    return ProgramRun(resources, run.outputs, run.logs)


def _privileged(inputs: dict[str, Any]) -> None:
    config = inputs["values"]["runners"]["config"]
    assert "privileged = false\n" in config  # the program writes it explicitly
    inputs["values"]["runners"]["config"] = config.replace("privileged = false\n", "privileged = true\n")


@pytest.mark.parametrize(
    ("type_token", "name", "change", "expected"),
    [
        (
            RELEASE,
            "runner-release",
            _privileged,
            (("runner-job-pods-unprivileged", "runner-job-isolation"), "kubernetes.privileged=True"),
        ),
        (
            RELEASE,
            "runner-release",
            lambda i: i["values"]["rbac"].update(clusterWideAccess=True),
            ("runner-rbac-namespaced", "values.rbac.clusterWideAccess=True"),
        ),
        (
            RELEASE,
            "runner-release",
            lambda i: i["values"].update(strategy={"type": "RollingUpdate"}),
            ("helm-release-atomic", "atomic=unset"),
        ),
        (
            POOL,
            "kapsule-ci-compile",
            lambda i: i.update(taints=[]),
            ("gpu-pool-taint-and-config-label", "nvidia.com/gpu taint=none"),
        ),
        (
            POOL,
            "kapsule-ci-compile",
            lambda i: i["labels"].update({DEVICE_PLUGIN_CONFIG_LABEL: "ci-compil"}),
            ("gpu-pool-config-exists", "nvidia.com/device-plugin.config='ci-compil' is not a key"),
        ),
        (
            NAMESPACE,
            "registry-namespace",
            lambda i: i.update(isPublic=True),
            ("registry-namespace-private", "isPublic=True"),
        ),
        (
            RELEASE,
            "runner-release",
            lambda i: _edit_runner_toml(i, _host_path_patch),
            ("runner-job-pods-unprivileged", "kubernetes.pod_spec[host].patch.volumes[0].hostPath='/var/run'"),
        ),
        (
            RELEASE,
            "runner-release",
            lambda i: _edit_runner_toml(i, lambda k: k.update(service_account_overwrite_allowed=".*")),
            ("runner-no-identity-overrides", "kubernetes.service_account_overwrite_allowed='.*'"),
        ),
        (
            RELEASE,
            "runner-release",
            lambda i: i["values"]["rbac"]["rules"].append({"apiGroups": [""], "resources": ["*"], "verbs": ["get"]}),
            ("rbac-least-privilege", "values.rbac.rules[8].resources contains '*'"),
        ),
        (
            "gitlab:index/userRunner:UserRunner",
            "runner-registration",
            lambda i: i.update(untagged=True),
            ("runner-registration-scoped", "untagged=True"),
        ),
    ],
    ids=[
        "privileged",
        "cluster-wide-rbac",
        "not-atomic",
        "untainted-gpu-pool",
        "missing-config-key",
        "public",
        "host-path-patch",
        "service-account-override",
        "wildcard-role",
        "untagged-runner",
    ],
)
def test_inputs_the_program_never_writes_are_refused(
    dev_run: ProgramRun, type_token: str, name: str, change: Callable[[dict[str, Any]], None], expected: tuple
) -> None:
    """What the spec cannot express (the program hard-codes it), broken in the recorded inputs instead."""
    run = _broken(dev_run, type_token, name, change)
    policies = expected[0] if isinstance(expected[0], tuple) else (expected[0],)
    found = policy_report(run)
    assert [(policy, resource) for policy, resource, _ in found] == [(policy, name) for policy in policies]
    assert expected[1] in found[0][2]


def _edit_runner_toml(inputs: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> None:
    """Change the `kubernetes` table of the (first) runner in the release's config.toml."""
    document = tomllib.loads(inputs["values"]["runners"]["config"])
    change(document["runners"][0]["kubernetes"])
    inputs["values"]["runners"]["config"] = tomli_w.dumps(document)


def _host_path_patch(kubernetes: dict[str, Any]) -> None:
    patch = "volumes:\n- name: docker\n  hostPath: {path: /var/run}\n"
    kubernetes["pod_spec"].append({"name": "host", "patch_type": "strategic", "patch": patch})


def test_an_unprotected_pool_is_refused(dev_run: ProgramRun) -> None:
    run = dev_run
    resources = []
    for recorded in run.resources:
        resource = copy.deepcopy(recorded) if recorded.name == "kapsule-system" else recorded
        if resource is not recorded:
            resource.options["protect"] = False
        resources.append(resource)
    found = policy_report(ProgramRun(resources, run.outputs, run.logs))
    assert [(p, r) for p, r, _ in found] == [("kapsule-pool-protected", "kapsule-system")]


def test_the_policy_config_can_restrict_the_runners_access_level(
    dev_stack: StackConfig, dev_platform: dict[str, Any], dev_run: ProgramRun
) -> None:
    config = {"runner-registration-scoped": {"allowed_access_levels": ["ref_protected"]}}
    found = policy_report(dev_run, config)
    assert sorted((p, r) for p, r, _ in found) == [
        ("runner-registration-scoped", "runner-ci-training-registration"),
        ("runner-registration-scoped", "runner-registration"),
    ]
    assert "accessLevel='not_protected': allowed are ['ref_protected']" in found[0][2]
    dev_platform["runner"]["access_level"] = "ref_protected"
    run = run_program(dev_stack.with_values({"platform": dev_platform}))
    assert policy_report(run, config) == []


def test_an_unknown_value_stops_a_rule_as_the_sdk_intends() -> None:
    """During preview a judged value may be unknown: the SDK's proxy raises, and the engine reports the rule
    as not run for that resource (advisory), rather than the rule guessing."""
    args = resource_args(POOL, gpu_pool(minSize=UNKNOWN_STRING_VALUE), opts=AUTOSCALED)
    with pytest.raises(UnknownValueError):
        violations(pol.gpu_pool_scales_to_zero, args)


def test_the_pack_imports_only_what_its_virtualenv_has() -> None:
    """The pack's venv installs policy/requirements.txt (pulumi, pulumi-policy) and nothing else: every import
    is the standard library, those two, or PyYAML, which the pulumi SDK itself requires."""
    imported = set()
    for path in POLICY_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    third_party = imported - set(sys.stdlib_module_names) - {"__future__", "policies"}
    assert third_party == {"pulumi_policy", "yaml"}
    assert any(re.match(r"pyyaml\b", r, re.IGNORECASE) for r in importlib.metadata.requires("pulumi") or [])
