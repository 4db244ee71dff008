"""The runner's config.toml (`values.runners.config` of each gitlab-runner release): its Kubernetes runners
wait out a GPU node's cold start, run job pods unprivileged (in config.toml and in every `pod_spec` patch), let
no job choose its identity, and state their job isolation explicitly."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs
from yaml import YAMLError, safe_load  # PyYAML: a dependency of the pulumi SDK the pack pins

from . import definitions
from .inputs import as_list, config_value, known, physical_name, show
from .runner_release import RUNNER_CHART, is_runner_release

DEFAULT_POLL_TIMEOUT_SECONDS = 180
"""gitlab-runner's poll_timeout when config.toml sets none."""
SECURITY_CONTEXTS = (
    "build_container_security_context",
    "helper_container_security_context",
    "service_container_security_context",
    "init_permissions_container_security_context",
)
PRIVILEGED_CAPABILITIES = frozenset({"ALL", "SYS_ADMIN", "CAP_SYS_ADMIN"})
"""Capabilities that make a container root on the node; any other added one needs allowed_capabilities too."""
HOST_NAMESPACE_KEYS = ("hostPID", "hostNetwork", "hostIPC")
"""Pod fields that share a host namespace with the job: the node's processes, network or IPC."""
IDENTITY_OVERRIDES = (
    "service_account_overwrite_allowed",
    "bearer_token_overwrite_allowed",
    "namespace_overwrite_allowed",
)
"""config.toml keys that let a job's variables pick its Kubernetes identity or namespace."""
MATCH_ALL_IMAGES = frozenset({"*", "**", "*/*", "**/*", "*:*", "**/*:*"})
"""`allowed_images` / `allowed_services` entries that admit every image (a bare wildcard)."""


def _kubernetes_settings(
    args: ResourceValidationArgs, report_violation: ReportViolation = lambda *_: None
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(label, `[runners.kubernetes]` settings) of each Kubernetes-executor entry of a runner release's
    config.toml ({} when the entry has none); unreadable TOML goes to `report_violation`."""
    if not is_runner_release(args):
        return
    for where, entry in _runner_entries(args, report_violation):
        kubernetes = entry.get("kubernetes")
        if entry.get("executor") == "kubernetes" or isinstance(kubernetes, Mapping):
            yield where, kubernetes if isinstance(kubernetes, Mapping) else {}


def _runner_entries(args: ResourceValidationArgs, report_violation: ReportViolation) -> list[tuple[str, Any]]:
    """The `[[runners]]` entries of the release's config.toml as (label, entry); [] and a violation if unreadable."""
    values = args.props.get("values")
    runners = values.get("runners") if isinstance(values, Mapping) else None
    text = runners.get("config") if isinstance(runners, Mapping) else None
    if text is None:
        return []
    where = f"Helm release '{physical_name(args)}' ({RUNNER_CHART})"
    try:
        document = tomllib.loads(str(text))
    except tomllib.TOMLDecodeError as err:
        report_violation(f"{where}: values.runners.config is not TOML the policy can read ({err})", None)
        return []
    return [
        (f"{where}: runners.config [[runners]] '{entry.get('name') or index}'", entry)
        for index, entry in enumerate(as_list(document.get("runners")))
        if isinstance(entry, Mapping)
    ]


def runner_poll_timeout_covers_cold_start(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """The runner waits for a job pod at least as long as a GPU node takes to start from zero.

    Why: a job routed to a pool at zero waits Pending while the autoscaler boots a node; if `poll_timeout`
    (180 s by default) runs out first, the job fails with "timed out waiting for pod to start".
    """
    if not is_runner_release(args):
        return
    minimum = definitions.min_poll_timeout_seconds(config_value(args, "min_poll_timeout_seconds", None))
    values = args.props.get("values")
    runners = values.get("runners") if isinstance(values, Mapping) else None
    if not isinstance(runners, Mapping) or runners.get("config") is None:
        report_violation(
            f"Helm release '{physical_name(args)}' ({RUNNER_CHART}): values.runners.config=unset: the chart's default "
            f"config has no poll_timeout ({DEFAULT_POLL_TIMEOUT_SECONDS} s), below the {show(minimum)} s a GPU "
            "node takes to start",
            None,
        )
        return
    for where, settings in _kubernetes_settings(args, report_violation):
        timeout = settings.get("poll_timeout", DEFAULT_POLL_TIMEOUT_SECONDS)
        if definitions.poll_timeout_too_short(timeout, minimum):
            report_violation(
                f"{where}: kubernetes.poll_timeout={show(timeout)}: below {show(minimum)} s, the time a GPU node "
                "takes from zero to a running job pod; such jobs fail waiting (gpu-ci: raise "
                "platform.pools.<pool>.cold_start_minutes, or lower this policy's min_poll_timeout_seconds)",
                None,
            )


def _added_capabilities(value: Any, allowed: frozenset[str]) -> list[str] | None:
    """The added capabilities (upper-cased) if any is privileged or not allowed, else None."""
    added = [str(c).upper() for c in as_list(value)]
    if any(c in PRIVILEGED_CAPABILITIES or c.removeprefix("CAP_") not in allowed for c in added):
        return added
    return None


def _privileged_settings(kubernetes: Mapping[str, Any], allowed: frozenset[str]) -> Iterator[tuple[str, Any]]:
    """(key path, value) of every config.toml setting that would run a job container privileged, let it
    escalate, add a capability, reach the host or mount the service account's API token."""
    for key in ("privileged", "allow_privilege_escalation", "automount_service_account_token"):
        if kubernetes.get(key) is True:
            yield key, True
    if (added := _added_capabilities(kubernetes.get("cap_add"), allowed)) is not None:
        yield "cap_add", added
    for context in SECURITY_CONTEXTS:
        settings = kubernetes.get(context)
        if not isinstance(settings, Mapping):
            continue
        for key in ("privileged", "allow_privilege_escalation"):
            if settings.get(key) is True:
                yield f"{context}.{key}", True
        capabilities = settings.get("capabilities")
        add = capabilities.get("add") if isinstance(capabilities, Mapping) else None
        if (added := _added_capabilities(add, allowed)) is not None:
            yield f"{context}.capabilities.add", added
    for index, patch in enumerate(as_list(kubernetes.get("pod_spec"))):
        if isinstance(patch, Mapping):
            yield from _patch_settings(patch, f"pod_spec[{patch.get('name') or index}]", allowed)


def _patch_settings(patch: Mapping[str, Any], where: str, allowed: frozenset[str]) -> Iterator[tuple[str, Any]]:
    """What a `pod_spec` patch (strategic, merge or JSON, written as YAML or JSON) sets that is dangerous."""
    if patch.get("patch_path"):
        yield f"{where}.patch_path", patch.get("patch_path")  # a file on the manager: nothing to judge
        return
    try:
        document = safe_load(str(patch.get("patch") or "")) or {}
    except YAMLError:
        yield f"{where}.patch", "unreadable YAML/JSON"
        return
    if patch.get("patch_type") == "json" and isinstance(document, list):  # RFC 6902 operations
        for operation in document:
            if isinstance(operation, Mapping) and operation.get("op") in ("add", "replace"):
                key = str(operation.get("path") or "").rsplit("/", 1)[-1]
                yield from _dangerous_pod_fields({key: operation.get("value")}, f"{where}.patch", allowed)
    else:
        yield from _dangerous_pod_fields(document, f"{where}.patch", allowed)


def _dangerous_pod_fields(node: Any, path: str, allowed: frozenset[str]) -> Iterator[tuple[str, Any]]:
    """Pod-spec fields (camelCase, anywhere in a patch) that make a job privileged or reach the host."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            here = f"{path}.{key}"
            flags = ("privileged", "allowPrivilegeEscalation", "automountServiceAccountToken", *HOST_NAMESPACE_KEYS)
            if key in flags and value is True:
                yield here, True
            elif key == "hostPath" and value is not None:
                yield here, known(value, "path") or value
            elif key == "capabilities" and isinstance(value, Mapping):
                if (added := _added_capabilities(value.get("add"), allowed)) is not None:
                    yield f"{here}.add", added
            else:
                yield from _dangerous_pod_fields(value, here, allowed)
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _dangerous_pod_fields(item, f"{path}[{index}]", allowed)


def runner_job_pods_unprivileged(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Job pods are not privileged, cannot escalate, add no capability, share no host namespace or path,
    and get no service-account token: a CI job runs code from any branch of the project.

    Why: a privileged job container (or one with hostPID, hostNetwork, a hostPath mount or an added
    capability) is root on the node, and from there on everything the node can reach (other jobs'
    secrets, the kubelet's credentials); a mounted token lets a job call the Kubernetes API. Checked in
    config.toml and in every `pod_spec` patch, which the runner applies on top of it.
    """
    if not is_runner_release(args):
        return
    configured = as_list(config_value(args, "allowed_capabilities", []))
    allowed = frozenset(str(c).upper().removeprefix("CAP_") for c in configured)
    for where, kubernetes in _kubernetes_settings(args):  # unreadable TOML is the poll-timeout rule's
        for key, value in _privileged_settings(kubernetes, allowed):
            report_violation(
                f"{where}: kubernetes.{key}={show(value)}: job pods must not be privileged or escalate "
                "privileges (a job would be root on the GPU node)",
                None,
            )


def runner_no_identity_overrides(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """No job may choose its service account, bearer token or namespace (`*_overwrite_allowed` unset).

    Why: with them a job's variables pick another service account (and its RBAC), present another bearer
    token to the Kubernetes API, or run its pod in another namespace, outside the runner's isolation.
    """
    for where, kubernetes in _kubernetes_settings(args):
        for key in IDENTITY_OVERRIDES:
            value = kubernetes.get(key)
            if value not in (None, False, ""):
                report_violation(
                    f"{where}: kubernetes.{key}={show(value)}: a job must not choose its service account, "
                    "bearer token or namespace; remove the key",
                    None,
                )


def runner_job_isolation(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Each runner states its job isolation explicitly: `allowed_images` (non-empty, no bare `*`),
    `allowed_services` (no bare `*`), `cap_drop` with ALL, `privileged = false` and
    `automount_service_account_token = false`.

    Why: without `allowed_images` a job runs any image (one `.gitlab-ci.yml` line away from a crafted
    one); without `cap_drop = ["ALL"]` the container keeps the runtime's default capabilities (NET_RAW,
    ...); the explicit `false`s keep a change of the runner's defaults from widening the pod.
    """
    for where, settings in _kubernetes_settings(args):
        for key in ("allowed_images", "allowed_services"):
            value = settings.get(key)
            wide = [v for v in as_list(value) if str(v).strip() in MATCH_ALL_IMAGES]
            if not isinstance(value, list) or (key == "allowed_images" and not value) or wide:
                report_violation(
                    f"{where}: kubernetes.{key}={show(value)}: list the images jobs may use (no bare '*'), "
                    "so a job cannot run an arbitrary image",
                    None,
                )
        if "ALL" not in [str(c).upper() for c in as_list(settings.get("cap_drop"))]:
            report_violation(
                f"{where}: kubernetes.cap_drop={show(settings.get('cap_drop'))}: drop ALL capabilities "
                '(cap_drop = ["ALL"]); the runtime\'s defaults include NET_RAW',
                None,
            )
        for key in ("privileged", "automount_service_account_token"):
            if settings.get(key) is not False:
                report_violation(
                    f"{where}: kubernetes.{key}={show(settings.get(key))}: set it to false explicitly", None
                )
