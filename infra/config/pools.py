"""`platform.pools`: Kapsule node pools, GPU sharing per pool, and what the autoscaler may do."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from infra.config.base import (
    MAX_COLD_START_MINUTES,
    MAX_LIST,
    MAX_POOL_NODES,
    MAX_ROOT_VOLUME_GB,
    SpecModel,
    StrictInt,
)
from infra.config.schedule import WindowSpec

GPU_TAINT_KEY = "nvidia.com/gpu"
GPU_TAINT_VALUE = "present"
GPU_TAINT_EFFECT = "NoSchedule"
"""The taint on every GPU pool: the GPU operator's DaemonSets tolerate `nvidia.com/gpu` already, CI job
pods are given the toleration by the runner, and anything else stays off (it would keep a billed node up)."""

POOL_NAME_LABEL = "k8s.scaleway.com/pool-name"
"""The label Kapsule puts on every node with its pool's name: what job routing selects on."""


MAX_TIME_SLICING_REPLICAS = 16
"""Time-slicing shares compute and memory with no isolation: past 16 jobs per GPU each gets too little to train."""
MAX_MPS_REPLICAS = 48
"""NVIDIA's limit on MPS clients per GPU for Volta and newer (L4, L40S, H100): gpu-operator docs, MPS limitations."""


def _replicas_in_range(value: int, strategy: str, most: int) -> int:
    if value < 2:
        raise ValueError(f"{strategy} needs >= 2 replicas (use strategy 'none' for one job per GPU)")
    if value > most:
        why = "NVIDIA GPU operator limit" if strategy == "mps" else "each job would get too little of the GPU"
        name = "MPS" if strategy == "mps" else strategy
        raise ValueError(f"{name} allows at most {most} replicas per GPU ({why})")
    return value


class NoSharing(SpecModel):
    """One job per GPU: the job has the whole GPU, compute and memory."""

    strategy: Literal["none"]
    """`none`: one job per GPU."""

    replicas_per_gpu: ClassVar[int] = 1
    plugin_section: ClassVar[str | None] = None
    """The device plugin's `sharing.<section>` (None: no sharing section)."""
    isolates_memory: ClassVar[bool] = True
    caps_compute: ClassVar[bool] = False
    """Whether each job is held to 1/replicas of the GPU's compute even when alone (MPS)."""
    shares_host_ipc: ClassVar[bool] = False
    """Whether its jobs share the node's IPC: the MPS daemon's pipe directory and a node-wide `/dev/shm`, which
    NVIDIA's device plugin mounts into every client (MPS)."""

    @property
    def label(self) -> str:
        return "none"


class TimeSlicing(SpecModel):
    """`replicas` jobs take turns on the GPU: a job alone gets all of it; memory is not isolated."""

    strategy: Literal["time-slicing"]
    """`time-slicing`: a lone job gets the whole GPU; memory is not isolated."""
    replicas: int = Field(strict=True)
    """Jobs per GPU, 2-16; the scheduler enforces it since each job requests one `nvidia.com/gpu`."""

    @field_validator("replicas")
    @classmethod
    def _replicas(cls, value: int) -> int:
        return _replicas_in_range(value, "time-slicing", MAX_TIME_SLICING_REPLICAS)

    plugin_section: ClassVar[str | None] = "timeSlicing"
    isolates_memory: ClassVar[bool] = False
    caps_compute: ClassVar[bool] = False
    shares_host_ipc: ClassVar[bool] = False

    @property
    def replicas_per_gpu(self) -> int:
        return self.replicas

    @property
    def label(self) -> str:
        return f"time-slicing x{self.replicas}"


class Mps(SpecModel):
    """`replicas` MPS clients per GPU: each capped at 1/replicas of the compute and of the memory."""

    strategy: Literal["mps"]
    """`mps`: each job is held to 1/replicas of the GPU's compute and memory, even alone."""
    replicas: int = Field(strict=True)
    """Jobs per GPU, 2-48 (NVIDIA allows at most 48 MPS clients per GPU)."""

    @field_validator("replicas")
    @classmethod
    def _replicas(cls, value: int) -> int:
        return _replicas_in_range(value, "mps", MAX_MPS_REPLICAS)

    plugin_section: ClassVar[str | None] = "mps"
    isolates_memory: ClassVar[bool] = True
    caps_compute: ClassVar[bool] = True
    shares_host_ipc: ClassVar[bool] = True

    @property
    def replicas_per_gpu(self) -> int:
        return self.replicas

    @property
    def label(self) -> str:
        return f"mps x{self.replicas}"


GpuSharing = Annotated[NoSharing | TimeSlicing | Mps, Field(discriminator="strategy")]
"""How jobs share a pool's GPU: a tagged union on `strategy`, read in one place (the variant's attributes)."""
NO_SHARING = NoSharing(strategy="none")


class WarmWindowSpec(WindowSpec):
    """Hours in which placeholder pods keep some of the pool's nodes up."""

    nodes: StrictInt = Field(1, ge=1, le=MAX_POOL_NODES)
    """Nodes kept up (at most the pool's max_size)."""


class UpgradePolicySpec(SpecModel):
    """How Kapsule replaces the pool's nodes in an upgrade: new nodes first (surge), or old ones first."""

    max_surge: StrictInt = Field(ge=0, le=MAX_POOL_NODES)
    """Nodes created beyond the pool's size during the upgrade (billed while they run)."""
    max_unavailable: StrictInt = Field(ge=0, le=MAX_POOL_NODES)
    """Nodes drained at once: on a pool whose every node holds a runner manager, 1 of 1 evicts them all together."""

    @model_validator(mode="after")
    def _moves(self) -> UpgradePolicySpec:
        if self.max_surge == 0 and self.max_unavailable == 0:
            raise ValueError("max_surge=0 and max_unavailable=0: the upgrade could replace no node (give one of them)")
        return self


SURGE_FIRST = UpgradePolicySpec(max_surge=1, max_unavailable=0)
"""An always-on pool's default: a new node is up before an old one drains, so its pods always have a place."""
DRAIN_FIRST = UpgradePolicySpec(max_surge=0, max_unavailable=1)
"""A scale-to-zero pool's default (the provider's own): no extra GPU node (billed, and out of stock at
times); at zero nodes an upgrade touches nothing."""


class PoolSpec(SpecModel):
    """One node pool. GPU pools autoscale from zero, so they cost nothing while idle."""

    node_type: str = Field(max_length=64)
    """A node type of the catalogue (built in, or under `node_types`), e.g. `L4-1-24G`."""
    zone: str = Field(max_length=32)
    """A zone of the region that sells the type (L40S: `fr-par-2` or `pl-waw-2`)."""
    min_size: StrictInt = Field(0, ge=0, le=MAX_POOL_NODES)
    """Nodes always up; 0 lets the pool scale to zero (it is created at this size)."""
    max_size: StrictInt = Field(1, ge=0, le=MAX_POOL_NODES)
    """Most nodes the autoscaler may run (at least 1 and `min_size`)."""
    autoscaling: bool = True
    """False makes a fixed pool of `min_size` nodes (then `max_size` must equal it)."""
    autohealing: bool = True
    """Kapsule replaces unhealthy nodes."""
    root_volume_size_gb: StrictInt | None = Field(None, ge=0, le=MAX_ROOT_VOLUME_GB)
    """None: 150 GB on GPU pools (CUDA images are large), 50 GB otherwise."""
    root_volume_type: str | None = Field(None, max_length=64)
    """Root volume type (e.g. `sbs_5k`); None: Scaleway's default."""
    labels: dict[str, str] = Field(default_factory=dict, max_length=MAX_LIST)
    """Extra node labels (unprefixed, reconciled by Kapsule on every node of the pool)."""
    gpu_sharing: GpuSharing = NO_SHARING
    """GPU pools only: `{strategy: none}` (the default), `{strategy: time-slicing, replicas: N}` (2-16) or
    `{strategy: mps, replicas: N}` (2-48)."""
    cold_start_minutes: StrictInt = Field(15, ge=1, le=MAX_COLD_START_MINUTES)
    """Time from a pending job to a ready node when the pool is at zero (node boot, GPU driver, image pull): the
    median of the boots measured (`workload --from-gitlab`), or an estimate. Alone, every boot takes it."""
    cold_start_p90_minutes: StrictInt | None = Field(None, ge=1, le=MAX_COLD_START_MINUTES)
    """The p90 of the boots measured (>= the median): the simulation then draws each scale-up's boot
    log-normally through the median and the p90, cut at `cold_start_max_minutes` (else at the draw's p99)."""
    cold_start_max_minutes: StrictInt | None = Field(None, ge=1, le=MAX_COLD_START_MINUTES)
    """The slowest boot seen (>= the p90, or the median): the cut of the draw, and with the p90 (else the median)
    the worst figure the pool's `poll_timeout` and the outage it survives are derived from."""
    merge_request_slots: StrictInt = Field(0, ge=0, le=MAX_POOL_NODES * 64)
    """Job slots held for merge-request jobs: batch jobs never take them, merge-request jobs take any free
    slot. A second runner of the pool holds them (its `concurrent`); the two add up to the pool's slots."""
    upgrade_policy: UpgradePolicySpec | None = None
    """How an upgrade replaces the nodes; None: surge 1, unavailable 0 on an always-on pool (its pods, the runner
    managers, always have a node), surge 0, unavailable 1 on a scale-to-zero pool."""
    warm: tuple[WarmWindowSpec, ...] = Field((), max_length=MAX_LIST)
    """Warm capacity: `[{days: Mon-Fri, from: "08:00", to: "19:00", nodes: 1}]` keeps that many nodes up in
    those hours (ready at `from`: started a cold start earlier), so the first job of the day does not wait
    for a node. Consecutive windows change the count through the day (`08:00-10:00` 1 node, `10:00-12:00` 3,
    `12:00-19:00` 2: each rise a cold start early, each fall at its time); each hour is given once. Billed while
    up; in `workload.time_zone`."""

    @property
    def always_on(self) -> bool:
        return self.min_size >= 1

    @property
    def effective_upgrade_policy(self) -> UpgradePolicySpec:
        """As set, else surge-first on an always-on pool and drain-first on a scale-to-zero one."""
        if self.upgrade_policy is not None:
            return self.upgrade_policy
        return SURGE_FIRST if self.always_on else DRAIN_FIRST

    @property
    def worst_cold_start_minutes(self) -> int:
        """The slowest boot the pool's figures say: its max, else its p90, else its median."""
        return self.cold_start_max_minutes or self.cold_start_p90_minutes or self.cold_start_minutes

    @property
    def initial_size(self) -> int:
        """Pools are created at min_size; with autoscaling the autoscaler owns the size afterwards."""
        return self.min_size
