"""`platform.warm_capacity`: how the pools' warm windows (`pools.<p>.warm`) are deployed.

The cluster-autoscaler's overprovisioning pattern: per pool with warm windows, a Deployment of placeholder
pods (the `pause` image, one per node by anti-affinity, each asking one `nvidia.com/gpu` replica so that the
autoscaler sees the GPU node as needed), scaled up before each window and down at its end by CronJobs
(`timeZone`: `workload.time_zone`) that patch its `scale` subresource, and nothing else. The placeholders'
PriorityClass is at or above the autoscaler's `expendable_pods_priority_cutoff` (below it a pod is expendable:
it triggers no scale-up and keeps no node) and below the job pods' PriorityClass (set in the runners' config),
so a job preempts a placeholder whenever it needs its slot. gpu-ci's runners are pinned to gitlab-runner 18.9
(chart 0.86.0), whose own pause pods (runner 18.11+) reserve no GPU and warm only a runner's fixed pool.
"""

from __future__ import annotations

from pydantic import Field

from infra.config.base import ImageReference, KubernetesNamespace, SpecModel, StrictInt
from infra.config.gpu_operator import CURL_IMAGE

MAX_PRIORITY = 1_000_000_000
"""Kubernetes' highest value of a user PriorityClass (above it: system classes only)."""


class WarmCapacitySpec(SpecModel):
    """Where the placeholders live, their priority against the jobs', and the two images they use."""

    namespace: KubernetesNamespace = "gpu-ci-warm"
    """Namespace of the placeholder Deployments and their scaling CronJobs (its own: Pod Security
    `restricted`, default-deny network policies; the scalers reach the Kubernetes API only)."""
    placeholder_priority: StrictInt = Field(0, ge=-MAX_PRIORITY, le=MAX_PRIORITY)
    """Priority of the placeholder pods: at or above `cluster.autoscaler.expendable_pods_priority_cutoff`
    (else the autoscaler ignores them: no warm node) and below `job_priority`."""
    job_priority: StrictInt = Field(1000, ge=-MAX_PRIORITY, le=MAX_PRIORITY)
    """Priority of the CI job pods of pools with warm windows (the runners' `priority_class_name`): above the
    placeholders', so a job preempts one."""
    pause_image: ImageReference = "registry.k8s.io/pause:3.10"
    """Image of the placeholder pods (they only hold a slot)."""
    scaler_image: ImageReference = CURL_IMAGE
    """Image of the CronJobs that scale the placeholders (curl against the Kubernetes API)."""
