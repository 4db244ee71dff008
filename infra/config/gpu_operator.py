"""`platform.gpu_operator`: where Scaleway's NVIDIA GPU operator lives, and how gpu-ci hands it the sharing config.

Kapsule installs the operator (Helm, "Easy Deploy") in `kube-system` on every GPU pool; gpu-ci does not
install it. It adds one ConfigMap of device-plugin configs (one key per GPU pool) in the operator's
namespace and points the operator's existing ClusterPolicy at it. Names that are not verified on Kapsule
(the ClusterPolicy's) are settings, with the chart's defaults, and a row in the README's runbook.
"""

from __future__ import annotations

from pydantic import field_validator

from infra.config.base import DNS_SUBDOMAIN, SpecModel, is_dns_label


class GpuOperatorSpec(SpecModel):
    """The GPU operator's namespace and ClusterPolicy, and the ConfigMap gpu-ci writes for it."""

    namespace: str = "kube-system"
    """The operator's namespace: the device-plugin ConfigMap must live there (Kapsule: kube-system)."""
    cluster_policy: str = "cluster-policy"
    """Name of the operator's ClusterPolicy (the chart's default; unverified on Kapsule: see the runbook)."""
    config_map: str = "gpu-ci-device-plugin-config"
    """Name of the ConfigMap of device-plugin configs (one key per GPU pool)."""
    patch_cluster_policy: bool = True
    """False: gpu-ci writes the ConfigMap but leaves the ClusterPolicy alone (set its devicePlugin.config
    through Easy Deploy instead, with the values of the `cluster-policy-patch.json` artifact)."""

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        if not is_dns_label(value):
            raise ValueError("not a Kubernetes namespace name (a-z, 0-9 and '-', at most 63)")
        return value

    @field_validator("cluster_policy", "config_map")
    @classmethod
    def _object_name(cls, value: str) -> str:
        if len(value) > 253 or not DNS_SUBDOMAIN.fullmatch(value):
            raise ValueError("not a Kubernetes object name (a DNS subdomain: a-z, 0-9, '-' and '.')")
        return value
