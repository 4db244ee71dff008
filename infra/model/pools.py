"""A pool as the platform uses it (pure): its node, its GPU sharing, **how many jobs a node takes and its job
slots**, its labels and taints, and the runner that sends it jobs.

Jobs per node is the tightest fit over the profiles routed to the pool (`infra.capacity.profile_fit`: GPU
sharing replicas, then the node's allocatable CPU and memory by the jobs' requests); a pool's job slots are
jobs per node x `max_size`, which is what its runner's `concurrent` is (`infra.model.runners`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from infra.capacity import ProfileFit, gpu_memory_per_replica_gb
from infra.catalog import NodeType
from infra.config.platform import PlatformSpec
from infra.config.pools import GPU_TAINT_EFFECT, GPU_TAINT_KEY, GPU_TAINT_VALUE, GpuSharing, PoolSpec

DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
"""Node label the GPU operator's config-manager reads to pick a key of the device-plugin ConfigMap."""


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


GPU_TAINT = Taint(GPU_TAINT_KEY, GPU_TAINT_VALUE, GPU_TAINT_EFFECT)


@dataclass(frozen=True)
class Pool:
    """One node pool as the platform uses it."""

    name: str
    spec: PoolSpec
    node: NodeType
    profiles: tuple[str, ...]
    """Profiles routed here, sorted."""
    jobs_per_node: int
    """Jobs one node holds: the tightest of GPU slots, CPU and memory over its profiles (0: no CI jobs)."""
    binding: str
    """What sets `jobs_per_node` ("GPU replicas", "GPU replicas = CPU", or why there are no jobs)."""
    root_volume_gb: int
    labels: Mapping[str, str]
    """Node labels: the spec's, plus the device-plugin config key on GPU pools."""
    taints: tuple[Taint, ...]
    runner: str | None
    """Name of the runner that sends jobs here (None: no profile targets the pool)."""

    @property
    def node_type(self) -> str:
        return self.spec.node_type

    @property
    def zone(self) -> str:
        return self.spec.zone

    @property
    def min_size(self) -> int:
        return self.spec.min_size

    @property
    def max_size(self) -> int:
        return self.spec.max_size

    @property
    def cold_start_minutes(self) -> int:
        """The median boot (every boot, without the optional figures)."""
        return self.spec.cold_start_minutes

    @property
    def worst_cold_start_minutes(self) -> int:
        """The slowest boot its figures say (max, else p90, else median): what `poll_timeout` must outlast."""
        return self.spec.worst_cold_start_minutes

    @property
    def lead_cold_start_minutes(self) -> int:
        """How early warm capacity is started so that its nodes are ready at `from` in 9 boots of 10: the p90,
        else the median."""
        return self.spec.cold_start_p90_minutes or self.spec.cold_start_minutes

    @property
    def sharing(self) -> GpuSharing:
        return self.spec.gpu_sharing

    @property
    def is_gpu(self) -> bool:
        return self.node.is_gpu

    @property
    def always_on(self) -> bool:
        return self.spec.always_on

    @property
    def slots(self) -> int:
        """Jobs the pool runs at once at max_size: what its runner's `concurrent` is."""
        return self.jobs_per_node * self.spec.max_size

    @property
    def gpu_memory_per_job_gb(self) -> Fraction:
        """One job's share of its GPU's memory: enforced under MPS, nominal under time-slicing."""
        return gpu_memory_per_replica_gb(self.spec, self.node)

    @property
    def device_plugin_key(self) -> str | None:
        """The pool's key in the device-plugin ConfigMap (= its nodes' config label), GPU pools only."""
        return self.name if self.is_gpu else None

    @property
    def eur_per_hour(self) -> Fraction:
        return self.node.eur_per_hour

    @property
    def idle_eur_per_hour(self) -> Fraction:
        """What the pool costs with no job running: its min_size nodes (zero for scale-to-zero pools)."""
        return self.node.eur_per_hour * self.spec.min_size


def derive_pool(spec: PlatformSpec, name: str, fits: list[ProfileFit]) -> Pool:
    """The pool `name`, its jobs per node the tightest of its profiles' `fits` (0 without a profile)."""
    pool = spec.pools[name]
    node = spec.catalog[pool.node_type]
    if fits:
        tightest = min(fits, key=lambda f: f.jobs_per_node)
        jobs, binding = tightest.jobs_per_node, tightest.binding
    else:
        jobs, binding = 0, "no profile routed here" if node.is_gpu else "no CI jobs (system pool)"
    labels = dict(pool.labels)
    if node.is_gpu:
        labels[DEVICE_PLUGIN_CONFIG_LABEL] = name
    return Pool(
        name=name,
        spec=pool,
        node=node,
        profiles=tuple(f.profile for f in fits),
        jobs_per_node=jobs,
        binding=binding,
        root_volume_gb=spec.root_volume_gb(name),
        labels=labels,
        taints=(GPU_TAINT,) if node.is_gpu else (),
        runner=name if fits and node.is_gpu else None,
    )
