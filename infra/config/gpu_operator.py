"""`platform.gpu_operator`: where Scaleway's NVIDIA GPU operator lives, and how gpu-ci hands it the sharing config.

Kapsule installs the operator (Helm, "Easy Deploy") in `kube-system` on every GPU pool; gpu-ci does not
install it. It adds one ConfigMap of device-plugin configs (one key per GPU pool) in the operator's
namespace and points the operator's existing ClusterPolicy at it, once that exists: on a new cluster the
operator comes after the first GPU pool, so a Job waits for its ClusterPolicy before the patch. Names that
are not verified on Kapsule (the ClusterPolicy's) are settings, with the chart's defaults, and a row in
docs/runbook.md.
"""

from __future__ import annotations

from pydantic import Field

from infra.config.base import DnsSubdomain, ImageReference, KubernetesNamespace, SpecModel, StrictInt

CURL_IMAGE = "curlimages/curl:8.11.1"
"""The image of gpu-ci's small API clients (the operator wait, the warm-capacity scalers): curl and a shell."""


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
    wait_minutes: StrictInt = Field(30, ge=1, le=120)
    """How long the first `up` waits for the operator's ClusterPolicy, which Kapsule installs after the first GPU
    pool is created (a Job polls for it; the patch follows)."""
    wait_image: ImageReference = CURL_IMAGE
    """Image of that Job (curl against the Kubernetes API)."""
