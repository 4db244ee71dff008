"""Device-plugin configs: parsed back and checked against NVIDIA's format, one key per GPU pool."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml

from infra.config.base import DNS_LABEL
from infra.model.platform import Platform, load_platform
from infra.model.pools import DEVICE_PLUGIN_CONFIG_LABEL
from infra.render.device_plugin import (
    NO_SHARING_KEY,
    cluster_policy_patch,
    device_plugin_configs,
    render_cluster_policy_patch,
    render_config_map,
)

_REPLICATED = {
    "renameByDefault": None,
    "failRequestsGreaterThanOne": None,
    "resources": [{"name": None, "rename": None, "devices": None, "replicas": None}],
}
DEVICE_PLUGIN_CONFIG_KEYS: dict[str, Any] = {
    "version": None,
    "flags": "*",
    "resources": "*",
    "sharing": {"timeSlicing": _REPLICATED, "mps": _REPLICATED},
    "imex": "*",
}
"""The key tree the plugin reads: `Config`, `Sharing` and `ReplicatedResources` in NVIDIA/k8s-device-plugin
api/config/v1 (config.go, sharing.go; `"*"` = not used by gpu-ci, free-form here)."""

CONFIGMAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


def _unknown_keys(document: Any, tree: Any, path: str = "") -> list[str]:
    """Key paths of `document` that are not in `tree`."""
    if tree == "*" or tree is None:
        return []
    if isinstance(document, list):
        return [p for item in document for p in _unknown_keys(item, tree[0], f"{path}[]")]
    found = []
    for key, value in document.items():
        if key not in tree:
            found.append(f"{path}.{key}".lstrip("."))
        else:
            found += _unknown_keys(value, tree[key], f"{path}.{key}")
    return found


def _spec(platform: dict[str, Any]) -> Platform:
    return load_platform(platform)


def test_time_slicing_config_is_nvidias_format(dev_platform: dict[str, Any]) -> None:
    data = device_plugin_configs(_spec(dev_platform))
    config = yaml.safe_load(data["ci-training"])
    assert config == {
        "version": "v1",
        "sharing": {
            "timeSlicing": {
                "renameByDefault": False,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
            }
        },
    }
    assert yaml.safe_load(data["ci-compile"])["sharing"]["timeSlicing"]["resources"][0]["replicas"] == 2


def test_mps_config_uses_the_mps_section(dev_platform: dict[str, Any]) -> None:
    dev_platform["pools"]["ci-training"]["gpu_sharing"] = {"strategy": "mps", "replicas": 3}
    dev_platform["runner"]["access_level"] = "ref_protected"  # MPS: protected branches only
    config = yaml.safe_load(device_plugin_configs(_spec(dev_platform))["ci-training"])
    assert set(config["sharing"]) == {"mps"}
    mps = config["sharing"]["mps"]
    assert mps["renameByDefault"] is False  # nvidia.com/gpu stays the resource: scale-from-zero still works
    assert mps["resources"] == [{"name": "nvidia.com/gpu", "replicas": 3}]


@pytest.mark.parametrize("sharing", [None, {"strategy": "none"}], ids=["absent", "none"])
def test_unshared_pool_gets_a_plain_config(dev_platform: dict[str, Any], sharing: dict[str, Any] | None) -> None:
    dev_platform["pools"]["ci-training"].pop("gpu_sharing")
    if sharing is not None:
        dev_platform["pools"]["ci-training"]["gpu_sharing"] = sharing
    data = device_plugin_configs(_spec(dev_platform))
    assert yaml.safe_load(data["ci-training"]) == {"version": "v1"}
    assert yaml.safe_load(data[NO_SHARING_KEY]) == {"version": "v1"}


def test_every_rendered_key_is_one_the_plugin_reads(dev_platform: dict[str, Any]) -> None:
    dev_platform["pools"]["ci-training"]["gpu_sharing"] = {"strategy": "mps", "replicas": 4}
    dev_platform["runner"]["access_level"] = "ref_protected"  # MPS: protected branches only
    for key, text in device_plugin_configs(_spec(dev_platform)).items():
        assert _unknown_keys(yaml.safe_load(text), DEVICE_PLUGIN_CONFIG_KEYS) == [], key


def test_the_key_check_catches_a_misspelt_field() -> None:
    bad = {"version": "v1", "sharing": {"timeSlicing": {"renameByDefualt": False, "resources": [{"nmae": "x"}]}}}
    assert _unknown_keys(bad, DEVICE_PLUGIN_CONFIG_KEYS) == [
        "sharing.timeSlicing.renameByDefualt",
        "sharing.timeSlicing.resources[].nmae",
    ]


def test_one_key_per_gpu_pool_and_labels_select_them(dev_platform: dict[str, Any]) -> None:
    spec = _spec(dev_platform)
    data = device_plugin_configs(spec)
    labels = {name: pool.labels for name, pool in spec.pools.items() if DEVICE_PLUGIN_CONFIG_LABEL in pool.labels}
    assert set(labels) == {"ci-compile", "ci-training"}  # the CPU pool gets no device-plugin label
    assert set(data) == {label[DEVICE_PLUGIN_CONFIG_LABEL] for label in labels.values()} | {NO_SHARING_KEY}
    for key in data:
        assert CONFIGMAP_KEY.match(key) and len(key) <= 63, key  # a ConfigMap key and a label value
    assert not DNS_LABEL.match(NO_SHARING_KEY), "the default key must be impossible as a pool name"


def test_cluster_policy_patch_points_at_the_config_map(dev_platform: dict[str, Any]) -> None:
    dev_platform["gpu_operator"] = {"namespace": "gpu-operator", "config_map": "sharing", "cluster_policy": "cp"}
    spec = _spec(dev_platform)
    patch = cluster_policy_patch(spec)
    config = patch["spec"]["devicePlugin"]["config"]
    assert config == {"name": "sharing", "default": NO_SHARING_KEY}
    assert config["default"] in device_plugin_configs(spec)
    assert json.loads(render_cluster_policy_patch(spec)) == patch
    manifest = yaml.safe_load(render_config_map(spec))
    assert manifest["metadata"] == {"name": "sharing", "namespace": "gpu-operator"}
    assert manifest["data"] == device_plugin_configs(spec)
    assert "ci-training: |" in render_config_map(spec)  # readable blocks, not escaped one-liners
