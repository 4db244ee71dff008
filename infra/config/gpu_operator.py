"""`platform.gpu_operator`: where Scaleway's NVIDIA GPU operator lives, and how gpu-ci hands it the sharing config.

Kapsule installs the operator (Helm, "Easy Deploy") in `kube-system` on every GPU pool; gpu-ci does not
install it. It adds one ConfigMap of device-plugin configs (one key per GPU pool) in the operator's
namespace and points the operator's existing ClusterPolicy at it. Names that are not verified on Kapsule
(the ClusterPolicy's) are settings, with the chart's defaults, and a row in docs/runbook.md.
"""

from __future__ import annotations

from infra.config.base import DnsSubdomain, KubernetesNamespace, SpecModel


class GpuOperatorSpec(SpecModel):
    """The GPU operator's namespace and ClusterPolicy, and the ConfigMap gpu-ci writes for it."""

    namespace: KubernetesNamespace = "kube-system"
    """The operator's namespace: the device-plugin ConfigMap must live there (Kapsule: kube-system)."""
    cluster_policy: DnsSubdomain = "cluster-policy"
    """Name of the operator's ClusterPolicy (the chart's default; unverified on Kapsule: see the runbook)."""
    config_map: DnsSubdomain = "gpu-ci-device-plugin-config"
    """Name of the ConfigMap of device-plugin configs (one key per GPU pool)."""
    patch_cluster_policy: bool = True
    """False: gpu-ci writes the ConfigMap but leaves the ClusterPolicy alone (set its devicePlugin.config
    through Easy Deploy instead, with the values of the `cluster-policy-patch.json` artifact)."""
