"""The runner's config.toml (policy/policies/runner_toml.py): each rule called directly."""

from __future__ import annotations

from typing import Any

import pytest
from support.policy import RELEASE, resource_args, runner_release, violations

from policy.policies import runner_toml as pol
from policy.policies.inputs import show
from policy.policies.runner_release import is_runner_release

# ---------------------------------------------------------------------------------------------------------
# The runner's poll timeout, and job pods


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
    assert is_runner_release(resource_args(RELEASE, {**props, "chart": "oci://registry.example/gitlab-runner"}))


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
    assert f"kubernetes.{key}={show(value)}: a job must not choose its service account" in found


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
