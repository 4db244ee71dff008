"""The runner's config.toml template and Helm values: parsed back, key by key, and checked against upstream."""

from __future__ import annotations

import json
import tomllib
from typing import Any

import pytest
import yaml
from support.paths import DATA

from infra.model.platform import load_platform
from infra.model.runners import CACHE_SECRET_NAME
from infra.render.runner import (
    render_runner_config,
    render_runner_values,
    runner_helm_values,
)

UPSTREAM = DATA / "upstream"
"""Copies of what upstream really reads (see its README): the runner's config.toml keys, the chart's values."""
CONFIG_KEYS = UPSTREAM / "gitlab-runner-config-keys.json"
VALUES_PATHS = UPSTREAM / "gitlab-runner-chart-0.86-values-paths.txt"


def _parsed(platform: dict[str, Any], pool: str = "ci-compile") -> dict[str, Any]:
    derived = load_platform(platform)
    return tomllib.loads(render_runner_config(derived, derived.runners[pool]))


def _values(platform: dict[str, Any], pool: str = "ci-compile") -> dict[str, Any]:
    derived = load_platform(platform)
    return runner_helm_values(derived, derived.runners[pool])


SIZES = {"ci-compile": ("3000m", "3800m", "8Gi", "16Gi"), "ci-training": ("1000m", "2000m", "16Gi", "40Gi")}
"""Each runner's default and maximum requests and limits: its own profile's (rl on the L4, supervised on the L40S)."""


@pytest.mark.parametrize("pool", ["ci-compile", "ci-training"])
def test_config_toml_is_the_design_key_by_key(dev_platform: dict[str, Any], pool: str) -> None:
    document = _parsed(dev_platform, pool)
    assert list(document) == ["runners"]
    assert len(document["runners"]) == 1  # the chart registers exactly one runner from the template
    runner = document["runners"][0]
    assert set(runner) == {"executor", "feature_flags", "kubernetes"}
    assert runner["executor"] == "kubernetes"
    assert runner["feature_flags"] == {
        "FF_USE_ADVANCED_POD_SPEC_CONFIGURATION": True,
        "FF_USE_POD_ACTIVE_DEADLINE_SECONDS": True,
        "FF_PRINT_POD_EVENTS": True,
        "FF_WAIT_FOR_POD_TO_BE_REACHABLE": True,
    }
    k8s = runner["kubernetes"]
    assert k8s.pop("namespace") == "gitlab-runner"
    assert k8s.pop("image") == "alpine:3.22"
    # one attempt of three: (the 2-h tolerance + the pool's 15-min cold start + the 10-min margin) / 3
    assert k8s.pop("poll_timeout") == 49 * 60
    assert k8s.pop("node_selector") == {"k8s.scaleway.com/pool-name": pool}  # fixed to the runner's pool
    assert k8s.pop("node_selector_overwrite_allowed") == rf"^k8s\.scaleway\.com/pool-name=({pool})$"
    sizes = SIZES[pool]
    assert (k8s.pop("cpu_request"), k8s.pop("cpu_limit"), k8s.pop("memory_request"), k8s.pop("memory_limit")) == sizes
    assert (
        k8s.pop("cpu_request_overwrite_max_allowed"),
        k8s.pop("cpu_limit_overwrite_max_allowed"),
        k8s.pop("memory_request_overwrite_max_allowed"),
        k8s.pop("memory_limit_overwrite_max_allowed"),
    ) == sizes
    assert k8s.pop("node_tolerations") == {"nvidia.com/gpu=present": "NoSchedule"}
    assert k8s.pop("pod_labels") == {"gpu-ci/role": "job", "gpu-ci/pool": pool}  # what the NetworkPolicies select
    assert k8s.pop("pod_annotations") == {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
    assert (k8s.pop("privileged"), k8s.pop("allow_privilege_escalation")) == (False, False)
    assert k8s.pop("cap_drop") == ["ALL"]
    assert k8s.pop("automount_service_account_token") is False
    images = ["rg.fr-par.scw.cloud/gpu-ci/*", "rg.fr-par.scw.cloud/gpu-ci/**/*", "alpine:3.22"]
    assert k8s.pop("allowed_images") == k8s.pop("allowed_services") == images
    assert k8s.pop("pod_termination_grace_period_seconds") == 30
    assert k8s.pop("cleanup_grace_period_seconds") == 30
    assert k8s.pop("cleanup_resources_timeout") == "5m"
    assert k8s.pop("image_pull_secrets") == ["registry-pull"]
    (patch,) = k8s.pop("pod_spec")
    assert (patch["name"], patch["patch_type"]) == ("gpu", "strategic")
    assert yaml.safe_load(patch["patch"]) == {
        "containers": [
            {"name": "build", "resources": {"requests": {"nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 1}}}
        ]
    }
    assert k8s == {}, f"unexpected keys: {sorted(k8s)}"


def test_no_helm_template_syntax_survives(dev_platform: dict[str, Any]) -> None:
    """The chart runs runners.config through `tpl`: a `{{` would be executed as a Go template."""
    dev_platform["runner"]["cache"] = {"bucket": "gpu-ci-cache"}
    platform = load_platform(dev_platform)
    for runner in platform.runners.values():
        text = render_runner_config(platform, runner)
        assert "{{" not in text and "}}" not in text


def test_cache_section_points_at_scaleway_object_storage(dev_platform: dict[str, Any]) -> None:
    dev_platform["runner"]["cache"] = {"bucket": "gpu-ci-cache", "path": "runner", "shared": False}
    cache = _parsed(dev_platform)["runners"][0]["cache"]
    assert cache == {
        "Type": "s3",
        "Path": "runner",
        "Shared": False,
        "s3": {
            "ServerAddress": "s3.fr-par.scw.cloud",
            "BucketName": "gpu-ci-cache",
            "BucketLocation": "fr-par",
            "AuthenticationType": "access-key",
            "Insecure": False,
        },
    }
    values = _values(dev_platform)
    assert values["runners"]["cache"] == {"secretName": CACHE_SECRET_NAME}  # keys come from a Secret


def test_public_registry_needs_no_pull_secret(dev_platform: dict[str, Any]) -> None:
    dev_platform["registry"]["is_public"] = True
    assert "image_pull_secrets" not in _parsed(dev_platform)["runners"][0]["kubernetes"]


def _key_paths(node: Any, allowed: Any, prefix: str = "") -> list[str]:
    """Key paths of `node` absent from the upstream tree `allowed` (`"*"`: free-form below)."""
    if allowed == "*":
        return []
    if isinstance(node, list):
        return [bad for item in node for bad in _key_paths(item, allowed, prefix)]
    if not isinstance(node, dict):
        return []
    bad = []
    for key, value in node.items():
        path = f"{prefix}.{key}" if prefix else key
        if not isinstance(allowed, dict) or key not in allowed:
            bad.append(path)
        else:
            bad += _key_paths(value, allowed[key], path)
    return bad


@pytest.mark.parametrize("cache", [None, {"bucket": "gpu-ci-cache"}], ids=["no-cache", "cache"])
def test_config_keys_are_keys_the_runner_reads(dev_platform: dict[str, Any], cache: Any) -> None:
    dev_platform["runner"]["cache"] = cache
    upstream = json.loads(CONFIG_KEYS.read_text())
    for pool in ("ci-compile", "ci-training"):
        assert _key_paths(_parsed(dev_platform, pool), upstream) == []


def test_the_key_check_catches_a_typo() -> None:
    upstream = json.loads(CONFIG_KEYS.read_text())
    typo = {"runners": [{"kubernetes": {"node_selector_overwrite_allow": "x", "pod_spec": [{"patch_typ": "x"}]}}]}
    assert _key_paths(typo, upstream) == [
        "runners.kubernetes.node_selector_overwrite_allow",
        "runners.kubernetes.pod_spec.patch_typ",
    ]


def _values_paths() -> set[str]:
    return {line.strip() for line in VALUES_PATHS.read_text().splitlines() if line.strip()}


def _unread_values(values: dict[str, Any], read: set[str], prefix: str = "") -> list[str]:
    """Values no chart template reads: a leaf path must be listed, or sit under a listed path read whole
    (one with no listed children, such as nodeSelector or deploymentLifecycle)."""
    bad = []
    for key, value in values.items():
        path = f"{prefix}.{key}" if prefix else key
        has_children = any(p.startswith(f"{path}.") for p in read)
        if path in read and not has_children:
            continue
        if isinstance(value, dict) and has_children:
            bad += _unread_values(value, read, path)
        elif path not in read:
            bad.append(path)
    return bad


@pytest.mark.parametrize("cache", [None, {"bucket": "gpu-ci-cache"}], ids=["no-cache", "cache"])
def test_helm_values_are_values_the_chart_reads(dev_platform: dict[str, Any], cache: Any) -> None:
    dev_platform["runner"]["cache"] = cache
    for pool in ("ci-compile", "ci-training"):
        values = _values(dev_platform, pool)
        values["podAnnotations"] = {"gpu-ci/runner-id": "1"}  # what the component adds
        assert _unread_values(values, _values_paths()) == []
    assert _unread_values({"rbac": {"creat": True}, "runners": {"tags": "x", "cach": {}}}, _values_paths()) == [
        "rbac.creat",
        "runners.cach",
    ]


@pytest.mark.parametrize(
    ("pool", "slots", "secret"),
    [("ci-compile", 2, "gitlab-runner-token"), ("ci-training", 4, "gitlab-runner-ci-training-token")],
)
def test_helm_values_are_the_design(dev_platform: dict[str, Any], pool: str, slots: int, secret: str) -> None:
    platform = load_platform(dev_platform)
    runner = platform.runners[pool]
    values = runner_helm_values(platform, runner)
    assert values["gitlabUrl"] == "https://gitlab.com"
    assert values["concurrent"] == slots  # the pool's job slots: a job beyond them waits in GitLab
    rbac = values["rbac"]
    assert (rbac["create"], rbac["clusterWideAccess"]) == (True, False)  # a Role in its namespace only
    granted = {
        (group, resource, verb)
        for rule in rbac["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert all("*" not in grant for grant in granted)  # the chart's default is every verb on everything
    assert {group for group, _, _ in granted} == {""}  # the core API group only
    assert ("", "pods", "create") in granted and ("", "pods/attach", "create") in granted
    assert not {(g, r, v) for g, r, v in granted if r in ("nodes", "namespaces", "roles", "rolebindings")}
    assert values["serviceAccount"] == {"create": True}
    assert values["nodeSelector"] == {"k8s.scaleway.com/pool-name": "system"}  # the manager stays on the CPU node
    # An upgrade stops the old manager (drain) before the new one starts: never two managers over one pool.
    assert values["strategy"] == {"type": "Recreate"}
    assert values["terminationGracePeriodSeconds"] == 3 * 3600 + 30 * 60 + 300  # drain the longest job, then some
    (command,) = [values["deploymentLifecycle"]["preStop"]["exec"]["command"]]
    assert command[:2] == ["/bin/sh", "-c"] and "kill -QUIT" in command[2]
    assert values["podLabels"] == {"gpu-ci/role": "manager", "gpu-ci/pool": pool}
    assert values["resources"] == {"requests": {"cpu": "100m", "memory": "128Mi"}}
    assert values["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert values["runners"] == {"config": render_runner_config(platform, runner), "secret": secret}
    assert yaml.safe_load(render_runner_values(platform, runner)) == values


def test_values_never_carry_a_token(dev_platform: dict[str, Any]) -> None:
    platform = load_platform(dev_platform)
    text = "".join(render_runner_values(platform, runner) for runner in platform.runners.values())
    for needle in ("runnerToken", "runnerRegistrationToken", "glrt-", "token:"):
        assert needle not in text


def test_job_pods_get_a_disruption_budget_from_the_chart_whose_runner_makes_one(dev_platform: dict[str, Any]) -> None:
    """Runner 18.11 (chart 0.88.0) creates a PodDisruptionBudget per job pod when asked: an upgrade's drain waits
    for the job. The pinned 0.86.0 (runner 18.9) has no such key: nothing is rendered, and `plan` warns."""
    assert "pod_disruption_budget" not in _parsed(dev_platform)["runners"][0]["kubernetes"]
    assert not any("policy" in rule["apiGroups"] for rule in _values(dev_platform)["rbac"]["rules"])
    warnings = [str(w) for w in load_platform(dev_platform).warnings if w.path == "platform.runner.chart_version"]
    assert warnings == [
        "platform.runner.chart_version='0.86.0': its runner gives job pods no PodDisruptionBudget: an upgrade that "
        "drains a GPU node evicts the jobs on it (from chart 0.88.0, runner 18.11, gpu-ci turns pod_disruption_budget "
        "on); until then, upgrade with the GPU pools at zero (docs/operations.md)"
    ]
    dev_platform["runner"]["chart_version"] = "0.88.2"
    upstream = json.loads(CONFIG_KEYS.read_text())
    for pool in ("ci-compile", "ci-training"):
        parsed = _parsed(dev_platform, pool)
        assert parsed["runners"][0]["kubernetes"]["pod_disruption_budget"] is True
        assert _key_paths(parsed, upstream) == []
        rules = _values(dev_platform, pool)["rbac"]["rules"]
        assert rules[-1] == {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["create", "get"]}
    assert not [w for w in load_platform(dev_platform).warnings if w.path == "platform.runner.chart_version"]
