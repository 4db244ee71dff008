"""Runner registrations and CI/CD variables (policy/policies/gitlab_access.py): each rule called directly."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE
from support.policy import PROJECT_VARIABLE, WANDB_KEY, resource_args, violations

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
