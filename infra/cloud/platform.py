"""The whole platform from one spec: which components exist and how their outputs connect.

`__main__.py` calls `build_platform` and exports what it returns; nothing here reads stack config.
"""

from __future__ import annotations

from typing import Any

from infra.capacity import pool_reports
from infra.cloud.kapsule import KapsuleCluster, KapsuleClusterArgs
from infra.cloud_names import COMPONENT_NAME
from infra.spec.platform import PlatformSpec


def build_platform(spec: PlatformSpec) -> dict[str, Any]:
    """Register every resource of the platform; return the stack outputs by name."""
    kapsule = KapsuleCluster(COMPONENT_NAME, KapsuleClusterArgs(spec=spec))
    return {
        "cluster_id": kapsule.cluster_id,
        "pool_ids": kapsule.pool_ids,
        "kubeconfig": kapsule.kubeconfig,
        "capacity": [row.as_json() for row in pool_reports(spec)],
    }
