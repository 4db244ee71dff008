"""The pack: every rule with its name, description and config schema, and the enforcement level, as
`__main__.py` hands them to `PolicyPack`."""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationPolicy, StackValidationPolicy

from . import definitions
from .cluster_pools import (
    DEFAULT_GPU_NODE_TYPE_PATTERN,
    gpu_pool_config_exists,
    gpu_pool_scales_to_zero,
    gpu_pool_taint_and_config_label,
    kapsule_cluster_protected,
    kapsule_pool_protected,
)
from .gitlab_access import (
    ACCESS_LEVELS,
    ci_secret_variables_masked,
    mps_pools_protected_runners,
    runner_registration_scoped,
)
from .namespace_isolation import namespace_pod_security, runner_namespace_default_deny
from .public_storage import no_public_buckets, registry_namespace_private
from .runner_release import helm_release_atomic, rbac_least_privilege, runner_rbac_namespaced
from .runner_toml import (
    runner_job_isolation,
    runner_job_pods_unprivileged,
    runner_no_identity_overrides,
    runner_poll_timeout_covers_cold_start,
)

PACK_NAME = "gpu-ci"


def _schema(**properties: dict[str, Any]) -> PolicyConfigSchema:
    return PolicyConfigSchema(properties=properties)


_GPU_PATTERN = {
    "type": "string",
    "default": DEFAULT_GPU_NODE_TYPE_PATTERN,
    "description": "regex (case-insensitive) of GPU node types",
}
_NAMES = {"type": "array", "items": {"type": "string"}, "default": []}


def _names(default: tuple[str, ...]) -> dict[str, Any]:
    """A list-of-names setting whose default is the rule's (`definitions`)."""
    return {**_NAMES, "default": list(default)}


RESOURCE_POLICIES: list[ResourceValidationPolicy] = [
    ResourceValidationPolicy(
        name="gpu-pool-scales-to-zero",
        description="GPU node pools autoscale from zero, and Pulumi ignores their size (the autoscaler owns it).",
        validate=gpu_pool_scales_to_zero,
        config_schema=_schema(
            gpu_node_type_pattern=_GPU_PATTERN, always_on_pools=_names(definitions.DEFAULT_ALWAYS_ON_POOLS)
        ),
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
            min_poll_timeout_seconds={
                "type": "integer",
                "minimum": 0,
                "default": definitions.DEFAULT_MIN_POLL_TIMEOUT_SECONDS,
            }
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
        config_schema=_schema(
            extra_secret_keys=_NAMES, allow_unprotected=_names(definitions.DEFAULT_ALLOW_UNPROTECTED)
        ),
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
        config_schema=_schema(allowed_public_namespaces=_names(definitions.DEFAULT_ALLOWED_PUBLIC_NAMESPACES)),
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
    StackValidationPolicy(
        name="mps-pools-protected-runners",
        description="A GPU pool shared by MPS is served only by runners that take protected branches' jobs.",
        validate=mps_pools_protected_runners,
    ),
]

POLICIES: list[ResourceValidationPolicy | StackValidationPolicy] = [*RESOURCE_POLICIES, *STACK_POLICIES]
ENFORCEMENT_LEVEL = EnforcementLevel.MANDATORY
"""Every rule blocks `pulumi up` by default; `--policy-pack-config` lowers a rule to advisory or disables it."""
