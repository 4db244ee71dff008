"""A CI job's pod as gitlab-runner's Kubernetes executor builds it from a runner's config.toml
(`[runners.kubernetes]`) and the job's variables, for the engine tests to submit to the real API server and
scheduler.

What is read, as the executor reads it (gitlab-runner's "Kubernetes executor" documentation):
- `node_selector`, and each `KUBERNETES_NODE_SELECTOR_*` variable (`key=value`) over it, only if it matches
  `node_selector_overwrite_allowed` (the executor fails the job otherwise: `OverwriteRefusedError`);
- `node_tolerations` (`key=value` = effect, an `Equal` toleration), `priority_class_name`,
  `automount_service_account_token`, `pod_termination_grace_period_seconds`, `image_pull_secrets`,
  `pod_labels`, `pod_annotations`;
- `cpu_request`/`cpu_limit`/`memory_request`/`memory_limit` for the build container, each over-written by its
  `KUBERNETES_*` variable up to `*_overwrite_max_allowed` (beyond it, the job fails: `OverwriteRefusedError`);
- `privileged`, `allow_privilege_escalation`, `cap_drop` for every container (build and helper);
- `pod_spec` patches (`FF_USE_ADVANCED_POD_SPEC_CONFIGURATION`), strategic ones merging containers by name.
Left out: the init container that fixes volume permissions, services and volumes: none of the platform's
checks depends on them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from infra.quantity import Cpu, Memory

HELPER_IMAGE = "registry.gitlab.com/gitlab-org/gitlab-runner/gitlab-runner-helper:x86_64-v18.6.0"
RESOURCES = (
    ("cpu", "requests", "cpu_request", "KUBERNETES_CPU_REQUEST"),
    ("cpu", "limits", "cpu_limit", "KUBERNETES_CPU_LIMIT"),
    ("memory", "requests", "memory_request", "KUBERNETES_MEMORY_REQUEST"),
    ("memory", "limits", "memory_limit", "KUBERNETES_MEMORY_LIMIT"),
)
SELECTOR_PREFIX = "KUBERNETES_NODE_SELECTOR_"


class OverwriteRefusedError(ValueError):
    """A job variable the runner's config does not allow: the executor fails the job, no pod is made."""


def _magnitude(kind: str, text: str) -> Any:
    return Cpu.parse(text).cores if kind == "cpu" else Memory.parse(text).bytes


def job_pod(
    config: Mapping[str, Any], name: str, image: str, variables: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The pod of the job `name` (image `image`, CI `variables`) that the config's first runner sends."""
    kube = config["runners"][0]["kubernetes"]
    variables = variables or {}
    resources: dict[str, dict[str, str]] = {"requests": {}, "limits": {}}
    for kind, side, key, variable in RESOURCES:
        value = kube.get(key)
        if variable in variables:
            wanted, most = variables[variable], kube.get(f"{key}_overwrite_max_allowed")
            if most is None or _magnitude(kind, wanted) > _magnitude(kind, most):
                raise OverwriteRefusedError(f"{variable}={wanted}: over {key}_overwrite_max_allowed={most}")
            value = wanted
        if value is not None:
            resources[side][kind] = value
    selector = dict(kube.get("node_selector", {}))
    allowed = kube.get("node_selector_overwrite_allowed")
    for variable, value in variables.items():
        if variable.startswith(SELECTOR_PREFIX):
            if not allowed or not re.match(allowed, value):
                raise OverwriteRefusedError(f"{variable}={value}: not allowed by {allowed!r}")
            key, _, label = value.partition("=")
            selector[key] = label
    security = {
        "privileged": kube.get("privileged", False),
        "allowPrivilegeEscalation": kube.get("allow_privilege_escalation"),
        "capabilities": {"drop": list(kube.get("cap_drop", []))},
    }
    security = {key: value for key, value in security.items() if value is not None}
    containers = [
        {"name": "build", "image": image, "resources": resources, "securityContext": security},
        {"name": "helper", "image": HELPER_IMAGE, "securityContext": dict(security)},
    ]
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "nodeSelector": selector,
        "tolerations": [
            {"key": key, "operator": "Equal", "value": value, "effect": effect}
            for key, value, effect in (
                (*toleration.split("=", 1), effect) for toleration, effect in kube.get("node_tolerations", {}).items()
            )
        ],
        "automountServiceAccountToken": kube.get("automount_service_account_token", True),
        "terminationGracePeriodSeconds": kube.get("pod_termination_grace_period_seconds", 600),
        "imagePullSecrets": [{"name": secret} for secret in kube.get("image_pull_secrets", [])],
        "containers": containers,
    }
    if priority := kube.get("priority_class_name"):
        spec["priorityClassName"] = priority
    for patch in kube.get("pod_spec", []):
        if patch["patch_type"] != "strategic":
            raise ValueError(f"pod_spec {patch['name']}: only strategic patches are built here")
        spec = _strategic(spec, yaml.safe_load(patch["patch"]))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": kube["namespace"],
            "labels": dict(kube.get("pod_labels", {})),
            "annotations": dict(kube.get("pod_annotations", {})),
        },
        "spec": spec,
    }


def _strategic(base: Any, patch: Any) -> Any:
    """Kubernetes' strategic merge of a PodSpec patch, as far as pod_spec patches use it: maps merge, and the
    `containers` list merges by `name`."""
    if isinstance(base, dict) and isinstance(patch, dict):
        merged = dict(base)
        for key, value in patch.items():
            if key == "containers" and isinstance(value, list):
                by_name = {c["name"]: c for c in merged.get(key, [])}
                for container in value:
                    by_name[container["name"]] = _strategic(by_name.get(container["name"], {}), container)
                merged[key] = list(by_name.values())
            else:
                merged[key] = _strategic(merged.get(key), value)
        return merged
    return patch
