"""The Kapsule cluster and its pools: GPU pools scale to zero, carry the GPU taint and name a device-plugin
config that exists (a stack rule), and neither the cluster nor a pool is deleted by a `pulumi up`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs, StackValidationArgs

from . import definitions
from .inputs import as_list, config_list, config_value, known, physical_name, show

# Resource type tokens (each with the deprecated flat token of the same resource, in case a stack uses it).
POOL_TYPES = frozenset({"scaleway:kubernetes/pool:Pool", "scaleway:index/kubernetesNodePool:KubernetesNodePool"})
CLUSTER_TYPES = frozenset({"scaleway:kubernetes/cluster:Cluster", "scaleway:index/kubernetesCluster:KubernetesCluster"})
CONFIG_MAP_TYPE = "kubernetes:core/v1:ConfigMap"
CLUSTER_POLICY_TYPES = frozenset(
    {"kubernetes:nvidia.com/v1:ClusterPolicy", "kubernetes:nvidia.com/v1:ClusterPolicyPatch"}
)

# What gpu-ci puts on GPU pools (infra/config/pools.py, infra/render/device_plugin.py: a test keeps them equal).
GPU_TAINT_KEY = "nvidia.com/gpu"
GPU_TAINT_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
"""Effects that keep other pods off (PreferNoSchedule does not: such a pod keeps a billed GPU node up)."""
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
DEFAULT_DEVICE_PLUGIN_CONFIG_MAP = "gpu-ci-device-plugin-config"
DEFAULT_GPU_NODE_TYPE_PATTERN = r"^(L4|L40S|H100|H200|B200|B300|GB200|GPU|RENDER)[-_]"
"""Scaleway's GPU node types (L4-1-24G, L40S-1-48G, H100-SXM-2-80G, B300-SXM-2-288G, RENDER-S, GPU-3070-S),
matched case-insensitively with `_` read as `-`; a pool carrying the `nvidia.com/gpu` taint counts too."""


# ---------------------------------------------------------------------------------------------------------
# GPU pools


def is_gpu_pool(props: Mapping[str, Any], pattern: str = DEFAULT_GPU_NODE_TYPE_PATTERN) -> bool:
    """A pool of GPU nodes: its node type is a GPU type, or it carries the `nvidia.com/gpu` taint."""
    node_type = known(props, "nodeType")
    if isinstance(node_type, str) and re.search(pattern, node_type.upper().replace("_", "-"), re.IGNORECASE):
        return True
    return any(known(taint, "key") == GPU_TAINT_KEY for taint in as_list(known(props, "taints")))


def _gpu_pool(args: ResourceValidationArgs) -> bool:
    if args.resource_type not in POOL_TYPES:
        return False
    return is_gpu_pool(args.props, str(config_value(args, "gpu_node_type_pattern", DEFAULT_GPU_NODE_TYPE_PATTERN)))


def _pool_label(args: ResourceValidationArgs) -> str:
    return f"GPU pool '{physical_name(args)}' ({known(args.props, 'nodeType') or 'tainted nvidia.com/gpu'})"


def gpu_pool_scales_to_zero(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """A GPU pool autoscales from zero and Pulumi leaves its size to the autoscaler.

    Why: an idle GPU node bills by the minute (L40S 1.47 EUR/h); and a `pulumi up` that writes `size`
    would fight the autoscaler, adding or removing nodes under running jobs.
    """
    if not _gpu_pool(args):
        return
    label, props, name = _pool_label(args), args.props, physical_name(args)
    if props.get("autoscaling") is not True:
        report_violation(
            f"{label}: autoscaling={show(props.get('autoscaling'))}: a GPU pool must autoscale so that idle "
            f"GPU nodes are removed (gpu-ci: platform.pools.{name}.autoscaling: true)",
            None,
        )
    min_size = props.get("minSize")
    if definitions.keeps_gpu_nodes_up(min_size, name, config_list(args, "always_on_pools")):
        report_violation(
            f"{label}: minSize={show(min_size)}: a GPU pool must scale to zero (minSize 0) so that it costs "
            f"nothing while no job runs (gpu-ci: platform.pools.{name}.min_size: 0), or list the pool in this "
            "policy's always_on_pools",
            None,
        )
    if "size" not in (args.opts.ignore_changes or []):
        report_violation(
            f"{label}: ignoreChanges={list(args.opts.ignore_changes or [])}: 'size' must be ignored, the "
            "autoscaler owns it; otherwise `pulumi up` resizes the pool under running jobs",
            None,
        )


def gpu_pool_taint_and_config_label(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """A GPU pool carries the `nvidia.com/gpu` NoSchedule taint and the device-plugin config label.

    Why: without the taint any pod may land on a GPU node and keep it (and its bill) up; without the label
    the device plugin does not apply the pool's GPU sharing, so fewer jobs fit than the runner sends.
    """
    if not _gpu_pool(args):
        return
    label, props = _pool_label(args), args.props
    taints = [t for t in as_list(props.get("taints")) if isinstance(t, Mapping) and t.get("key") == GPU_TAINT_KEY]
    if not any(t.get("effect") in GPU_TAINT_EFFECTS for t in taints):
        shown = [f"{t.get('key')}={t.get('value')}:{t.get('effect')}" for t in taints] or "none"
        report_violation(
            f"{label}: {GPU_TAINT_KEY} taint={shown}: a GPU pool must be tainted {GPU_TAINT_KEY}:NoSchedule "
            "so that only CI jobs (which tolerate it) and the GPU operator run there",
            None,
        )
    labels = props.get("labels")
    value = labels.get(DEVICE_PLUGIN_CONFIG_LABEL) if isinstance(labels, Mapping) else None
    if not value:
        report_violation(
            f"{label}: label {DEVICE_PLUGIN_CONFIG_LABEL}={show(value)}: a GPU pool must name its "
            "device-plugin config, or its nodes get the default (one job per GPU)",
            None,
        )


# ---------------------------------------------------------------------------------------------------------
# The cluster, and every pool


def kapsule_cluster_protected(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """The Kapsule cluster is protected: deleting it (a replacement, a removed line) deletes every pool and job."""
    if args.resource_type not in CLUSTER_TYPES:
        return
    if not args.props:  # Cluster.get(...) of an adopted cluster: read, not managed, nothing to protect
        args.not_applicable("read, not managed by this stack")
    if not args.opts.protect:
        report_violation(
            f"Kapsule cluster '{physical_name(args)}': protect={args.opts.protect}: the cluster must be protected so "
            "that no `pulumi up` or `destroy` deletes it (gpu-ci protects it always: see docs/security.md)",
            None,
        )


def kapsule_pool_protected(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Every Kapsule pool is protected: a replacement (node type, zone) deletes it first, with its jobs.

    Why: a pool's replacement is delete-then-create (one pool name, the one job routing selects on), so
    its running jobs are lost; on `system` it evicts the only runner manager.
    """
    if args.resource_type not in POOL_TYPES or not args.props:
        return
    if not args.opts.protect:
        report_violation(
            f"Kapsule pool '{physical_name(args)}': protect={args.opts.protect}: pools must be protected; a node-type "
            "change goes through a new pool (docs/security.md, 'Safe replacements')",
            None,
        )


# ---------------------------------------------------------------------------------------------------------
# Stack: the device-plugin configs the GPU pools select exist


def gpu_pool_config_exists(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Each GPU pool's `nvidia.com/device-plugin.config` label names a key of the device-plugin ConfigMap.

    Why: a node whose label names a missing key gets no usable plugin config: its GPU is not shared as
    the runner and the capacity plan assume, or not advertised at all.
    """
    config_map = DEFAULT_DEVICE_PLUGIN_CONFIG_MAP
    for resource in args.resources:
        if resource.resource_type in CLUSTER_POLICY_TYPES:
            config_map = known(resource.props, "spec", "devicePlugin", "config", "name") or config_map
    config_map = str(config_value(args, "config_map", config_map))
    maps = [
        r
        for r in args.resources
        if r.resource_type == CONFIG_MAP_TYPE and known(r.props, "metadata", "name") == config_map
    ]
    if not maps and any(r.resource_type == CONFIG_MAP_TYPE and not known(r.props, "metadata") for r in args.resources):
        # A ConfigMap whose state is not known yet: in a preview before its cluster exists the engine hides the
        # state of every resource whose provider it cannot configure (a kubeconfig still unknown). Not judged.
        return
    keys = {key for r in maps for key in (known(r.props, "data") or {})}
    pattern = str(config_value(args, "gpu_node_type_pattern", DEFAULT_GPU_NODE_TYPE_PATTERN))
    for pool in args.resources:
        if pool.resource_type not in POOL_TYPES or not is_gpu_pool(pool.props, pattern):
            continue
        selected = known(pool.props, "labels", DEVICE_PLUGIN_CONFIG_LABEL)
        if selected is None or selected in keys:
            continue  # an unlabelled GPU pool is the resource policy's to report
        found = f"its keys are {sorted(keys)}" if maps else "no such ConfigMap is in the stack"
        report_violation(
            f"GPU pool '{known(pool.props, 'name') or pool.name}': {DEVICE_PLUGIN_CONFIG_LABEL}={selected!r} "
            f"is not a key of the device-plugin ConfigMap '{config_map}' ({found})",
            pool.urn,
        )
