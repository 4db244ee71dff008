"""The runner, gitlab, ci and registry sections of the spec: defaults, derived choices, one-line errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from infra.config.errors import SpecError
from infra.config.load import load_spec

Edit = Callable[[dict[str, Any]], None]


def test_dev_stack_sections_are_the_design(dev_platform: dict[str, Any]) -> None:
    spec = load_spec(dev_platform)
    assert (spec.runner.namespace, spec.runner.chart_version) == ("gitlab-runner", "0.86.0")
    assert (spec.default_pool(), spec.manager_pool()) == ("ci-compile", "system")
    assert spec.runner.tags == ("kapsule", "gpu")
    assert spec.runner.job_timeout_seconds == 3 * 3600 + 30 * 60
    assert (spec.gitlab.project, spec.gitlab.runner_scope) == ("ml-team/training", "project")
    assert (spec.ci.templates_path, spec.ci.stage) == (".gitlab/ci/gpu-ci-templates.yml", "train")
    assert spec.ci.image == "${REGISTRY}/training:${CI_COMMIT_SHA}"
    assert (spec.registry.namespace, spec.registry.needs_pull_secret) == ("gpu-ci", True)
    assert spec.runner.cache is None
    assert spec.secret_config_keys() == ["registry_pull_secret_key"]  # the bootstrap pull key, committed encrypted


def test_default_pool_is_the_cheapest_profile_pool(dev_platform: dict[str, Any]) -> None:
    del dev_platform["runner"]["default_pool"]
    del dev_platform["runner"]["manager_pool"]
    spec = load_spec(dev_platform)
    assert spec.default_pool() == "ci-compile"  # L4 0.7875 EUR/h < L40S 1.4699 EUR/h
    assert spec.manager_pool() == "system"  # the always-on pool without a GPU
    dev_platform["node_types"] = {"L4-1-24G": {"eur_per_hour": "2"}}
    assert load_spec(dev_platform).default_pool() == "ci-training"


def test_sections_have_defaults_except_the_project(dev_platform: dict[str, Any]) -> None:
    for section in ("runner", "ci", "registry"):
        del dev_platform[section]
    dev_platform["gitlab"] = {"project": "team/training"}
    spec = load_spec(dev_platform)
    assert spec.gitlab.url == "https://gitlab.com"
    assert spec.runner.access_level == "not_protected"
    assert spec.ci.variables_scope == "project"
    assert spec.registry.protect is True


def test_variables_shorthand_and_secret_defaults(dev_platform: dict[str, Any]) -> None:
    dev_platform["ci"]["variables"] = {
        "PYTHONUNBUFFERED": "1",
        "DATASET": {"value": "s3://datasets/lob", "protected": True},
        "WANDB_API_KEY": {"secret": "wandb_api_key", "description": "Weights & Biases"},
    }
    dev_platform["runner"]["cache"] = {"bucket": "gpu-ci-runner-cache"}
    spec = load_spec(dev_platform)
    variables = spec.ci.variables
    assert variables["PYTHONUNBUFFERED"].value == "1"
    assert (variables["PYTHONUNBUFFERED"].effective_masked, variables["PYTHONUNBUFFERED"].effective_protected) == (
        False,
        False,
    )
    assert variables["DATASET"].effective_protected is True
    wandb = variables["WANDB_API_KEY"]
    assert (wandb.is_secret, wandb.effective_masked, wandb.effective_protected) == (True, True, True)
    assert spec.secret_config_keys() == [
        "registry_pull_secret_key",
        "runner_cache_access_key",
        "runner_cache_secret_key",
        "wandb_api_key",
    ]
    assert spec.runner.cache is not None and spec.runner.cache.expire_days == 30


def test_a_profile_error_is_not_reported_again_as_a_runner_error(dev_platform: dict[str, Any]) -> None:
    """The default pool loses its only profile because that profile is wrong: one line, the profile's."""
    dev_platform["profiles"]["rl"]["pool"] = "ci-gpu"
    with pytest.raises(SpecError) as caught:
        load_spec(dev_platform)
    assert [p.path for p in caught.value.problems] == ["platform.profiles.rl.pool"]
