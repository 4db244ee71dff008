"""gpu-ci's guard rails as Pulumi policies: pure `validate(args, report_violation)` functions, and their wrappers.

`__main__.py` builds the pack from `POLICIES`; tests import this module (never `__main__.py`: building a
PolicyPack starts a gRPC server and blocks). The pack is self-contained: it runs in its own virtualenv
next to the program, so it imports nothing from `infra/` (tests check that the constants below agree).

What a policy sees, with pulumi-policy 1.21 (`_PolicyAnalyzerServicer.Analyze`):
- `args.props` are the resource's inputs (camelCase wire names) after the provider's `Check`, in a proxy
  that raises `UnknownValueError` on a value not known during preview (the engine then reports the policy
  as not run for that resource, as an advisory note). Fields read only to name things go through `_known`.
- Secret inputs arrive **unwrapped**: the engine sends them marked secret, but the SDK deserialises them
  without `proxy_secrets`, so a policy cannot tell a secret value from a plain one. The CI variable rule
  therefore judges by the variable's name and the shape of its value.
- Numbers arrive as floats (protobuf `Struct`): `minSize` is `0.0`. Messages print them as integers.
- Stack policies see the resources' outputs, after an `up` has changed them (preview runs them first).
No message ever contains a variable's value.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError
from yaml import YAMLError, safe_load  # PyYAML: a dependency of the pulumi SDK the pack pins

PACK_NAME = "gpu-ci"

# Resource type tokens (each with the deprecated flat token of the same resource, in case a stack uses it).
POOL_TYPES = frozenset({"scaleway:kubernetes/pool:Pool", "scaleway:index/kubernetesNodePool:KubernetesNodePool"})
CLUSTER_TYPES = frozenset({"scaleway:kubernetes/cluster:Cluster", "scaleway:index/kubernetesCluster:KubernetesCluster"})
HELM_RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"
NETWORK_POLICY_TYPE = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
ROLE_TYPES = frozenset(
    {"kubernetes:rbac.authorization.k8s.io/v1:Role", "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"}
)
RUNNER_REGISTRATION_TYPES = frozenset({"gitlab:index/userRunner:UserRunner", "gitlab:index/runner:Runner"})
VARIABLE_TYPES = frozenset(
    {
        "gitlab:index/projectVariable:ProjectVariable",
        "gitlab:index/groupVariable:GroupVariable",
        "gitlab:index/instanceVariable:InstanceVariable",
    }
)
BUCKET_TYPES = frozenset({"scaleway:object/bucket:Bucket", "scaleway:index/objectBucket:ObjectBucket"})
BUCKET_ACL_TYPES = frozenset({"scaleway:object/bucketAcl:BucketAcl", "scaleway:index/objectBucketAcl:ObjectBucketAcl"})
BUCKET_POLICY_TYPES = frozenset(
    {"scaleway:object/bucketPolicy:BucketPolicy", "scaleway:index/objectBucketPolicy:ObjectBucketPolicy"}
)
REGISTRY_NAMESPACE_TYPES = frozenset(
    {"scaleway:registry/namespace:Namespace", "scaleway:index/registryNamespace:RegistryNamespace"}
)
CONFIG_MAP_TYPE = "kubernetes:core/v1:ConfigMap"
CLUSTER_POLICY_TYPES = frozenset(
    {"kubernetes:nvidia.com/v1:ClusterPolicy", "kubernetes:nvidia.com/v1:ClusterPolicyPatch"}
)

# What gpu-ci puts on GPU pools (infra/config/pools.py, infra/render/device_plugin.py: a test keeps them equal).
GPU_TAINT_KEY = "nvidia.com/gpu"
GPU_TAINT_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
"""Effects that keep other pods off (PreferNoSchedule does not: such a pod keeps a billed GPU node up)."""
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
DEFAULT_DEVICE_PLUGIN_CONFIG_MAP = "gpu-ci-device-plugin-config"
DEFAULT_GPU_NODE_TYPE_PATTERN = r"^(L4|L40S|H100|H200|B200|B300|GB200|GPU|RENDER)[-_]"
"""Scaleway's GPU node types (L4-1-24G, L40S-1-48G, H100-SXM-2-80G, B300-SXM-2-288G, RENDER-S, GPU-3070-S),
matched case-insensitively with `_` read as `-`; a pool carrying the `nvidia.com/gpu` taint counts too."""

RUNNER_CHART = "gitlab-runner"
DEFAULT_POLL_TIMEOUT_SECONDS = 180
"""gitlab-runner's poll_timeout when config.toml sets none."""
DEFAULT_MIN_POLL_TIMEOUT_SECONDS = 900
"""A GPU node takes ~10-15 min from zero to a running pod on Kapsule (docs/runbook.md): 15 min by default."""
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
POD_SECURITY_ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
POD_SECURITY_LEVELS = frozenset({"baseline", "restricted"})
ACCESS_LEVELS = ["not_protected", "ref_protected"]
"""GitLab runner access levels: `ref_protected` takes jobs of protected branches and tags only."""

PUBLIC_CANNED_ACLS = frozenset({"public-read", "public-read-write", "authenticated-read"})
PUBLIC_GRANTEE_GROUPS = ("/global/AllUsers", "/global/AuthenticatedUsers")

CREDENTIAL_KEY = re.compile(
    r"(^|_)(TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|APIKEY|AUTH|KUBECONFIG|"
    r"(API|ACCESS|SECRET|PRIVATE|SSH|SIGNING|ENCRYPTION|DEPLOY|CLIENT)_KEY)(_|$)",
    re.IGNORECASE,
)
"""Variable names that say "credential": HF_TOKEN, WANDB_API_KEY, SCW_SECRET_KEY, DB_PASSWORD (not MAX_TOKENS)."""
CREDENTIAL_VALUE = re.compile(
    r"\bgl[a-z]{1,6}-[0-9A-Za-z_-]{16,}"  # GitLab tokens: glpat-, glrt-, gldt-, ...
    r"|\bgh[pousr]_[0-9A-Za-z]{30,}|\bgithub_pat_[0-9A-Za-z_]{30,}"  # GitHub
    r"|\bSCW[0-9A-Z]{17}\b"  # Scaleway access key
    r"|\b(AKIA|ASIA)[0-9A-Z]{16}\b"  # AWS access key
    r"|\bhf_[0-9A-Za-z]{30,}"  # Hugging Face
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|\beyJ[0-9A-Za-z_-]{10,}\.eyJ[0-9A-Za-z_-]{10,}"  # a JWT
)
"""Values that are credentials whatever the variable is called."""


# ---------------------------------------------------------------------------------------------------------
# Helpers: config with defaults, values that may be unknown during preview, readable values.


def _config(args: ResourceValidationArgs | StackValidationArgs, key: str, default: Any) -> Any:
    """The policy's config value (`--policy-pack-config`), or its default when unset."""
    value = (args.get_config() or {}).get(key)
    return default if value is None else value


def _known(mapping: Any, *path: str) -> Any:
    """The value at `path`, or None if it is missing or not known yet (for naming things, not for judging)."""
    value = mapping
    try:
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
    except UnknownValueError:
        return None
    return value


def _show(value: Any) -> str:
    """A value as a message shows it: integral floats (protobuf numbers) as integers, strings quoted."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if value is None:
        return "unset"
    return repr(value) if isinstance(value, str) else str(value)


def _name(args: ResourceValidationArgs) -> str:
    """The physical name when the resource has one, else its Pulumi name."""
    name = _known(args.props, "name")
    return name if isinstance(name, str) and name else args.name


def _seq(value: Any) -> list[Any]:
    return list(value) if isinstance(value, Sequence) and not isinstance(value, str) else []


# ---------------------------------------------------------------------------------------------------------
# GPU pools


def is_gpu_pool(props: Mapping[str, Any], pattern: str = DEFAULT_GPU_NODE_TYPE_PATTERN) -> bool:
    """A pool of GPU nodes: its node type is a GPU type, or it carries the `nvidia.com/gpu` taint."""
    node_type = _known(props, "nodeType")
    if isinstance(node_type, str) and re.search(pattern, node_type.upper().replace("_", "-"), re.IGNORECASE):
        return True
    return any(_known(taint, "key") == GPU_TAINT_KEY for taint in _seq(_known(props, "taints")))


def _gpu_pool(args: ResourceValidationArgs) -> bool:
    if args.resource_type not in POOL_TYPES:
        return False
    return is_gpu_pool(args.props, str(_config(args, "gpu_node_type_pattern", DEFAULT_GPU_NODE_TYPE_PATTERN)))


def _pool_label(args: ResourceValidationArgs) -> str:
    return f"GPU pool '{_name(args)}' ({_known(args.props, 'nodeType') or 'tainted nvidia.com/gpu'})"


def gpu_pool_scales_to_zero(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """A GPU pool autoscales from zero and Pulumi leaves its size to the autoscaler.

    Why: an idle GPU node bills by the minute (L40S 1.47 EUR/h); and a `pulumi up` that writes `size`
    would fight the autoscaler, adding or removing nodes under running jobs.
    """
    if not _gpu_pool(args):
        return
    label, props, name = _pool_label(args), args.props, _name(args)
    if props.get("autoscaling") is not True:
        report_violation(
            f"{label}: autoscaling={_show(props.get('autoscaling'))}: a GPU pool must autoscale so that idle "
            f"GPU nodes are removed (gpu-ci: platform.pools.{name}.autoscaling: true)",
            None,
        )
    min_size = props.get("minSize")
    if min_size != 0 and name not in _seq(_config(args, "always_on_pools", [])):
        report_violation(
            f"{label}: minSize={_show(min_size)}: a GPU pool must scale to zero (minSize 0) so that it costs "
            f"nothing while no job runs (gpu-ci: platform.pools.{name}.min_size: 0), or list the pool in this "
            "policy's always_on_pools",
            None,
        )
    if "size" not in (args.opts.ignore_changes or []):
        report_violation(
            f"{label}: ignoreChanges={list(args.opts.ignore_changes or [])}: 'size' must be ignored, the "
            "autoscaler owns it; otherwise `pulumi up` resizes the pool under running jobs",
            None,
        )


def gpu_pool_taint_and_config_label(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """A GPU pool carries the `nvidia.com/gpu` NoSchedule taint and the device-plugin config label.

    Why: without the taint any pod may land on a GPU node and keep it (and its bill) up; without the label
    the device plugin does not apply the pool's GPU sharing, so fewer jobs fit than the runner sends.
    """
    if not _gpu_pool(args):
        return
    label, props = _pool_label(args), args.props
    taints = [t for t in _seq(props.get("taints")) if isinstance(t, Mapping) and t.get("key") == GPU_TAINT_KEY]
    if not any(t.get("effect") in GPU_TAINT_EFFECTS for t in taints):
        shown = [f"{t.get('key')}={t.get('value')}:{t.get('effect')}" for t in taints] or "none"
        report_violation(
            f"{label}: {GPU_TAINT_KEY} taint={shown}: a GPU pool must be tainted {GPU_TAINT_KEY}:NoSchedule "
            "so that only CI jobs (which tolerate it) and the GPU operator run there",
            None,
        )
    labels = props.get("labels")
    value = labels.get(DEVICE_PLUGIN_CONFIG_LABEL) if isinstance(labels, Mapping) else None
    if not value:
        report_violation(
            f"{label}: label {DEVICE_PLUGIN_CONFIG_LABEL}={_show(value)}: a GPU pool must name its "
            "device-plugin config, or its nodes get the default (one job per GPU)",
            None,
        )


# ---------------------------------------------------------------------------------------------------------
# The cluster


def kapsule_cluster_protected(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """The Kapsule cluster is protected: deleting it (a replacement, a removed line) deletes every pool and job."""
    if args.resource_type not in CLUSTER_TYPES:
        return
    if not args.props:  # Cluster.get(...) of an adopted cluster: read, not managed, nothing to protect
        args.not_applicable("read, not managed by this stack")
    if not args.opts.protect:
        report_violation(
            f"Kapsule cluster '{_name(args)}': protect={args.opts.protect}: the cluster must be protected so that "
            "no `pulumi up` or `destroy` deletes it (gpu-ci protects it always: see docs/security.md)",
            None,
        )


# ---------------------------------------------------------------------------------------------------------
# The GitLab runner (its Helm release and the config.toml in `values.runners.config`)


def _is_runner_chart(chart: Any) -> bool:
    return isinstance(chart, str) and chart.rstrip("/").rsplit("/", 1)[-1] == RUNNER_CHART


def _runner_release(args: ResourceValidationArgs) -> bool:
    return args.resource_type == HELM_RELEASE_TYPE and _is_runner_chart(args.props.get("chart"))


def _kubernetes_settings(
    args: ResourceValidationArgs, report_violation: ReportViolation = lambda *_: None
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(label, `[runners.kubernetes]` settings) of each Kubernetes-executor entry of a runner release's
    config.toml ({} when the entry has none); unreadable TOML goes to `report_violation`."""
    if not _runner_release(args):
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
    where = f"Helm release '{_name(args)}' ({RUNNER_CHART})"
    try:
        document = tomllib.loads(str(text))
    except tomllib.TOMLDecodeError as err:
        report_violation(f"{where}: values.runners.config is not TOML the policy can read ({err})", None)
        return []
    return [
        (f"{where}: runners.config [[runners]] '{entry.get('name') or index}'", entry)
        for index, entry in enumerate(_seq(document.get("runners")))
        if isinstance(entry, Mapping)
    ]


def runner_poll_timeout_covers_cold_start(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """The runner waits for a job pod at least as long as a GPU node takes to start from zero.

    Why: a job routed to a pool at zero waits Pending while the autoscaler boots a node; if `poll_timeout`
    (180 s by default) runs out first, the job fails with "timed out waiting for pod to start".
    """
    if not _runner_release(args):
        return
    minimum = float(_config(args, "min_poll_timeout_seconds", DEFAULT_MIN_POLL_TIMEOUT_SECONDS))
    values = args.props.get("values")
    runners = values.get("runners") if isinstance(values, Mapping) else None
    if not isinstance(runners, Mapping) or runners.get("config") is None:
        report_violation(
            f"Helm release '{_name(args)}' ({RUNNER_CHART}): values.runners.config=unset: the chart's default "
            f"config has no poll_timeout ({DEFAULT_POLL_TIMEOUT_SECONDS} s), below the {_show(minimum)} s a GPU "
            "node takes to start",
            None,
        )
        return
    for where, settings in _kubernetes_settings(args, report_violation):
        timeout = settings.get("poll_timeout", DEFAULT_POLL_TIMEOUT_SECONDS)
        if not isinstance(timeout, int | float) or timeout < minimum:
            report_violation(
                f"{where}: kubernetes.poll_timeout={_show(timeout)}: below {_show(minimum)} s, the time a GPU node "
                "takes from zero to a running job pod; such jobs fail waiting (gpu-ci: raise "
                "platform.pools.<pool>.cold_start_minutes, or lower this policy's min_poll_timeout_seconds)",
                None,
            )


def _added_capabilities(value: Any, allowed: frozenset[str]) -> list[str] | None:
    """The added capabilities (upper-cased) if any is privileged or not allowed, else None."""
    added = [str(c).upper() for c in _seq(value)]
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
    for index, patch in enumerate(_seq(kubernetes.get("pod_spec"))):
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
                yield here, _known(value, "path") or value
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
    if not _runner_release(args):
        return
    allowed = frozenset(str(c).upper().removeprefix("CAP_") for c in _seq(_config(args, "allowed_capabilities", [])))
    for where, kubernetes in _kubernetes_settings(args):  # unreadable TOML is the poll-timeout rule's
        for key, value in _privileged_settings(kubernetes, allowed):
            report_violation(
                f"{where}: kubernetes.{key}={_show(value)}: job pods must not be privileged or escalate "
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
                    f"{where}: kubernetes.{key}={_show(value)}: a job must not choose its service account, "
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
            wide = [v for v in _seq(value) if str(v).strip() in MATCH_ALL_IMAGES]
            if not isinstance(value, list) or (key == "allowed_images" and not value) or wide:
                report_violation(
                    f"{where}: kubernetes.{key}={_show(value)}: list the images jobs may use (no bare '*'), "
                    "so a job cannot run an arbitrary image",
                    None,
                )
        if "ALL" not in [str(c).upper() for c in _seq(settings.get("cap_drop"))]:
            report_violation(
                f"{where}: kubernetes.cap_drop={_show(settings.get('cap_drop'))}: drop ALL capabilities "
                '(cap_drop = ["ALL"]); the runtime\'s defaults include NET_RAW',
                None,
            )
        for key in ("privileged", "automount_service_account_token"):
            if settings.get(key) is not False:
                report_violation(
                    f"{where}: kubernetes.{key}={_show(settings.get(key))}: set it to false explicitly", None
                )


def _wildcard_rules(rules: Any) -> list[str]:
    """`apiGroups/resources/verbs` of RBAC rules that grant `*`, shown as `rules[i].field`."""
    found = []
    for index, rule in enumerate(_seq(rules)):
        if isinstance(rule, Mapping):
            for field in ("apiGroups", "resources", "verbs"):
                if "*" in [str(v) for v in _seq(rule.get(field))]:
                    found.append(f"rules[{index}].{field}")
    return found


def rbac_least_privilege(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """No Role or ClusterRole, and no runner chart's `rbac.rules`, grants `*` (resources, verbs or API groups);
    a runner release that creates RBAC lists its rules (the chart's default is every verb on every resource).

    Why: the manager's token creates job pods; with `*` it also reads every Secret of its namespace and
    creates anything, which a job that reaches the token turns into the cluster.
    """
    if args.resource_type in ROLE_TYPES:
        for field in _wildcard_rules(args.props.get("rules")):
            report_violation(
                f"{args.resource_type.rsplit(':', 1)[-1]} '{_known(args.props, 'metadata', 'name') or args.name}': "
                f"{field} contains '*': grant the resources and verbs the workload needs, by name",
                None,
            )
        return
    if not _runner_release(args):
        return
    values = args.props.get("values")
    rbac = values.get("rbac") if isinstance(values, Mapping) else None
    if not isinstance(rbac, Mapping) or rbac.get("create") is False:
        return
    where = f"Helm release '{_name(args)}' ({RUNNER_CHART})"
    if not _seq(rbac.get("rules")):
        report_violation(
            f"{where}: values.rbac.rules=unset: the chart's default Role grants every verb on every core "
            "resource; list the Kubernetes executor's rules",
            None,
        )
    for field in _wildcard_rules(rbac.get("rules")):
        report_violation(
            f"{where}: values.rbac.{field} contains '*': grant the resources and verbs the runner needs, by name",
            None,
        )


def runner_registration_scoped(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """The GitLab runner registration takes tagged jobs only, a project runner is locked to its project,
    and its access level is one the policy config allows.

    Why: an untagged runner takes any job of any project that can use it (the GPU nodes become everyone's
    shared runner); an unlocked project runner can be enabled by any Maintainer of another project;
    `not_protected` lets jobs of every branch run there, which a stack may forbid (`allowed_access_levels`).
    """
    if args.resource_type not in RUNNER_REGISTRATION_TYPES:
        return
    props, where = args.props, f"GitLab runner '{_known(args.props, 'description') or args.name}'"
    untagged = props.get("untagged") if args.resource_type.endswith("UserRunner") else props.get("runUntagged")
    if untagged is not False:
        report_violation(f"{where}: untagged={_show(untagged)}: set untagged: false (tagged jobs only)", None)
    runner_type = _known(props, "runnerType")
    if runner_type == "project_type" and props.get("locked") is not True:
        report_violation(
            f"{where}: locked={_show(props.get('locked'))}: a project runner must be locked to its project", None
        )
    level = props.get("accessLevel")
    allowed = [str(a) for a in _seq(_config(args, "allowed_access_levels", ACCESS_LEVELS))]
    if level not in allowed:
        report_violation(
            f"{where}: accessLevel={_show(level)}: allowed are {allowed} (this policy's allowed_access_levels; "
            "gpu-ci: platform.runner.access_level)",
            None,
        )


def kapsule_pool_protected(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Every Kapsule pool is protected: a replacement (node type, zone) deletes it first, with its jobs.

    Why: a pool's replacement is delete-then-create (one pool name, the one job routing selects on), so
    its running jobs are lost; on `system` it evicts the only runner manager.
    """
    if args.resource_type not in POOL_TYPES or not args.props:
        return
    if not args.opts.protect:
        report_violation(
            f"Kapsule pool '{_name(args)}': protect={args.opts.protect}: pools must be protected; a node-type "
            "change goes through a new pool (docs/security.md, 'Safe replacements')",
            None,
        )


def namespace_pod_security(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Every namespace the stack creates enforces the Pod Security Standard `baseline` or `restricted`.

    Why: the admission controller then refuses privileged pods, host namespaces and hostPath mounts in
    it, whatever a runner config or a pod_spec patch asks for: a second wall behind the runner's own.
    """
    if args.resource_type != NAMESPACE_TYPE:
        return
    name = _known(args.props, "metadata", "name") or args.name
    if name in _seq(_config(args, "exempt_namespaces", [])):
        return
    level = _known(args.props, "metadata", "labels", POD_SECURITY_ENFORCE_LABEL)
    if level not in POD_SECURITY_LEVELS:
        report_violation(
            f"namespace '{name}': label {POD_SECURITY_ENFORCE_LABEL}={_show(level)}: set it to 'baseline' or "
            "'restricted' so the API server refuses privileged job pods",
            None,
        )


def runner_rbac_namespaced(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """The runner's RBAC stops at its namespace (`rbac.clusterWideAccess` is not true).

    Why: the manager holds a token that creates pods and secrets; cluster-wide, a leaked token reaches
    kube-system and the GPU operator.
    """
    if not _runner_release(args):
        return
    values = args.props.get("values")
    rbac = values.get("rbac") if isinstance(values, Mapping) else None
    wide = rbac.get("clusterWideAccess") if isinstance(rbac, Mapping) else None
    if wide is True:
        report_violation(
            f"Helm release '{_name(args)}' ({RUNNER_CHART}): values.rbac.clusterWideAccess=True: the runner's "
            "Role must be limited to its namespace (a ClusterRole lets it create pods and read secrets anywhere)",
            None,
        )


def helm_release_atomic(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Every Helm release is atomic with a timeout: a failed upgrade rolls back instead of leaving it half-done;
    except a runner release that drains: `skipAwait` with the Deployment strategy `Recreate`.

    Why: a non-atomic failed upgrade leaves a broken release until someone runs Helm by hand; the timeout bounds
    how long `pulumi up` waits before rolling back. A runner manager's upgrade is different: with `Recreate`
    the old manager finishes its jobs first (up to the job timeout), which no Helm wait may cut short, and an
    atomic rollback would restart a manager that is still draining.
    """
    if args.resource_type != HELM_RELEASE_TYPE:
        return
    props, where = args.props, f"Helm release '{_name(args)}' (chart {_show(_known(args.props, 'chart'))})"
    strategy = (props.get("values") or {}).get("strategy") or {}
    draining_runner = _runner_release(args) and props.get("skipAwait") is True and strategy.get("type") == "Recreate"
    if props.get("atomic") is not True and not draining_runner:
        report_violation(
            f"{where}: atomic={_show(props.get('atomic'))}: set atomic: true so a failed upgrade rolls back "
            "(a runner release may instead skip the await with strategy Recreate)",
            None,
        )
    timeout = props.get("timeout")
    if not isinstance(timeout, int | float) or timeout <= 0:
        report_violation(
            f"{where}: timeout={_show(timeout)}: set a timeout (seconds) after which the release rolls back", None
        )


# ---------------------------------------------------------------------------------------------------------
# CI/CD variables


def looks_like_credential(key: str, value: Any) -> str | None:
    """Why a variable looks like a credential ("its name", "its value"), or None."""
    if CREDENTIAL_KEY.search(key):
        return "its name"
    if isinstance(value, str) and CREDENTIAL_VALUE.search(value):
        return "its value"
    return None


def ci_secret_variables_masked(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """A CI/CD variable holding a credential is masked (or hidden) and protected.

    Why: unmasked, a credential prints in clear in any job log that echoes it; unprotected, any branch's
    pipeline (anyone with push access) can read it. The value itself never appears in the message.
    """
    if args.resource_type not in VARIABLE_TYPES:
        return
    key = _known(args.props, "key")
    if not isinstance(key, str):
        return
    if key in _seq(_config(args, "extra_secret_keys", [])):
        reason: str | None = "the policy's extra_secret_keys"
    else:
        reason = looks_like_credential(key, _known(args.props, "value"))  # unknown during preview: name only
    if reason is None:
        return
    masked = args.props.get("masked") is True or args.props.get("hidden") is True
    protected = args.props.get("protected") is True
    if masked and (protected or key in _seq(_config(args, "allow_unprotected", []))):
        return
    scope = _known(args.props, "project") or _known(args.props, "group") or "instance"
    scope = scope if isinstance(scope, str) else _show(scope)  # a numeric project id arrives as a float
    report_violation(
        f"CI variable '{key}' ({scope}): masked={_show(args.props.get('masked'))}, "
        f"protected={_show(args.props.get('protected'))}: it looks like a credential ({reason}) and must be "
        f"masked and protected (gpu-ci: platform.ci.variables.{key}.secret, which defaults to both)",
        None,
    )


# ---------------------------------------------------------------------------------------------------------
# Public storage


def _public_grants(props: Mapping[str, Any]) -> list[str]:
    grants = _seq(_known(props, "accessControlPolicy", "grants"))
    return [
        f"{_known(g, 'grantee', 'uri')}:{_known(g, 'permission')}"
        for g in grants
        if str(_known(g, "grantee", "uri") or "").endswith(PUBLIC_GRANTEE_GROUPS)
    ]


def _public_statements(policy: Any) -> list[str]:
    """Sids (or indexes) of bucket-policy statements that allow anyone ("Principal": "*")."""
    try:
        document = json.loads(policy) if isinstance(policy, str) else policy
    except json.JSONDecodeError:
        return []
    statements = document.get("Statement") if isinstance(document, Mapping) else None
    if isinstance(statements, Mapping):
        statements = [statements]
    public = []
    for index, statement in enumerate(_seq(statements)):
        if not isinstance(statement, Mapping) or statement.get("Effect") != "Allow":
            continue
        principal = statement.get("Principal")
        principals = principal.values() if isinstance(principal, Mapping) else [principal]
        if any(p == "*" or (isinstance(p, list) and "*" in p) for p in principals):
            public.append(str(statement.get("Sid") or index))
    return public


def no_public_buckets(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """No Object Storage bucket is readable by anyone: a canned public ACL, a grant to AllUsers or
    AuthenticatedUsers, or a bucket policy allowing Principal "*".

    Why: the runner cache and training artifacts hold code, data and checkpoints.
    """
    kind = args.resource_type
    if kind not in BUCKET_TYPES | BUCKET_ACL_TYPES | BUCKET_POLICY_TYPES:
        return
    bucket = _known(args.props, "name" if kind in BUCKET_TYPES else "bucket") or args.name
    if bucket in _seq(_config(args, "allowed_public_buckets", [])):
        return
    where = f"bucket '{bucket}'"
    why = "Object Storage buckets must stay private (or list the bucket in this policy's allowed_public_buckets)"
    if kind in BUCKET_POLICY_TYPES:
        for sid in _public_statements(args.props.get("policy")):
            report_violation(f"{where}: policy statement {sid!r} allows Principal '*': {why}", None)
        return
    acl = args.props.get("acl")
    if acl in PUBLIC_CANNED_ACLS:
        report_violation(f"{where}: acl={_show(acl)}: {why}", None)
    if kind in BUCKET_ACL_TYPES:
        for grant in _public_grants(args.props):
            report_violation(f"{where}: grant {grant}: {why}", None)


def registry_namespace_private(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """The Container Registry namespace is private unless explicitly allowed.

    Why: training images carry the code and, often, baked-in data or weights.
    """
    if args.resource_type not in REGISTRY_NAMESPACE_TYPES:
        return
    name = _name(args)
    if args.props.get("isPublic") is True and name not in _seq(_config(args, "allowed_public_namespaces", [])):
        report_violation(
            f"registry namespace '{name}': isPublic=True: anyone could pull the training images; keep it private "
            "(gpu-ci: platform.registry.is_public: false) or list it in this policy's allowed_public_namespaces",
            None,
        )


# ---------------------------------------------------------------------------------------------------------
# Stack: the device-plugin configs the GPU pools select exist


def gpu_pool_config_exists(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Each GPU pool's `nvidia.com/device-plugin.config` label names a key of the device-plugin ConfigMap.

    Why: a node whose label names a missing key gets no usable plugin config: its GPU is not shared as
    the runner and the capacity plan assume, or not advertised at all.
    """
    config_map = DEFAULT_DEVICE_PLUGIN_CONFIG_MAP
    for resource in args.resources:
        if resource.resource_type in CLUSTER_POLICY_TYPES:
            config_map = _known(resource.props, "spec", "devicePlugin", "config", "name") or config_map
    config_map = str(_config(args, "config_map", config_map))
    maps = [
        r
        for r in args.resources
        if r.resource_type == CONFIG_MAP_TYPE and _known(r.props, "metadata", "name") == config_map
    ]
    keys = {key for r in maps for key in (_known(r.props, "data") or {})}
    pattern = str(_config(args, "gpu_node_type_pattern", DEFAULT_GPU_NODE_TYPE_PATTERN))
    for pool in args.resources:
        if pool.resource_type not in POOL_TYPES or not is_gpu_pool(pool.props, pattern):
            continue
        selected = _known(pool.props, "labels", DEVICE_PLUGIN_CONFIG_LABEL)
        if selected is None or selected in keys:
            continue  # an unlabelled GPU pool is the resource policy's to report
        found = f"its keys are {sorted(keys)}" if maps else "no such ConfigMap is in the stack"
        report_violation(
            f"GPU pool '{_known(pool.props, 'name') or pool.name}': {DEVICE_PLUGIN_CONFIG_LABEL}={selected!r} "
            f"is not a key of the device-plugin ConfigMap '{config_map}' ({found})",
            pool.urn,
        )


def _default_deny(props: Mapping[str, Any]) -> bool:
    """A NetworkPolicy that selects every pod of its namespace and allows nothing, in and out."""
    selector = _known(props, "spec", "podSelector")
    every_pod = not selector or not any(_seq(_known(selector, k)) or _known(selector, k) for k in selector)
    types = {str(t) for t in _seq(_known(props, "spec", "policyTypes"))}
    rules = _seq(_known(props, "spec", "ingress")) + _seq(_known(props, "spec", "egress"))
    return every_pod and {"Ingress", "Egress"} <= types and not rules


def runner_namespace_default_deny(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Each namespace the stack creates, and each runner release's namespace, has a default-deny
    NetworkPolicy (empty podSelector, policyTypes Ingress and Egress, no rule); other policies then
    allow what the runner needs.

    Why: without it a job pod reaches every pod and service of the cluster (the GPU operator's, the
    kubelet's metrics, other runners' jobs) and anything on the internet; one compromised job then
    scans and attacks from inside the private network.
    """
    exempt = set(map(str, _seq(_config(args, "exempt_namespaces", []))))
    wanted: dict[str, str | None] = {}
    for resource in args.resources:
        if resource.resource_type == NAMESPACE_TYPE:
            name = _known(resource.props, "metadata", "name")
            if isinstance(name, str):
                wanted[name] = resource.urn
        elif resource.resource_type == HELM_RELEASE_TYPE:
            namespace = _known(resource.props, "namespace")
            if _is_runner_chart(_known(resource.props, "chart")) and isinstance(namespace, str) and namespace:
                wanted.setdefault(namespace, resource.urn)
    denied = {
        _known(r.props, "metadata", "namespace")
        for r in args.resources
        if r.resource_type == NETWORK_POLICY_TYPE and _default_deny(r.props)
    }
    for namespace, urn in sorted(wanted.items()):
        if namespace not in denied and namespace not in exempt:
            report_violation(
                f"namespace '{namespace}': no default-deny NetworkPolicy (empty podSelector, policyTypes "
                "[Ingress, Egress], no rule): job pods could reach the whole cluster and the internet",
                urn,
            )


# ---------------------------------------------------------------------------------------------------------
# The policies


def _schema(**properties: dict[str, Any]) -> PolicyConfigSchema:
    return PolicyConfigSchema(properties=properties)


_GPU_PATTERN = {
    "type": "string",
    "default": DEFAULT_GPU_NODE_TYPE_PATTERN,
    "description": "regex (case-insensitive) of GPU node types",
}
_NAMES = {"type": "array", "items": {"type": "string"}, "default": []}

RESOURCE_POLICIES: list[ResourceValidationPolicy] = [
    ResourceValidationPolicy(
        name="gpu-pool-scales-to-zero",
        description="GPU node pools autoscale from zero, and Pulumi ignores their size (the autoscaler owns it).",
        validate=gpu_pool_scales_to_zero,
        config_schema=_schema(gpu_node_type_pattern=_GPU_PATTERN, always_on_pools=_NAMES),
    ),
    ResourceValidationPolicy(
        name="gpu-pool-taint-and-config-label",
        description="GPU node pools carry the nvidia.com/gpu NoSchedule taint and the device-plugin config label.",
        validate=gpu_pool_taint_and_config_label,
        config_schema=_schema(gpu_node_type_pattern=_GPU_PATTERN),
    ),
    ResourceValidationPolicy(
        name="kapsule-cluster-protected",
        description="The Kapsule cluster is protected against deletion by Pulumi.",
        validate=kapsule_cluster_protected,
    ),
    ResourceValidationPolicy(
        name="runner-poll-timeout-covers-cold-start",
        description="The GitLab runner waits for a job pod at least as long as a GPU node takes to start from zero.",
        validate=runner_poll_timeout_covers_cold_start,
        config_schema=_schema(
            min_poll_timeout_seconds={"type": "integer", "minimum": 0, "default": DEFAULT_MIN_POLL_TIMEOUT_SECONDS}
        ),
    ),
    ResourceValidationPolicy(
        name="kapsule-pool-protected",
        description="Kapsule pools are protected: a replacement would delete the pool, and its jobs, first.",
        validate=kapsule_pool_protected,
    ),
    ResourceValidationPolicy(
        name="runner-job-pods-unprivileged",
        description="The GitLab runner's job pods are not privileged, add no capability, reach no host namespace "
        "or path and mount no service-account token (config.toml and pod_spec patches).",
        validate=runner_job_pods_unprivileged,
        config_schema=_schema(allowed_capabilities=_NAMES),
    ),
    ResourceValidationPolicy(
        name="runner-no-identity-overrides",
        description="No job may choose its service account, bearer token or namespace.",
        validate=runner_no_identity_overrides,
    ),
    ResourceValidationPolicy(
        name="runner-job-isolation",
        description="Each runner sets allowed_images, allowed_services, cap_drop ALL, and privileged and "
        "automount_service_account_token to false.",
        validate=runner_job_isolation,
    ),
    ResourceValidationPolicy(
        name="rbac-least-privilege",
        description="No Role, ClusterRole or runner chart rbac.rules grants '*'; the runner's rules are listed.",
        validate=rbac_least_privilege,
    ),
    ResourceValidationPolicy(
        name="runner-registration-scoped",
        description="GitLab runners take tagged jobs only, project runners are locked, the access level is allowed.",
        validate=runner_registration_scoped,
        config_schema=_schema(
            allowed_access_levels={
                "type": "array",
                "items": {"type": "string", "enum": ACCESS_LEVELS},
                "default": ACCESS_LEVELS,
            }
        ),
    ),
    ResourceValidationPolicy(
        name="namespace-pod-security",
        description="Namespaces the stack creates enforce the Pod Security Standard baseline or restricted.",
        validate=namespace_pod_security,
        config_schema=_schema(exempt_namespaces=_NAMES),
    ),
    ResourceValidationPolicy(
        name="runner-rbac-namespaced",
        description="The GitLab runner's RBAC is limited to its namespace.",
        validate=runner_rbac_namespaced,
    ),
    ResourceValidationPolicy(
        name="helm-release-atomic",
        description="Helm releases are atomic with a timeout (a runner release may instead skip the await "
        "with strategy Recreate).",
        validate=helm_release_atomic,
    ),
    ResourceValidationPolicy(
        name="ci-secret-variables-masked",
        description="GitLab CI/CD variables that hold a credential are masked and protected.",
        validate=ci_secret_variables_masked,
        config_schema=_schema(extra_secret_keys=_NAMES, allow_unprotected=_NAMES),
    ),
    ResourceValidationPolicy(
        name="no-public-buckets",
        description="No Object Storage bucket is public (canned ACL, grant to all users, or policy for '*').",
        validate=no_public_buckets,
        config_schema=_schema(allowed_public_buckets=_NAMES),
    ),
    ResourceValidationPolicy(
        name="registry-namespace-private",
        description="Container Registry namespaces are private unless explicitly allowed.",
        validate=registry_namespace_private,
        config_schema=_schema(allowed_public_namespaces=_NAMES),
    ),
]

STACK_POLICIES: list[StackValidationPolicy] = [
    StackValidationPolicy(
        name="runner-namespace-default-deny",
        description="Each namespace of the stack and of a runner release has a default-deny NetworkPolicy.",
        validate=runner_namespace_default_deny,
        config_schema=_schema(exempt_namespaces=_NAMES),
    ),
    StackValidationPolicy(
        name="gpu-pool-config-exists",
        description="Each GPU pool's device-plugin config label names a key of the device-plugin ConfigMap.",
        validate=gpu_pool_config_exists,
        config_schema=_schema(
            config_map={"type": "string", "description": "ConfigMap name when no ClusterPolicy patch names it"},
            gpu_node_type_pattern=_GPU_PATTERN,
        ),
    ),
]

POLICIES: list[ResourceValidationPolicy | StackValidationPolicy] = [*RESOURCE_POLICIES, *STACK_POLICIES]
ENFORCEMENT_LEVEL = EnforcementLevel.MANDATORY
"""Every rule blocks `pulumi up` by default; `--policy-pack-config` lowers a rule to advisory or disables it."""
