"""KapsuleCluster: the private network, the Kapsule cluster (or an adopted one) and its node pools.

Fed by `platform.region`, `platform.cluster` and `platform.pools`. It also builds the Kubernetes
provider from the cluster's kubeconfig, usable only once the always-on pool(s) exist (the API
server's DNS entry is not ready before a cluster has a pool).

Safe updates: the cluster is protected; autoscaled pools ignore `size`, which the autoscaler owns;
a pool replacement deletes the old pool first, since two pools cannot share the name that job
routing selects on (`k8s.scaleway.com/pool-name`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s
from pulumiverse_scaleway import kubernetes as scw_k8s
from pulumiverse_scaleway import network as scw_network

from infra.cloud.names import KAPSULE_TOKEN, child_name
from infra.config.platform import PlatformSpec
from infra.config.pools import GPU_TAINT_EFFECT, GPU_TAINT_KEY, GPU_TAINT_VALUE


@dataclass(frozen=True)
class KapsuleClusterArgs:
    """The spec, plus labels other components derive per pool (e.g. the device-plugin config key)."""

    spec: PlatformSpec
    extra_pool_labels: dict[str, dict[str, str]] | None = None


class KapsuleCluster(pulumi.ComponentResource):
    """The cluster and its pools; exposes ids, the kubeconfig (secret) and a Kubernetes provider."""

    cluster_id: pulumi.Output[str]
    """Regional id of the cluster (`fr-par/<uuid>`)."""
    pool_ids: dict[str, pulumi.Output[str]]
    """Pool ids by pool name."""
    kubeconfig: pulumi.Output[str]
    """Admin kubeconfig of the cluster, a Pulumi secret."""
    provider: k8s.Provider
    """Kubernetes provider for the cluster; its use waits for the always-on pools."""

    def __init__(self, name: str, args: KapsuleClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(KAPSULE_TOKEN, name, {}, opts)
        spec = args.spec
        cluster = self._cluster(name, spec)
        pools = {
            pool_name: self._pool(name, spec, pool_name, cluster.id, (args.extra_pool_labels or {}).get(pool_name, {}))
            for pool_name in sorted(spec.pools)
        }
        always_on = [pools[pool_name] for pool_name in spec.always_on_pools()]

        self.cluster_id = cluster.id
        self.pool_ids = {pool_name: pool.id for pool_name, pool in pools.items()}
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(cluster.kubeconfigs, *(p.id for p in always_on)).apply(
                lambda values: values[0][0]["config_file"]
            )
        )
        self.provider = k8s.Provider(
            child_name("k8s", name),
            kubeconfig=self.kubeconfig,
            opts=pulumi.ResourceOptions(parent=self, depends_on=always_on),
        )
        self.register_outputs({"cluster_id": self.cluster_id, "pool_ids": self.pool_ids, "kubeconfig": self.kubeconfig})

    def _cluster(self, name: str, spec: PlatformSpec) -> scw_k8s.Cluster:
        cluster = spec.cluster
        if cluster.existing_id:
            return scw_k8s.Cluster.get(
                child_name("cluster", name), cluster.existing_id, opts=pulumi.ResourceOptions(parent=self)
            )
        vpc = scw_network.Vpc(
            child_name("vpc", name),
            name=cluster.name,
            region=spec.region,
            tags=list(cluster.tags),
            opts=pulumi.ResourceOptions(parent=self, protect=cluster.protect),
        )
        private_network = scw_network.PrivateNetwork(
            child_name("pn", name),
            name=cluster.name,
            vpc_id=vpc.id,
            region=spec.region,
            tags=list(cluster.tags),
            ipv4_subnet=(
                scw_network.PrivateNetworkIpv4SubnetArgs(subnet=str(cluster.private_network_subnet))
                if cluster.private_network_subnet
                else None
            ),
            opts=pulumi.ResourceOptions(parent=self, protect=cluster.protect),
        )
        return scw_k8s.Cluster(
            child_name("cluster", name),
            name=cluster.name,
            description=cluster.description,
            type=cluster.type,
            version=cluster.version,
            cni=cluster.cni,
            region=spec.region,
            private_network_id=private_network.id,
            tags=list(cluster.tags),
            delete_additional_resources=False,
            # The spec's fields are named after the provider's arguments, so they pass through as they are.
            autoscaler_config=scw_k8s.ClusterAutoscalerConfigArgs(**cluster.autoscaler.model_dump()),
            auto_upgrade=(
                scw_k8s.ClusterAutoUpgradeArgs(**cluster.auto_upgrade.model_dump()) if cluster.auto_upgrade else None
            ),
            opts=pulumi.ResourceOptions(parent=self, protect=cluster.protect),
        )

    def _pool(
        self, name: str, spec: PlatformSpec, pool_name: str, cluster_id: pulumi.Input[str], extra_labels: dict[str, str]
    ) -> scw_k8s.Pool:
        pool = spec.pools[pool_name]
        is_gpu = spec.catalog[pool.node_type].is_gpu
        return scw_k8s.Pool(
            child_name(pool_name, name),
            name=pool_name,
            cluster_id=cluster_id,
            region=spec.region,
            zone=pool.zone,
            node_type=pool.node_type,
            size=pool.initial_size,
            min_size=pool.min_size,
            max_size=pool.max_size,
            autoscaling=pool.autoscaling,
            autohealing=pool.autohealing,
            container_runtime="containerd",
            root_volume_size_in_gb=spec.root_volume_gb(pool_name),
            root_volume_type=pool.root_volume_type,
            labels={**pool.labels, **extra_labels},
            taints=(
                [scw_k8s.PoolTaintArgs(key=GPU_TAINT_KEY, value=GPU_TAINT_VALUE, effect=GPU_TAINT_EFFECT)]
                if is_gpu
                else None
            ),
            wait_for_pool_ready=pool.always_on,
            opts=pulumi.ResourceOptions(
                parent=self,
                ignore_changes=["size"] if pool.autoscaling else None,
                delete_before_replace=True,
            ),
        )
