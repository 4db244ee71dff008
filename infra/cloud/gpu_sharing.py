"""GpuSharing: the device-plugin ConfigMap in the GPU operator's namespace, and the ClusterPolicy pointed at it.

Fed by `platform.pools.<name>.gpu_sharing` and `platform.gpu_operator`. The pool label that selects each
pool's key is set on the pool by KapsuleCluster (`extra_pool_labels`, from the same renderer).

Safe updates: the ConfigMap keeps one name, and the ClusterPolicy patch only names it, so a sharing
change rewrites the ConfigMap's data and nothing else. The operator does not watch that data: GPU nodes
already up keep their config until they scale down, and nodes that start later read the new one. Renaming
the ConfigMap instead would change the device-plugin, GFD and MPS-daemon DaemonSets' pod templates and
restart them on every GPU node, jobs or not. (README: "How a sharing change takes effect".)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from infra.cloud.names import GPU_SHARING_TOKEN, MANAGED_BY, child_name
from infra.config.gpu_operator import GpuOperatorSpec

PATCH_FIELD_MANAGER = "gpu-ci"
"""Server-side-apply field manager of the ClusterPolicy patch (stable, so `--show-managed-fields` names us)."""
CLUSTER_POLICY_API = ("nvidia.com/v1", "ClusterPolicy")


@dataclass(frozen=True)
class GpuSharingArgs:
    """The operator's settings and the rendered configs; the Kubernetes provider comes through `opts.providers`."""

    operator: GpuOperatorSpec
    configs: Mapping[str, str]
    """The ConfigMap's data: one device-plugin config per key (`infra.render.device_plugin`)."""
    cluster_policy_patch: Mapping[str, Any]
    """The ClusterPolicy fields gpu-ci owns (`spec.devicePlugin.config`)."""
    pool_keys: Mapping[str, str]
    """Per GPU pool, its key in the ConfigMap."""


class GpuSharing(pulumi.ComponentResource):
    """One ConfigMap of device-plugin configs (a key per GPU pool) and the ClusterPolicy patch that mounts it."""

    config_map: pulumi.Output[str]
    """`<namespace>/<name>` of the ConfigMap, once created."""
    pool_keys: dict[str, str]
    """Per GPU pool, its key in the ConfigMap (the value of its nodes' `nvidia.com/device-plugin.config`)."""
    cluster_policy_patch: k8s.apiextensions.CustomResourcePatch | None
    """The patch of the operator's ClusterPolicy (None with `gpu_operator.patch_cluster_policy: false`)."""

    def __init__(self, name: str, args: GpuSharingArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(GPU_SHARING_TOKEN, name, {}, opts)
        operator = args.operator
        config_map = k8s.core.v1.ConfigMap(
            child_name("config", name),
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=operator.config_map, namespace=operator.namespace, labels=dict(MANAGED_BY)
            ),
            data=dict(args.configs),
            # Its name is fixed, so a data change (a replacement for pulumi-kubernetes) must delete first.
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
        )
        self.cluster_policy_patch = None
        if operator.patch_cluster_policy:
            api_version, kind = CLUSTER_POLICY_API
            self.cluster_policy_patch = k8s.apiextensions.CustomResourcePatch(
                child_name("cluster-policy", name),
                api_version=api_version,
                kind=kind,
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=operator.cluster_policy,
                    annotations={
                        # The operator's Helm release may own devicePlugin.config: gpu-ci takes these two fields.
                        "pulumi.com/patchForce": "true",
                        "pulumi.com/patchFieldManager": PATCH_FIELD_MANAGER,
                    },
                ),
                spec=args.cluster_policy_patch["spec"],
                # The ConfigMap's name is passed as plain text, not as its output: replacing the ConfigMap
                # must not make the engine replace (drop and re-apply) this patch.
                opts=pulumi.ResourceOptions(parent=self, depends_on=[config_map]),
            )
        self.config_map = pulumi.Output.concat(config_map.metadata.namespace, "/", config_map.metadata.name)
        self.pool_keys = dict(args.pool_keys)
        self.register_outputs({"config_map": self.config_map, "pool_keys": self.pool_keys})
