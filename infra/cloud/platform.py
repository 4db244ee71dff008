"""The whole platform from one spec: which components exist and how their outputs connect.

`__main__.py` calls `build_platform` and exports what it returns; nothing here reads stack config.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

from infra.capacity import pool_reports
from infra.cloud.gitlab_ci import GitlabCi, GitlabCiArgs
from infra.cloud.gpu_sharing import GpuSharing, GpuSharingArgs
from infra.cloud.kapsule import KapsuleCluster, KapsuleClusterArgs
from infra.cloud.names import CI_COMPONENT, COMPONENT_NAME, GPU_SHARING_NAME, REGISTRY_COMPONENT, RUNNER_COMPONENT
from infra.cloud.registry import ContainerRegistry, ContainerRegistryArgs
from infra.cloud.runner import GitlabRunner, GitlabRunnerArgs
from infra.config.platform import PlatformSpec
from infra.config.registry import REGISTRY_PULL_SECRET_CONFIG
from infra.cost import cost_report
from infra.render.device_plugin import pool_labels


def build_platform(spec: PlatformSpec, secrets: Mapping[str, pulumi.Input[str]] | None = None) -> dict[str, Any]:
    """Register every resource of the platform; return the stack outputs by name.

    `secrets` holds the stack secrets the spec needs (`infra.config.secrets.secret_config_keys`), read
    by `__main__.py` as Pulumi secrets.
    """
    kapsule = KapsuleCluster(COMPONENT_NAME, KapsuleClusterArgs(spec=spec, extra_pool_labels=pool_labels(spec)))
    registry = ContainerRegistry(
        REGISTRY_COMPONENT,
        ContainerRegistryArgs(spec=spec, pull_secret_key=(secrets or {}).get(REGISTRY_PULL_SECRET_CONFIG)),
    )
    runner = GitlabRunner(
        RUNNER_COMPONENT,
        GitlabRunnerArgs(
            spec=spec,
            provider=kapsule.provider,
            registry_docker_config=registry.docker_config_json,
            secrets=secrets,
        ),
    )
    ci = GitlabCi(CI_COMPONENT, GitlabCiArgs(spec=spec, registry_endpoint=registry.endpoint, secrets=secrets))
    outputs: dict[str, Any] = {
        "cluster_id": kapsule.cluster_id,
        "pool_ids": kapsule.pool_ids,
        "kubeconfig": kapsule.kubeconfig,
        "capacity": [row.as_json() for row in pool_reports(spec)],
        "runner_id": runner.runner_id,
        "registry": registry.endpoint,
        "ci_templates": ci.templates,
    }
    if spec.gpu_pools():
        sharing = GpuSharing(
            GPU_SHARING_NAME, GpuSharingArgs(spec=spec), pulumi.ResourceOptions(providers=[kapsule.provider])
        )
        outputs["gpu_sharing"] = {"config_map": sharing.config_map, "pool_keys": sharing.pool_keys}
    cost = cost_report(spec)
    if cost is not None:
        outputs["cost"] = cost.as_json()
    return outputs
