"""Runner registrations and CI/CD variables (policy/policies/gitlab_access.py): each rule called directly."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi_policy import StackValidationArgs
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE
from support.policy import (
    CONFIG_MAP,
    POOL,
    PROJECT_VARIABLE,
    WANDB_KEY,
    gpu_pool,
    recorder,
    resource_args,
    stack_resource,
    violations,
)

from policy.policies import gitlab_access as pol

# ---------------------------------------------------------------------------------------------------------
# The runner registration


USER_RUNNER = "gitlab:index/userRunner:UserRunner"


def registration(**changes: Any) -> dict[str, Any]:
    props = {
        "description": "gpu-ci",
        "runnerType": "project_type",
        "projectId": 42,
        "tagLists": ["kapsule", "gpu"],
        "untagged": False,
        "locked": True,
        "accessLevel": "not_protected",
    }
    props.update(changes)
    return props


def test_a_tagged_locked_registration_passes() -> None:
    assert violations(pol.runner_registration_scoped, resource_args(USER_RUNNER, registration())) == []
    group = registration(runnerType="group_type", projectId=None, groupId=7, locked=None)
    assert violations(pol.runner_registration_scoped, resource_args(USER_RUNNER, group)) == []


@pytest.mark.parametrize(
    ("changes", "config", "expected"),
    [
        ({"untagged": True}, None, "GitLab runner 'gpu-ci': untagged=True: set untagged: false"),
        ({"untagged": None}, None, "GitLab runner 'gpu-ci': untagged=unset"),
        ({"locked": False}, None, "GitLab runner 'gpu-ci': locked=False: a project runner must be locked"),
        (
            {},
            {"allowed_access_levels": ["ref_protected"]},
            "GitLab runner 'gpu-ci': accessLevel='not_protected': allowed are ['ref_protected']",
        ),
        ({"accessLevel": None}, None, "GitLab runner 'gpu-ci': accessLevel=unset"),
    ],
    ids=["untagged", "untagged-unset", "unlocked", "level-not-allowed", "level-unset"],
)
def test_a_loose_registration_fails(changes: dict[str, Any], config: dict[str, Any] | None, expected: str) -> None:
    props = {k: v for k, v in registration(**changes).items() if v is not None}
    (found,) = violations(pol.runner_registration_scoped, resource_args(USER_RUNNER, props, config=config))
    assert found.startswith(expected)


# ---------------------------------------------------------------------------------------------------------
# CI/CD variables


GITLAB_TOKEN = "glpat-Abcdefghij0123456789"


def variable(key: str, value: Any, **flags: Any) -> dict[str, Any]:
    return {"project": "ml-team/training", "key": key, "value": value, **flags}


@pytest.mark.parametrize(
    "props",
    [
        variable("REGISTRY", "rg.fr-par.scw.cloud/gpu-ci"),
        variable("HYPEROPT_EPOCHS", "8", masked=False),
        variable("WANDB_API_KEY", WANDB_KEY, masked=True, protected=True),
        variable("HF_TOKEN", "hf_x", hidden=True, protected=True),
        variable("MAX_TOKENS", "4096"),
    ],
    ids=["plain", "plain-unmasked", "secret-masked", "secret-hidden", "not-a-token"],
)
def test_plain_or_masked_and_protected_variables_pass(props: dict[str, Any]) -> None:
    assert violations(pol.ci_secret_variables_masked, resource_args(PROJECT_VARIABLE, props)) == []


def test_a_credential_named_variable_left_unmasked_fails_without_showing_its_value() -> None:
    props = variable("WANDB_API_KEY", WANDB_KEY, masked=False, protected=True)
    found = violations(pol.ci_secret_variables_masked, resource_args(PROJECT_VARIABLE, props))
    assert found == [
        "CI variable 'WANDB_API_KEY' (ml-team/training): masked=False, protected=True: it looks like a credential "
        "(its name) and must be masked and protected (gpu-ci: platform.ci.variables.WANDB_API_KEY.secret, which "
        "defaults to both)"
    ]
    assert WANDB_KEY not in found[0]


def test_a_credential_value_under_any_name_fails_without_showing_it() -> None:
    props = variable("NOTES", f"use {GITLAB_TOKEN} to push", masked=True)
    (found,) = violations(pol.ci_secret_variables_masked, resource_args(PROJECT_VARIABLE, props))
    assert "CI variable 'NOTES' (ml-team/training): masked=True, protected=unset" in found
    assert "(its value)" in found
    assert GITLAB_TOKEN not in found


def test_an_unknown_value_is_judged_by_its_name_only() -> None:
    plain = variable("REGISTRY", UNKNOWN_STRING_VALUE)
    assert violations(pol.ci_secret_variables_masked, resource_args(PROJECT_VARIABLE, plain)) == []
    secret = variable("SCW_SECRET_KEY", UNKNOWN_STRING_VALUE)
    assert len(violations(pol.ci_secret_variables_masked, resource_args(PROJECT_VARIABLE, secret))) == 1


def test_secret_keys_and_unprotected_exemptions_are_configurable() -> None:
    props = variable("MODEL_SEED", "42", masked=True)
    config = {"extra_secret_keys": ["MODEL_SEED"]}
    (found,) = violations(pol.ci_secret_variables_masked, resource_args(PROJECT_VARIABLE, props, config=config))
    assert "(the policy's extra_secret_keys)" in found
    config["allow_unprotected"] = ["MODEL_SEED"]
    assert violations(pol.ci_secret_variables_masked, resource_args(PROJECT_VARIABLE, props, config=config)) == []


# ---------------------------------------------------------------------------------------------------------
# Stack: MPS pools are served by runners of protected refs only

USER_RUNNER = "gitlab:index/userRunner:UserRunner"
MPS_CONFIG = "version: v1\nsharing:\n  mps:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 4}\n"
SLICED_CONFIG = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 4}\n"


def _mps_stack(access_level: str, config: str = MPS_CONFIG, tags: tuple[str, ...] = ("kapsule", "ci-training")) -> list:
    return [
        stack_resource(POOL, "kapsule-ci-training", gpu_pool()),
        stack_resource(
            CONFIG_MAP,
            "gpu-sharing-config",
            {"metadata": {"name": "sharing"}, "data": {"ci-training": config, "no_sharing": "version: v1\n"}},
        ),
        stack_resource(
            USER_RUNNER,
            "runner-ci-training-registration",
            {"description": "gpu-ci ci-training", "tagLists": list(tags), "accessLevel": access_level},
        ),
    ]


def test_an_mps_pool_served_by_a_protected_runner_passes() -> None:
    assert violations(pol.mps_pools_protected_runners, StackValidationArgs(_mps_stack("ref_protected"))) == []


def test_a_time_sliced_pool_may_take_unprotected_jobs() -> None:
    args = StackValidationArgs(_mps_stack("not_protected", config=SLICED_CONFIG))
    assert violations(pol.mps_pools_protected_runners, args) == []


@pytest.mark.parametrize(
    "tags", [("kapsule", "ci-training"), ("kapsule", "ci-training-merge_request_event")], ids=["shared", "held"]
)
def test_an_mps_pool_served_by_a_runner_of_unprotected_branches_fails_on_the_runner(tags: tuple[str, ...]) -> None:
    reported: list[tuple[str, str | None]] = []
    pol.mps_pools_protected_runners(StackValidationArgs(_mps_stack("not_protected", tags=tags)), recorder(reported))
    assert reported == [
        (
            "GitLab runner 'gpu-ci ci-training': accessLevel='not_protected' on MPS pool(s) ci-training: jobs of "
            "unprotected branches would share the MPS daemon's pipe and /dev/shm with protected ones; set accessLevel "
            "ref_protected (gpu-ci: runner.access_level) or use time-slicing on the pool",
            f"urn:pulumi:dev::gpu-ci::{USER_RUNNER}::runner-ci-training-registration",
        )
    ]


def test_a_runner_of_another_pool_is_not_judged_by_the_mps_pool() -> None:
    args = StackValidationArgs(_mps_stack("not_protected", tags=("kapsule", "gpu", "ci-compile")))
    assert violations(pol.mps_pools_protected_runners, args) == []


def test_mps_in_flow_style_counts_and_a_comment_does_not() -> None:
    flow = "version: v1\nsharing: {mps: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}\n"
    assert len(violations(pol.mps_pools_protected_runners, StackValidationArgs(_mps_stack("not_protected", flow)))) == 1
    commented = SLICED_CONFIG + "# mps: later\n"
    args = StackValidationArgs(_mps_stack("not_protected", commented))
    assert violations(pol.mps_pools_protected_runners, args) == []
