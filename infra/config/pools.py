"""`platform.pools`: Kapsule node pools, GPU sharing per pool, and what the autoscaler may do."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from infra.config.base import SpecModel

GPU_TAINT_KEY = "nvidia.com/gpu"
GPU_TAINT_VALUE = "present"
GPU_TAINT_EFFECT = "NoSchedule"
"""The taint on every GPU pool: the GPU operator's DaemonSets tolerate `nvidia.com/gpu` already, CI job
pods are given the toleration by the runner, and anything else stays off (it would keep a billed node up)."""

POOL_NAME_LABEL = "k8s.scaleway.com/pool-name"
"""The label Kapsule puts on every node with its pool's name: what job routing selects on."""


class GpuSharingSpec(SpecModel):
    """How many jobs share a pool's GPU, and how (NVIDIA device-plugin sharing)."""

    strategy: Literal["time-slicing", "mps", "none"] = "time-slicing"
    """`time-slicing` (a lone job gets the whole GPU, memory not isolated), `mps` (hard shares), `none`."""
    replicas: int | None = Field(None, ge=0)
    """Jobs per GPU; the scheduler enforces it since each job requests one `nvidia.com/gpu`."""


class PoolSpec(SpecModel):
    """One node pool. GPU pools autoscale from zero, so they cost nothing while idle."""

    node_type: str
    """A node type of the catalogue (built in, or under `node_types`), e.g. `L4-1-24G`."""
    zone: str
    """A zone of the region that sells the type (L40S: `fr-par-2` or `pl-waw-2`)."""
    min_size: int = Field(0, ge=0)
    """Nodes always up; 0 lets the pool scale to zero (it is created at this size)."""
    max_size: int = Field(1, ge=0)
    """Most nodes the autoscaler may run (at least 1 and `min_size`)."""
    autoscaling: bool = True
    """False makes a fixed pool of `min_size` nodes (then `max_size` must equal it)."""
    autohealing: bool = True
    """Kapsule replaces unhealthy nodes."""
    root_volume_size_gb: int | None = Field(None, ge=0)
    """None: 150 GB on GPU pools (CUDA images are large), 50 GB otherwise."""
    root_volume_type: str | None = None
    """Root volume type (e.g. `sbs_5k`); None: Scaleway's default."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Extra node labels (unprefixed, reconciled by Kapsule on every node of the pool)."""
    gpu_sharing: GpuSharingSpec | None = None
    """GPU pools only; None means one job per GPU."""
    cold_start_minutes: int = Field(15, ge=1)
    """Time from a pending job to a ready node when the pool is at zero (node boot, GPU driver, image pull)."""

    @property
    def always_on(self) -> bool:
        return self.min_size >= 1

    @property
    def initial_size(self) -> int:
        """Pools are created at min_size; with autoscaling the autoscaler owns the size afterwards."""
        return self.min_size

    def sharing_replicas(self) -> int:
        """Jobs that can share one GPU of this pool (1 without sharing)."""
        if self.gpu_sharing is None or self.gpu_sharing.strategy == "none" or not self.gpu_sharing.replicas:
            return 1
        return self.gpu_sharing.replicas
