"""The runner, gitlab, ci and registry sections of the spec: defaults, derived choices, one-line errors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from infra.spec.errors import SpecError
from infra.spec.platform import load_spec
from infra.spec.runner import default_pool, manager_pool
from infra.spec.secrets import secret_config_keys

Edit = Callable[[dict[str, Any]], None]


def test_dev_stack_sections_are_the_design(dev_platform: dict[str, Any]) -> None:
    spec = load_spec(dev_platform)
    assert (spec.runner.namespace, spec.runner.chart_version) == ("gitlab-runner", "0.86.0")
    assert (default_pool(spec), manager_pool(spec)) == ("ci-compile", "system")
    assert spec.runner.tags == ("kapsule", "gpu")
    assert spec.runner.job_timeout_seconds == 3 * 3600
    assert (spec.gitlab.project, spec.gitlab.runner_scope) == ("ml-team/training", "project")
    assert (spec.ci.templates_path, spec.ci.stage) == (".gitlab/ci/gpu-ci-templates.yml", "train")
    assert spec.ci.image == "${REGISTRY}/training:${CI_COMMIT_SHA}"
    assert (spec.registry.namespace, spec.registry.needs_pull_secret) == ("gpu-ci", True)
    assert spec.runner.cache is None
    assert secret_config_keys(spec) == []  # the dev stack commits no secrets and needs none


def test_default_pool_is_the_cheapest_profile_pool(dev_platform: dict[str, Any]) -> None:
    del dev_platform["runner"]["default_pool"]
    del dev_platform["runner"]["manager_pool"]
    spec = load_spec(dev_platform)
    assert default_pool(spec) == "ci-compile"  # L4 0.7875 EUR/h < L40S 1.4699 EUR/h
    assert manager_pool(spec) == "system"  # the always-on pool without a GPU
    dev_platform["node_types"] = {"L4-1-24G": {"eur_per_hour": "2"}}
    assert default_pool(load_spec(dev_platform)) == "ci-training"


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
        "PYTHONUNBUFFERED": 1,
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
    assert secret_config_keys(spec) == ["runner_cache_access_key", "runner_cache_secret_key", "wandb_api_key"]
    assert spec.runner.cache is not None and spec.runner.cache.expire_days == 30


@dataclass(frozen=True)
class Bad:
    id: str
    edit: Edit
    line: str


def _set(*path: str, value: Any) -> Edit:
    def edit(platform: dict[str, Any]) -> None:
        node = platform
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value

    return edit


def _drop(*path: str) -> Edit:
    def edit(platform: dict[str, Any]) -> None:
        node = platform
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return edit


BAD_INPUTS = [
    Bad(
        "no-gitlab-section",
        _drop("gitlab"),
        "platform.gitlab=<missing>: required key is missing",
    ),
    Bad(
        "empty-project",
        _set("gitlab", "project", value=""),
        "platform.gitlab.project='': not a project path like ml-team/training",
    ),
    Bad(
        "project-without-namespace",
        _set("gitlab", "project", value="training"),
        "platform.gitlab.project='training': not a project path like ml-team/training",
    ),
    Bad(
        "empty-group",
        _set("gitlab", "group", value=""),
        "platform.gitlab.group='': not a group path like ml-team or ml-team/research",
    ),
    Bad(
        "api-url-as-instance-url",
        _set("gitlab", "url", value="https://gitlab.com/api/v4/"),
        "platform.gitlab.url='https://gitlab.com/api/v4/': is the API URL; give the instance URL (the provider's "
        "gitlab:baseUrl is the API URL)",
    ),
    Bad(
        "plain-http",
        _set("gitlab", "url", value="http://gitlab.example.com"),
        "platform.gitlab.url='http://gitlab.example.com': not an https URL of a GitLab instance like "
        "https://gitlab.example.com",
    ),
    Bad(
        "group-runner-without-group",
        lambda p: (p["gitlab"].pop("group"), p["gitlab"].update(runner_scope="group")),
        "platform.gitlab.group=null: gitlab.runner_scope 'group' needs the group's full path",
    ),
    Bad(
        "group-variables-without-group",
        lambda p: (p["gitlab"].pop("group"), p["ci"].update(variables_scope="group")),
        "platform.gitlab.group=null: ci.variables_scope 'group' needs the group's full path",
    ),
    Bad(
        "group-runner-outside-group",
        lambda p: p["gitlab"].update(runner_scope="group", group="other-team"),
        "platform.gitlab.project='ml-team/training': is not in group 'other-team': a group runner serves only the "
        "group's projects",
    ),
    Bad(
        "unknown-scope",
        _set("gitlab", "runner_scope", value="instance"),
        "platform.gitlab.runner_scope='instance': Input should be 'project' or 'group'",
    ),
    Bad(
        "chart-version-not-a-version",
        _set("runner", "chart_version", value="latest"),
        "platform.runner.chart_version='latest': not a chart version like 0.86.0 (pin an exact version)",
    ),
    Bad(
        "chart-version-range",
        _set("runner", "chart_version", value="0.86"),
        "platform.runner.chart_version='0.86': not a chart version like 0.86.0 (pin an exact version)",
    ),
    Bad(
        "default-pool-unknown",
        _set("runner", "default_pool", value="ci-gpu"),
        "platform.runner.default_pool='ci-gpu': no such pool (ci-compile, ci-training, system)",
    ),
    Bad(
        "default-pool-no-profile-targets",
        _set("runner", "default_pool", value="system"),
        "platform.runner.default_pool='system': no profile targets it: every job of the runner gets one "
        "nvidia.com/gpu and a profile's size (pools of profiles: ['ci-compile', 'ci-training'])",
    ),
    Bad(
        "manager-on-scale-to-zero-pool",
        _set("runner", "manager_pool", value="ci-compile"),
        "platform.runner.manager_pool='ci-compile': is not always-on (min_size=0): the runner manager must run all "
        "the time to pick up jobs",
    ),
    Bad(
        "manager-on-always-on-gpu-pool",
        lambda p: (
            p["pools"]["ci-compile"].update(min_size=1),
            p["runner"].update(manager_pool="ci-compile"),
        ),
        "platform.runner.manager_pool='ci-compile': is a GPU pool: its nvidia.com/gpu taint keeps the manager off, "
        "and a GPU node would bill around the clock",
    ),
    Bad(
        "manager-pool-unknown",
        _set("runner", "manager_pool", value="sytem"),
        "platform.runner.manager_pool='sytem': no such pool (ci-compile, ci-training, system)",
    ),
    Bad(
        "no-tags",
        _set("runner", "tags", value=[]),
        "platform.runner.tags=[]: needs at least one tag: the runner takes no untagged jobs",
    ),
    Bad(
        "tag-with-comma",
        _set("runner", "tags", value=["kapsule,gpu"]),
        "platform.runner.tags=['kapsule,gpu']: tag 'kapsule,gpu' must be letters, digits, '_', '.' or '-'",
    ),
    Bad(
        "job-timeout-too-short",
        _set("runner", "job_timeout", value="5m"),
        "platform.runner.job_timeout='5m': must be at least 10m (GitLab's minimum runner timeout)",
    ),
    Bad(
        "namespace-not-dns",
        _set("runner", "namespace", value="GitLab_Runner"),
        "platform.runner.namespace='GitLab_Runner': not a Kubernetes namespace name (1-63 of a-z, 0-9 and '-')",
    ),
    Bad(
        "cache-bucket-name",
        _set("runner", "cache", value={"bucket": "My_Cache"}),
        "platform.runner.cache.bucket='My_Cache': not a bucket name: 3-63 of a-z, 0-9, '.' and '-', starting and "
        "ending alphanumeric",
    ),
    Bad(
        "zero-concurrency",
        _set("runner", "concurrent", value=0),
        "platform.runner.concurrent=0: Input should be greater than or equal to 1",
    ),
    Bad(
        "templates-path-escapes",
        _set("ci", "templates_path", value="../shared/gpu-ci.yml"),
        "platform.ci.templates_path='../shared/gpu-ci.yml': not a repository path like "
        ".gitlab/ci/gpu-ci-templates.yml (relative, .yml or .yaml)",
    ),
    Bad(
        "templates-path-absolute",
        _set("ci", "templates_path", value="/ci/gpu-ci.yml"),
        "platform.ci.templates_path='/ci/gpu-ci.yml': not a repository path like .gitlab/ci/gpu-ci-templates.yml "
        "(relative, .yml or .yaml)",
    ),
    Bad(
        "variable-routes-every-job",
        _set("ci", "variables", value={"KUBERNETES_CPU_REQUEST": "8"}),
        "platform.ci.variables.KUBERNETES_CPU_REQUEST='8': would size or route every job; routing comes from the "
        "profiles' templates",
    ),
    Bad(
        "variable-shadows-derived",
        _set("ci", "variables", value={"REGISTRY": "docker.io/me"}),
        "platform.ci.variables.REGISTRY='docker.io/me': REGISTRY is derived by gpu-ci; do not set it here",
    ),
    Bad(
        "variable-shadows-predefined",
        _set("ci", "variables", "CI_COMMIT_SHA", value={"secret": "sha"}),
        "platform.ci.variables.CI_COMMIT_SHA={secret: 'sha'}: would shadow a GitLab predefined variable",
    ),
    Bad(
        "variable-value-and-secret",
        _set("ci", "variables", "HF_TOKEN", value={"value": "x", "secret": "hf_token"}),
        "platform.ci.variables.HF_TOKEN={value: 'x', secret: 'hf_token'}: give exactly one of value or secret",
    ),
    Bad(
        "variable-secret-key-not-a-key",
        _set("ci", "variables", "HF_TOKEN", value={"secret": "gpu-ci:hf token"}),
        "platform.ci.variables.HF_TOKEN.secret='gpu-ci:hf token': not a stack config key like wandb_api_key "
        "(letters, digits, '_')",
    ),
    Bad(
        "registry-namespace-name",
        _set("registry", "namespace", value="GPU CI"),
        "platform.registry.namespace='GPU CI': not a registry namespace name (a-z, 0-9 and '-')",
    ),
    Bad(
        "typo-in-runner-key",
        _set("runner", "chart_verison", value="0.86.0"),
        "platform.runner.chart_verison='0.86.0': unknown key (allowed: access_level, cache, chart_version, "
        "concurrent, default_image, default_pool, description, job_timeout, manager_pool, namespace, tags)",
    ),
]


@pytest.mark.parametrize("case", BAD_INPUTS, ids=[case.id for case in BAD_INPUTS])
def test_bad_input_fails_with_one_line_naming_key_and_value(dev_platform: dict[str, Any], case: Bad) -> None:
    case.edit(dev_platform)
    with pytest.raises(SpecError) as caught:
        load_spec(dev_platform)
    assert str(caught.value) == case.line
    assert len(caught.value.problems) == 1


def test_a_profile_error_is_not_reported_again_as_a_runner_error(dev_platform: dict[str, Any]) -> None:
    """The default pool loses its only profile because that profile is wrong: one line, the profile's."""
    dev_platform["profiles"]["rl"]["pool"] = "ci-gpu"
    with pytest.raises(SpecError) as caught:
        load_spec(dev_platform)
    assert [p.path for p in caught.value.problems] == ["platform.profiles.rl.pool"]
