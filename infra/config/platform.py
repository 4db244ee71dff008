"""The platform spec: one typed, validated object that every resource and artifact is derived from.

The model of the whole spec, and what is known from it alone: which pools the profiles target, the
runner's default pool and manager pool, the stack secrets it names. `infra.config.load.load_spec(raw)` turns
the `platform` object of the stack config into a frozen `PlatformSpec` (or a `SpecError` listing every
problem); `infra.config.checks` holds its rules. Nothing here imports Pulumi.
"""

from __future__ import annotations

from functools import cached_property
from typing import Literal

from pydantic import Field

from infra.catalog import Catalog, NodeType
from infra.config.base import (
    MAX_NODE_TYPES,
    MAX_POOLS,
    MAX_PROFILES,
    SpecModel,
)
from infra.config.ci import CiSpec
from infra.config.cluster import ClusterSpec
from infra.config.gitlab import GitlabSpec
from infra.config.gpu_operator import GpuOperatorSpec
from infra.config.node_types import NodeTypeSpec, ReserveSpec, build_catalog
from infra.config.pools import PoolSpec
from infra.config.profiles import ProfileSpec
from infra.config.registry import RegistrySpec
from infra.config.runner import CACHE_ACCESS_KEY_CONFIG, CACHE_SECRET_KEY_CONFIG, RunnerSpec
from infra.config.slo import SloSpec
from infra.config.warm import WarmCapacitySpec
from infra.config.workload import WorkloadSpec

RESERVED_LABEL_PREFIXES = ("k8s.scaleway.com/", "kubernetes.io/", "k8s.io/", "node.kubernetes.io/", "nvidia.com/")
"""Label prefixes owned by Kapsule, Kubernetes or the GPU operator (or derived by gpu-ci itself)."""

MIN_ROOT_VOLUME_GB = 20
MIN_GPU_ROOT_VOLUME_GB = 100
DEFAULT_GPU_ROOT_VOLUME_GB = 150
DEFAULT_ROOT_VOLUME_GB = 50


class PlatformSpec(SpecModel):
    """Pools, profiles and the figures behind them; the runner, GitLab, CI and registry sections."""

    region: Literal["fr-par", "nl-ams", "pl-waw"] = "fr-par"
    """Scaleway region of the cluster, its private network, the registry namespace and the cache bucket."""
    cluster: ClusterSpec = ClusterSpec()
    """The Kapsule cluster (or the existing one to adopt), its network and its autoscaler."""
    allocatable_reserve: ReserveSpec = ReserveSpec()
    """What every node keeps for itself: an assumption to measure (docs/runbook.md)."""
    node_types: dict[str, NodeTypeSpec] = Field(default_factory=dict, max_length=MAX_NODE_TYPES)
    """Overrides of the built-in node catalogue by type name, or new types."""
    pools: dict[str, PoolSpec] = Field(max_length=MAX_POOLS)
    """Node pools by name: the name is Kapsule's pool name, the value of the label jobs are routed by."""
    profiles: dict[str, ProfileSpec] = Field(max_length=MAX_PROFILES)
    """Workload profiles by name: which model families run on which GPU pool, and what each job asks."""
    gpu_operator: GpuOperatorSpec = GpuOperatorSpec()
    """Where Scaleway's GPU operator lives, and how gpu-ci hands it the sharing config."""
    workload: WorkloadSpec | None = None
    """The week of CI jobs the simulation runs (cost, waits per class); None leaves it out of the report."""
    slo: SloSpec = SloSpec()
    """The feedback-time target, judged on the simulated week of the workload."""
    warm_capacity: WarmCapacitySpec = WarmCapacitySpec()
    """How the pools' warm windows are deployed: placeholder pods, their priority, the scaling CronJobs."""
    gitlab: GitlabSpec
    """The GitLab instance, the training project and the runner's scope."""
    runner: RunnerSpec = RunnerSpec()
    """The runner's own settings; its routing and limits are derived from the pools and profiles."""
    ci: CiSpec = CiSpec()
    """The CI templates committed to the training project, and its CI/CD variables."""
    registry: RegistrySpec = RegistrySpec()
    """The Container Registry namespace of the training images (its endpoint is `REGISTRY`)."""

    @cached_property
    def catalog(self) -> Catalog:
        return build_catalog(self.node_types, self.allocatable_reserve)

    def profiles_on(self, pool: str) -> list[str]:
        return sorted(name for name, profile in self.profiles.items() if profile.pool == pool)

    def pool_node(self, pool_name: str) -> NodeType | None:
        """The catalogue entry of a pool's node type; None for a missing pool or an unknown type."""
        pool = self.pools.get(pool_name)
        return self.catalog[pool.node_type] if pool is not None and pool.node_type in self.catalog else None

    def is_gpu_pool(self, pool_name: str) -> bool:
        node = self.pool_node(pool_name)
        return node is not None and node.is_gpu

    def gpu_pools(self) -> list[str]:
        return sorted(name for name in self.pools if self.is_gpu_pool(name))

    def always_on_pools(self) -> list[str]:
        return sorted(name for name, pool in self.pools.items() if pool.always_on)

    def root_volume_gb(self, pool_name: str) -> int:
        pool = self.pools[pool_name]
        if pool.root_volume_size_gb is not None:
            return pool.root_volume_size_gb
        return DEFAULT_GPU_ROOT_VOLUME_GB if self.catalog[pool.node_type].is_gpu else DEFAULT_ROOT_VOLUME_GB

    def targeted_pools(self) -> list[str]:
        """Pools that some profile sends jobs to (existing ones only), sorted."""
        return sorted({p.pool for p in self.profiles.values() if p.pool in self.pools})

    def default_pool(self) -> str | None:
        """The runner's default pool: as configured, else the cheapest pool a profile targets."""
        if self.runner.default_pool is not None:
            return self.runner.default_pool
        priced = [(node.eur_per_hour, name) for name in self.targeted_pools() if (node := self.pool_node(name))]
        return min(priced)[1] if priced else None

    def manager_pool(self) -> str | None:
        """The manager's pool: as configured, else the first always-on pool without a GPU."""
        if self.runner.manager_pool is not None:
            return self.runner.manager_pool
        for name in self.always_on_pools():
            if self.pool_node(name) is not None and not self.is_gpu_pool(name):
                return name
        return None

    def secret_config_keys(self) -> list[str]:
        """Keys (in the project's namespace, `gpu-ci:<key>`) of the stack secrets the program needs, sorted:
        `__main__.py` reads exactly these (nothing under infra/ reads config)."""
        keys = set(self.ci.secret_config_keys()) | set(self.registry.secret_config_keys())
        if self.runner.cache is not None:
            keys |= {CACHE_ACCESS_KEY_CONFIG, CACHE_SECRET_KEY_CONFIG}
        return sorted(keys)

    def warm_pools(self) -> list[str]:
        """Pools with warm windows, sorted."""
        return sorted(name for name, pool in self.pools.items() if pool.warm)
