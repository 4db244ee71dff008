"""The whole platform from one spec: which components exist and how their outputs connect.

`__main__.py` calls `build_platform` and exports what it returns; nothing here reads stack config.
"""

from __future__ import annotations

from typing import Any

import pulumi

from infra.capacity import pool_reports
from infra.cloud.gpu_sharing import GpuSharing, GpuSharingArgs
from infra.cloud.kapsule import KapsuleCluster, KapsuleClusterArgs
from infra.cloud_names import COMPONENT_NAME, GPU_SHARING_NAME
from infra.cost import cost_report
from infra.render.device_plugin import pool_labels
from infra.spec.platform import PlatformSpec


def build_platform(spec: PlatformSpec) -> dict[str, Any]:
    """Register every resource of the platform; return the stack outputs by name."""
    kapsule = KapsuleCluster(COMPONENT_NAME, KapsuleClusterArgs(spec=spec, extra_pool_labels=pool_labels(spec)))
    outputs: dict[str, Any] = {
        "cluster_id": kapsule.cluster_id,
        "pool_ids": kapsule.pool_ids,
        "kubeconfig": kapsule.kubeconfig,
        "capacity": [row.as_json() for row in pool_reports(spec)],
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
