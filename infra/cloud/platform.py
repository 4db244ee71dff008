"""The whole platform from the derived model: which components exist and how their outputs connect.

`__main__.py` derives the platform (before any registration), calls `build_platform` and exports what it
returns. Each component gets its slice of the model and the text rendered for it; nothing here reads stack
config or computes a figure.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import pulumi

from infra.cloud.gitlab_ci import GitlabCi, GitlabCiArgs
from infra.cloud.gpu_sharing import GpuSharing, GpuSharingArgs
from infra.cloud.kapsule import KapsuleCluster, KapsuleClusterArgs
from infra.cloud.names import (
    CI_COMPONENT,
    COMPONENT_NAME,
    GPU_SHARING_NAME,
    REGISTRY_COMPONENT,
    RUNNER_COMPONENT,
    WARM_COMPONENT,
)
from infra.cloud.registry import ContainerRegistry, ContainerRegistryArgs
from infra.cloud.runner import RunnerFleet, RunnerFleetArgs, RunnerRelease
from infra.cloud.warm import WarmCapacity, WarmCapacityArgs
from infra.config.registry import REGISTRY_PULL_SECRET_CONFIG
from infra.model.platform import Platform
from infra.model.warm import minute_of_week
from infra.render.ci_templates import render_ci_templates
from infra.render.device_plugin import cluster_policy_patch, device_plugin_configs
from infra.render.runner import runner_helm_values


def build_platform(
    platform: Platform,
    secrets: Mapping[str, pulumi.Input[str]] | None = None,
    report: Mapping[str, Any] | None = None,
    *,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Register every resource of the platform; return the stack outputs by name.

    `secrets` holds the stack secrets the spec needs (`infra.config.secrets.secret_config_keys`), read by
    `__main__.py` as Pulumi secrets. `report` holds figures computed before any registration (capacity, cost),
    exported as they are. `now`: when this `up` runs (placeholders are created at the size of the warm window
    open then; None: at 0).
    """
    spec = platform.spec
    kapsule = KapsuleCluster(
        COMPONENT_NAME, KapsuleClusterArgs(region=spec.region, cluster=spec.cluster, pools=platform.pools)
    )
    registry = ContainerRegistry(
        REGISTRY_COMPONENT,
        ContainerRegistryArgs(
            region=spec.region,
            registry=spec.registry,
            pull_secret_key=(secrets or {}).get(REGISTRY_PULL_SECRET_CONFIG),
        ),
    )
    # Before the runners: a warm pool's runner names the jobs' PriorityClass, which must exist before its job pods.
    warm = (
        WarmCapacity(
            WARM_COMPONENT,
            WarmCapacityArgs(
                pools=platform.warm,
                settings=spec.warm_capacity,
                cilium=spec.cluster.cni == "cilium",
                opened_at=None if now is None else minute_of_week(now, platform.warm[0].time_zone),
            ),
            pulumi.ResourceOptions(providers=[kapsule.provider]),
        )
        if platform.warm
        else None
    )
    runners = RunnerFleet(
        RUNNER_COMPONENT,
        RunnerFleetArgs(
            runners=[
                RunnerRelease(r, runner_helm_values(platform, r), platform.job_priority_class(r))
                for r in platform.runners.values()
            ],
            settings=spec.runner,
            gitlab=spec.gitlab,
            region=spec.region,
            provider=kapsule.provider,
            pull_secret_required=spec.registry.needs_pull_secret,
            cilium=spec.cluster.cni == "cilium",
            registry_docker_config=registry.docker_config_json,
            secrets=secrets,
            priority_classes=warm.priority_classes if warm else {},
        ),
    )
    ci = GitlabCi(
        CI_COMPONENT,
        GitlabCiArgs(
            gitlab=spec.gitlab,
            ci=spec.ci,
            templates=render_ci_templates(platform),
            registry_endpoint=registry.endpoint,
            secrets=secrets,
        ),
    )
    outputs: dict[str, Any] = {
        "cluster_id": kapsule.cluster_id,
        "pool_ids": kapsule.pool_ids,
        "kubeconfig": kapsule.kubeconfig,
        "runner_ids": runners.runner_ids,
        "registry": registry.endpoint,
        "ci_templates": ci.templates,
        **(report or {}),
    }
    if platform.gpu_pools:
        sharing = GpuSharing(
            GPU_SHARING_NAME,
            GpuSharingArgs(
                operator=spec.gpu_operator,
                configs=device_plugin_configs(platform),
                cluster_policy_patch=cluster_policy_patch(platform),
                pool_keys={p.name: p.device_plugin_key for p in platform.pools.values() if p.device_plugin_key},
                wait_namespace=runners.namespace,
                wait_node_pool=platform.manager_pool,
                gpu_pools=kapsule.gpu_pools,
                cilium=spec.cluster.cni == "cilium",
            ),
            pulumi.ResourceOptions(providers=[kapsule.provider]),
        )
        outputs["gpu_sharing"] = {"config_map": sharing.config_map, "pool_keys": sharing.pool_keys}
    if warm:
        outputs["warm_capacity"] = {"deployments": warm.deployments, "schedules": warm.schedules}
    return outputs
