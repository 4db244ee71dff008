"""KapsuleCluster: the private network, the Kapsule cluster (or an adopted one) and its node pools.

Fed by `platform.region`, `platform.cluster` and `platform.pools`. It also builds the Kubernetes
provider from the cluster's kubeconfig, usable only once the always-on pool(s) exist (the API
server's DNS entry is not ready before a cluster has a pool).

Safe updates: the cluster and every pool are protected; autoscaled pools ignore `size`, which the
autoscaler owns. Each pool states its upgrade policy: an always-on pool (the runner managers') gets a new
node before an old one drains (surge 1, unavailable 0), so an upgrade never leaves the managers without a
node. A pool replacement (a new node type, zone or name) would delete the old pool first,
since two pools cannot share the name that job routing selects on (`k8s.scaleway.com/pool-name`), and
its running jobs with it; on `system` it would evict the only runner manager. Protection makes
`pulumi up` refuse that: the create-before-delete path (a new pool under a new name, the profiles
moved to it, then the old one unprotected and removed) is in docs/security.md, "Safe replacements".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s
from pulumiverse_scaleway import kubernetes as scw_k8s
from pulumiverse_scaleway import network as scw_network

from infra.cloud.names import KAPSULE_TOKEN, child_name
from infra.config.cluster import ClusterSpec
from infra.model.pools import Pool


@dataclass(frozen=True)
class KapsuleClusterArgs:
    """The region, the cluster's settings and the derived pools (their labels and taints included)."""

    region: str
    cluster: ClusterSpec
    pools: Mapping[str, Pool]


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
    gpu_pools: list[scw_k8s.Pool]
    """The GPU pools, for what must wait until Kapsule has set up their GPU operator."""

    def __init__(self, name: str, args: KapsuleClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(KAPSULE_TOKEN, name, {}, opts)
        cluster = self._cluster(name, args.region, args.cluster)
        pools = {
            pool_name: self._pool(name, args.region, pool, cluster.id) for pool_name, pool in sorted(args.pools.items())
        }
        always_on = [pools[pool_name] for pool_name, pool in sorted(args.pools.items()) if pool.always_on]

        self.gpu_pools = [pools[pool_name] for pool_name, pool in sorted(args.pools.items()) if pool.is_gpu]
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

    def _cluster(self, name: str, region: str, cluster: ClusterSpec) -> scw_k8s.Cluster:
        if cluster.existing_id:
            return scw_k8s.Cluster.get(
                child_name("cluster", name), cluster.existing_id, opts=pulumi.ResourceOptions(parent=self)
            )
        vpc = scw_network.Vpc(
            child_name("vpc", name),
            name=cluster.name,
            region=region,
            tags=list(cluster.tags),
            opts=pulumi.ResourceOptions(parent=self, protect=True),  # always: deleting it loses every job
        )
        private_network = scw_network.PrivateNetwork(
            child_name("pn", name),
            name=cluster.name,
            vpc_id=vpc.id,
            region=region,
            tags=list(cluster.tags),
            ipv4_subnet=(
                scw_network.PrivateNetworkIpv4SubnetArgs(subnet=str(cluster.private_network_subnet))
                if cluster.private_network_subnet
                else None
            ),
            opts=pulumi.ResourceOptions(parent=self, protect=True),  # always: deleting it loses every job
        )
        return scw_k8s.Cluster(
            child_name("cluster", name),
            name=cluster.name,
            description=cluster.description,
            type=cluster.type,
            version=cluster.version,
            cni=cluster.cni,
            region=region,
            private_network_id=private_network.id,
            tags=list(cluster.tags),
            delete_additional_resources=False,
            # The spec's fields are named after the provider's arguments, so they pass through as they are.
            autoscaler_config=scw_k8s.ClusterAutoscalerConfigArgs(**cluster.autoscaler.model_dump()),
            auto_upgrade=(
                scw_k8s.ClusterAutoUpgradeArgs(**cluster.auto_upgrade.model_dump()) if cluster.auto_upgrade else None
            ),
            opts=pulumi.ResourceOptions(parent=self, protect=True),  # always: deleting it loses every job
        )

    def _pool(self, name: str, region: str, pool: Pool, cluster_id: pulumi.Input[str]) -> scw_k8s.Pool:
        return scw_k8s.Pool(
            child_name(pool.name, name),
            name=pool.name,
            cluster_id=cluster_id,
            region=region,
            zone=pool.zone,
            node_type=pool.node_type,
            size=pool.spec.initial_size,
            min_size=pool.min_size,
            max_size=pool.max_size,
            autoscaling=pool.spec.autoscaling,
            autohealing=pool.spec.autohealing,
            container_runtime="containerd",
            root_volume_size_in_gb=pool.root_volume_gb,
            root_volume_type=pool.spec.root_volume_type,
            labels=dict(pool.labels),
            taints=[scw_k8s.PoolTaintArgs(key=t.key, value=t.value, effect=t.effect) for t in pool.taints] or None,
            upgrade_policy=scw_k8s.PoolUpgradePolicyArgs(
                max_surge=pool.spec.effective_upgrade_policy.max_surge,
                max_unavailable=pool.spec.effective_upgrade_policy.max_unavailable,
            ),
            wait_for_pool_ready=pool.always_on,
            opts=pulumi.ResourceOptions(
                parent=self,
                ignore_changes=["size"] if pool.spec.autoscaling else None,
                delete_before_replace=True,
                protect=True,  # a replace or delete loses the pool's running jobs: docs/security.md
            ),
        )
