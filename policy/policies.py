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

PACK_NAME = "gpu-ci"

# Resource type tokens (each with the deprecated flat token of the same resource, in case a stack uses it).
POOL_TYPES = frozenset({"scaleway:kubernetes/pool:Pool", "scaleway:index/kubernetesNodePool:KubernetesNodePool"})
CLUSTER_TYPES = frozenset({"scaleway:kubernetes/cluster:Cluster", "scaleway:index/kubernetesCluster:KubernetesCluster"})
HELM_RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
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
"""A GPU node takes ~10-15 min from zero to a running pod on Kapsule (README runbook): 15 min by default."""
SECURITY_CONTEXTS = (
    "build_container_security_context",
    "helper_container_security_context",
    "service_container_security_context",
    "init_permissions_container_security_context",
)
PRIVILEGED_CAPABILITIES = frozenset({"ALL", "SYS_ADMIN", "CAP_SYS_ADMIN"})

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
            "no `pulumi up` or `destroy` deletes it (gpu-ci: platform.cluster.protect: true)",
            None,
        )


# ---------------------------------------------------------------------------------------------------------
# The GitLab runner (its Helm release and the config.toml in `values.runners.config`)


def _runner_release(args: ResourceValidationArgs) -> bool:
    if args.resource_type != HELM_RELEASE_TYPE:
        return False
    chart = args.props.get("chart")
    return isinstance(chart, str) and chart.rstrip("/").rsplit("/", 1)[-1] == RUNNER_CHART


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
    for where, entry in _runner_entries(args, report_violation):
        kubernetes = entry.get("kubernetes")
        if entry.get("executor") != "kubernetes" and not isinstance(kubernetes, Mapping):
            continue
        settings = kubernetes if isinstance(kubernetes, Mapping) else {}
        timeout = settings.get("poll_timeout", DEFAULT_POLL_TIMEOUT_SECONDS)
        if not isinstance(timeout, int | float) or timeout < minimum:
            report_violation(
                f"{where}: kubernetes.poll_timeout={_show(timeout)}: below {_show(minimum)} s, the time a GPU node "
                "takes from zero to a running job pod; such jobs fail waiting (gpu-ci: raise "
                "platform.pools.<pool>.cold_start_minutes, or lower this policy's min_poll_timeout_seconds)",
                None,
            )


def _privileged_settings(kubernetes: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """(key path, value) of every setting that would run a job container privileged or let it escalate."""
    for key in ("privileged", "allow_privilege_escalation"):
        if kubernetes.get(key) is True:
            yield key, True
    added = [str(c).upper() for c in _seq(kubernetes.get("cap_add"))]
    if PRIVILEGED_CAPABILITIES & set(added):
        yield "cap_add", added
    for context in SECURITY_CONTEXTS:
        settings = kubernetes.get(context)
        if not isinstance(settings, Mapping):
            continue
        for key in ("privileged", "allow_privilege_escalation"):
            if settings.get(key) is True:
                yield f"{context}.{key}", True
        capabilities = settings.get("capabilities")
        added = [str(c).upper() for c in _seq(capabilities.get("add") if isinstance(capabilities, Mapping) else None)]
        if PRIVILEGED_CAPABILITIES & set(added):
            yield f"{context}.capabilities.add", added


def runner_job_pods_unprivileged(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Job pods are not privileged and cannot escalate: a CI job runs code from any branch of the project.

    Why: a privileged job container is root on the node, and from there on everything the node can reach
    (other jobs' secrets, the kubelet's credentials).
    """
    if not _runner_release(args):
        return
    for where, entry in _runner_entries(args, lambda *_: None):  # unreadable TOML is the poll-timeout rule's
        kubernetes = entry.get("kubernetes")
        if not isinstance(kubernetes, Mapping):
            continue
        for key, value in _privileged_settings(kubernetes):
            report_violation(
                f"{where}: kubernetes.{key}={_show(value)}: job pods must not be privileged or escalate "
                "privileges (a job would be root on the GPU node)",
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
        name="runner-job-pods-unprivileged",
        description="The GitLab runner's job pods are not privileged and cannot escalate privileges.",
        validate=runner_job_pods_unprivileged,
    ),
    ResourceValidationPolicy(
        name="runner-rbac-namespaced",
        description="The GitLab runner's RBAC is limited to its namespace.",
        validate=runner_rbac_namespaced,
    ),
    ResourceValidationPolicy(
        name="helm-release-atomic",
        description="Helm releases are atomic with a timeout, so a failed upgrade rolls back.",
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
