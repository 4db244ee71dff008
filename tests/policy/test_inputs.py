"""What a rule sees of a resource (policy/policies/inputs.py): secrets unwrapped, unknown values raise."""

from __future__ import annotations

import pytest
from pulumi.runtime import rpc
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError
from support.policy import AUTOSCALED, POOL, WANDB_KEY, gpu_pool, resource_args, violations

from infra.offline.policy_check import engine_props
from policy.policies import cluster_pools as pol


def test_secret_inputs_reach_a_policy_unwrapped() -> None:
    """Why the rule judges by name and value: the analyzer drops the secret marking before a policy sees it."""
    wrapped = {rpc._special_sig_key: rpc._special_secret_sig, "value": WANDB_KEY}
    assert engine_props({"value": wrapped})["value"] == WANDB_KEY


def test_an_unknown_value_stops_a_rule_as_the_sdk_intends() -> None:
    """During preview a judged value may be unknown: the SDK's proxy raises, and the engine reports the rule
    as not run for that resource (advisory), rather than the rule guessing."""
    args = resource_args(POOL, gpu_pool(minSize=UNKNOWN_STRING_VALUE), opts=AUTOSCALED)
    with pytest.raises(UnknownValueError):
        violations(pol.gpu_pool_scales_to_zero, args)
