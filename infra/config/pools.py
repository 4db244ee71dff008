"""`platform.pools`: Kapsule node pools, GPU sharing per pool, and what the autoscaler may do."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from infra.config.base import (
    MAX_COLD_START_MINUTES,
    MAX_LIST,
    MAX_POOL_NODES,
    MAX_ROOT_VOLUME_GB,
    SpecModel,
    StrictInt,
)

MAX_SHARING_REPLICAS = 64
"""Jobs per GPU at most (time-slicing has no NVIDIA limit; MPS stops at 48, checked separately)."""

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
    replicas: StrictInt | None = Field(None, ge=0, le=MAX_SHARING_REPLICAS)
    """Jobs per GPU; the scheduler enforces it since each job requests one `nvidia.com/gpu`."""


class PoolSpec(SpecModel):
    """One node pool. GPU pools autoscale from zero, so they cost nothing while idle."""

    node_type: str = Field(max_length=64)
    zone: str = Field(max_length=32)
    min_size: StrictInt = Field(0, ge=0, le=MAX_POOL_NODES)
    max_size: StrictInt = Field(1, ge=0, le=MAX_POOL_NODES)
    autoscaling: bool = True
    """False makes a fixed pool of `min_size` nodes (then `max_size` must equal it)."""
    autohealing: bool = True
    root_volume_size_gb: StrictInt | None = Field(None, ge=0, le=MAX_ROOT_VOLUME_GB)
    """None: 150 GB on GPU pools (CUDA images are large), 50 GB otherwise."""
    root_volume_type: str | None = Field(None, max_length=64)
    labels: dict[str, str] = Field(default_factory=dict, max_length=MAX_LIST)
    """Extra node labels (unprefixed, reconciled by Kapsule on every node of the pool)."""
    gpu_sharing: GpuSharingSpec | None = None
    """GPU pools only; None means one job per GPU."""
    cold_start_minutes: StrictInt = Field(15, ge=1, le=MAX_COLD_START_MINUTES)
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
