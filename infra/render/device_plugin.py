"""NVIDIA device-plugin sharing configs, one per GPU pool, in the plugin's own format (pure: no Pulumi).

The GPU operator mounts one ConfigMap into the device plugin; each key is a complete plugin config file
(`version: v1` and, when shared, `sharing.timeSlicing` or `sharing.mps`). A node picks its key with the
label `nvidia.com/device-plugin.config=<key>`, which gpu-ci sets on the pool, so autoscaled nodes carry
it from birth. Keys are the pool names: a pool's label never changes, so a running node is never
reconfigured by a label change; only the ConfigMap's content does, and only nodes that start later read
it (docs/routing-and-sharing.md).

Fields are those of `api/config/v1` in NVIDIA/k8s-device-plugin: `renameByDefault: false` keeps the
resource name `nvidia.com/gpu`, which is what the job pods request and what the cluster-autoscaler's
template node offers when it scales a pool from zero; `failRequestsGreaterThanOne: true` refuses a pod
asking for two replicas of one GPU (it would get no more compute, only a second slot).
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from infra.config.pools import NO_SHARING, GpuSharing
from infra.model.platform import Platform
from infra.render.yaml_text import dump_yaml

GPU_RESOURCE = "nvidia.com/gpu"
CONFIG_VERSION = "v1"
NO_SHARING_KEY = "no_sharing"
"""The ClusterPolicy's default key, for GPU nodes without the label (not gpu-ci's): one job per GPU.
An underscore cannot occur in a pool name, so this key never collides with a pool's."""


def device_plugin_config(sharing: GpuSharing) -> dict[str, Any]:
    """One plugin config: `version: v1`, plus the sharing section when the GPU is shared."""
    config: dict[str, Any] = {"version": CONFIG_VERSION}
    if sharing.plugin_section is None:
        return config
    config["sharing"] = {
        sharing.plugin_section: {
            "renameByDefault": False,
            "failRequestsGreaterThanOne": True,
            "resources": [{"name": GPU_RESOURCE, "replicas": sharing.replicas_per_gpu}],
        }
    }
    return config


def device_plugin_configs(platform: Platform) -> dict[str, str]:
    """ConfigMap data: one YAML document per GPU pool (its key is the pool's label value), plus the default."""
    data = {
        pool.device_plugin_key: _dump(device_plugin_config(pool.sharing))
        for pool in platform.pools.values()
        if pool.device_plugin_key is not None
    }
    data[NO_SHARING_KEY] = _dump(device_plugin_config(NO_SHARING))
    return data


def cluster_policy_patch(platform: Platform) -> dict[str, Any]:
    """The ClusterPolicy fields gpu-ci owns: the ConfigMap to mount, and the key for unlabelled GPU nodes."""
    operator = platform.spec.gpu_operator
    return {"spec": {"devicePlugin": {"config": {"name": operator.config_map, "default": NO_SHARING_KEY}}}}


def render_config_map(platform: Platform) -> str:
    """The ConfigMap as a manifest (the `device-plugin-config.yaml` artifact; Pulumi registers the same data)."""
    operator = platform.spec.gpu_operator
    manifest = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": operator.config_map, "namespace": operator.namespace},
        "data": device_plugin_configs(platform),
    }
    return dump_yaml(manifest)


def render_cluster_policy_patch(platform: Platform) -> str:
    """The merge patch for `kubectl patch clusterpolicies.nvidia.com/<name> --type merge -p "$(cat ...)"`."""
    return json.dumps(cluster_policy_patch(platform), indent=2, sort_keys=True) + "\n"


def _dump(config: dict[str, Any]) -> str:
    return yaml.safe_dump(config, sort_keys=True, default_flow_style=False)
