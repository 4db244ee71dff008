"""Helpers of the policy pack's tests (tests/policy/): resources as pulumi-policy's analyzer presents them.

Props reach the rules the way pulumi-policy 1.21's analyzer hands them over (`engine_props`): through a
protobuf Struct (numbers become floats), deserialised with secrets unwrapped, inside the unknown-checking proxy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import tomli_w
from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    StackValidationArgs,
)

from infra.model.pools import DEVICE_PLUGIN_CONFIG_LABEL
from infra.offline.policy_check import engine_props
from infra.offline.stack_config import PROJECT_ROOT

POLICY_DIR = PROJECT_ROOT / "policy"
POOL = "scaleway:kubernetes/pool:Pool"
CLUSTER = "scaleway:kubernetes/cluster:Cluster"
RELEASE = "kubernetes:helm.sh/v3:Release"
PROJECT_VARIABLE = "gitlab:index/projectVariable:ProjectVariable"
BUCKET = "scaleway:object/bucket:Bucket"
BUCKET_ACL = "scaleway:object/bucketAcl:BucketAcl"
BUCKET_POLICY = "scaleway:object/bucketPolicy:BucketPolicy"
NAMESPACE = "scaleway:registry/namespace:Namespace"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
CLUSTER_POLICY_PATCH = "kubernetes:nvidia.com/v1:ClusterPolicyPatch"

Validate = Callable[[Any, Any], None]


# ---------------------------------------------------------------------------------------------------------
# How the analyzer presents a resource to a policy


def recorder(reported: list[tuple[str, str | None]]) -> Callable[..., None]:
    """A report_violation that keeps (message, urn)."""

    def report(message: str, urn: str | None = None) -> None:
        reported.append((message, urn))

    return report


def options(*, protect: bool = False, ignore_changes: list[str] | None = None) -> PolicyResourceOptions:
    return PolicyResourceOptions(
        protect=protect,
        ignore_changes=list(ignore_changes or []),
        delete_before_replace=None,
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(0, 0, 0),
        additional_secret_outputs=[],
    )


def resource_args(
    type_token: str,
    props: Mapping[str, Any],
    *,
    name: str = "r",
    opts: PolicyResourceOptions | None = None,
    config: Mapping[str, Any] | None = None,
) -> ResourceValidationArgs:
    urn = f"urn:pulumi:dev::gpu-ci::{type_token}::{name}"
    return ResourceValidationArgs(type_token, engine_props(props), urn, name, opts or options(), None, config)


def violations(validate: Validate, args: ResourceValidationArgs | StackValidationArgs) -> list[str]:
    found: list[str] = []
    validate(args, lambda message, urn=None: found.append(message))
    return found


def stack_resource(type_token: str, name: str, props: Mapping[str, Any]) -> PolicyResource:
    urn = f"urn:pulumi:dev::gpu-ci::{type_token}::{name}"
    return PolicyResource(type_token, engine_props(props), urn, name, options(), None, None, [], {})


# ---------------------------------------------------------------------------------------------------------
# The props of the resources most rules judge


def gpu_pool(**changes: Any) -> dict[str, Any]:
    props = {
        "name": "ci-training",
        "nodeType": "L40S-1-48G",
        "size": 0,
        "minSize": 0,
        "maxSize": 1,
        "autoscaling": True,
        "labels": {DEVICE_PLUGIN_CONFIG_LABEL: "ci-training"},
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
    }
    props.update(changes)
    return props


AUTOSCALED = options(ignore_changes=["size"])


WANDB_KEY = "0123456789abcdef0123456789abcdef01234567"


def runner_release(kubernetes: dict[str, Any] | None = None, **values: Any) -> dict[str, Any]:
    """A gitlab-runner release whose config.toml has one kubernetes runner with `kubernetes` settings."""
    entry = {"executor": "kubernetes", "kubernetes": {"namespace": "gitlab-runner", **(kubernetes or {})}}
    chart_values = {"runners": {"config": tomli_w.dumps({"runners": [entry]})}, **values}
    return {"name": "gitlab-runner", "chart": "gitlab-runner", "atomic": True, "timeout": 600, "values": chart_values}


# ---------------------------------------------------------------------------------------------------------
# Specs the program accepts and the pack refuses (tests/policy/test_pack.py offline, tests/engine under the engine)


def _min_size_one(p: dict[str, Any]) -> None:
    p["pools"]["ci-training"]["min_size"] = 1


def _fixed_gpu_pool(p: dict[str, Any]) -> None:
    p["pools"]["ci-training"].update(min_size=1, max_size=1, autoscaling=False)


def _public_registry(p: dict[str, Any]) -> None:
    p["registry"]["is_public"] = True


def _fast_cold_start(p: dict[str, Any]) -> None:
    for name in ("ci-compile", "ci-training"):
        p["pools"][name]["cold_start_minutes"] = 3
    p["runner"]["poll_timeout_margin_minutes"] = 1
    p["runner"]["node_wait_tolerance"] = "8m"  # 3 attempts of 4 min: (8 + 3 + 1) / 3


def _unmasked_secret(p: dict[str, Any]) -> None:
    # a token as a plain value is refused by the spec itself (platform.ci.variables: use secret:)
    p["ci"]["variables"] = {"HF_TOKEN": {"secret": "hf_token", "masked": False}}


PACK_REFUSALS: dict[str, Callable[[dict[str, Any]], None]] = {
    "gpu-min-size-1": _min_size_one,
    "fixed-gpu-pool": _fixed_gpu_pool,
    "public-registry": _public_registry,
    "short-poll": _fast_cold_start,
    "unmasked-secret": _unmasked_secret,
}
"""Edits of the dev platform that the spec lets through (with a warning at the key) and the pack refuses."""
PACK_SECRETS = {"hf_token": "hf-policy-test-token"}
"""The stack secrets those edits name."""
