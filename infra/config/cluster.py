"""`platform.cluster`: the Kapsule cluster, its network and its autoscaler."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from infra.config.base import MAX_LIST, MAX_WAIT_SECONDS, Duration, PrivateCidr, SpecModel, StrictFloat, StrictInt

_VERSION = re.compile(r"[0-9]{1,3}\.[0-9]{1,3}(\.[0-9]{1,3})?")
"""ASCII digits only (`\\d` takes `١.٣٥`, Arabic-Indic digits, which Kapsule does not)."""
_EXISTING_ID = re.compile(r"(fr-par|nl-ams|pl-waw)/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TAG = re.compile(r"[^\s,]{1,128}")

Weekday = Literal["any", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


class AutoscalerSpec(SpecModel):
    """Cluster-autoscaler settings. GPU minutes are billed, so the defaults scale down soon after jobs end."""

    scale_down_unneeded_time: Duration = "5m"
    """How long a node must be unneeded before removal (API default 10m): billed minutes after each burst, or a
    node kept for the next job; one for every pool (`recommend` searches it)."""
    scale_down_delay_after_add: Duration = "5m"
    """Pause before scale-down is considered again after a scale-up (API default 10m)."""
    scale_down_utilization_threshold: StrictFloat = Field(0.5, gt=0, le=1)
    """A node using less than this share of its CPU and memory may be removed."""
    expander: Literal["random", "most_pods", "least_waste", "priority", "price"] = "least_waste"
    """How the autoscaler picks the pool to grow when several could take a pending pod."""
    ignore_daemonsets_utilization: bool = True
    """GPU operator DaemonSets sit on every GPU node; they must not keep it up."""
    balance_similar_node_groups: bool = False
    """Keep similar pools at the same size."""
    expendable_pods_priority_cutoff: StrictInt = Field(0, ge=-(2**31), le=2**31 - 1)
    """A Kubernetes pod priority: an int32."""
    max_graceful_termination_sec: StrictInt = Field(600, ge=0, le=MAX_WAIT_SECONDS)
    """Longest a pod may take to terminate when its node is scaled down."""


class AutoUpgradeSpec(SpecModel):
    """Patch-version auto upgrades in a weekly 2-hour window (needs a minor `version`, e.g. 1.35)."""

    enable: bool = True
    """Turn Scaleway's automatic patch upgrades on."""
    maintenance_window_day: Weekday = "sunday"
    """Day of the weekly upgrade window (`any`: every day)."""
    maintenance_window_start_hour: StrictInt = Field(3, ge=0, le=23)
    """Hour the window starts (UTC)."""


class ClusterSpec(SpecModel):
    """The Kapsule cluster, or the id of an existing one to adopt."""

    name: str = Field("gpu-ci", max_length=63)
    """Name of the cluster, and of its VPC and private network."""
    version: str = "1.36"
    """Kubernetes version; a minor version (`1.36`) when `auto_upgrade` is on. Checked on the day of the run against
    Scaleway's withdrawal dates (`infra/kubernetes_versions.py`): refused once no cluster can be created at it."""
    cni: Literal["cilium", "calico", "kilo", "none"] = "cilium"
    """Container network; changing it replaces the cluster (protected: Pulumi refuses)."""
    type: Literal["kapsule", "kapsule-dedicated-4", "kapsule-dedicated-8", "kapsule-dedicated-16"] = "kapsule"
    """`kapsule`: the free, mutualized control plane; `kapsule-dedicated-*`: a dedicated, billed one."""
    description: str = Field("GPU CI platform (GitLab runner + GPU pools), managed by Pulumi", max_length=255)
    """The cluster's description on Scaleway."""
    tags: tuple[str, ...] = Field(("gpu-ci", "managed-by-pulumi"), max_length=MAX_LIST)
    """Scaleway tags of the cluster, its VPC and its private network."""
    existing_id: str | None = None
    """Adopt this cluster (`<region>/<uuid>`) instead of creating one; pools are still created in it."""
    private_network_subnet: PrivateCidr | None = None
    """IPv4 subnet of the private network (CIDR); None lets Scaleway pick one."""
    autoscaler: AutoscalerSpec = AutoscalerSpec()
    """Cluster-autoscaler settings, for every autoscaled pool."""
    auto_upgrade: AutoUpgradeSpec | None = None
    """Scaleway's patch upgrades in a weekly window; None: no automatic upgrade."""

    @field_validator("version")
    @classmethod
    def _version(cls, value: str) -> str:
        if not _VERSION.fullmatch(value):
            raise ValueError("not a Kubernetes version like 1.35 or 1.35.3")
        return value

    @field_validator("existing_id")
    @classmethod
    def _existing_id(cls, value: str | None) -> str | None:
        if value is not None and not _EXISTING_ID.fullmatch(value):
            raise ValueError("not a Kapsule cluster id like fr-par/11111111-2222-3333-4444-555555555555")
        return value

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for tag in value:
            if not _TAG.fullmatch(tag):
                raise ValueError(f"tag {tag[:64]!r} must be 1-128 characters without spaces or commas")
        return value
