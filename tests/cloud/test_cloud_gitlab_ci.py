"""GitlabCi and ContainerRegistry under mocks: the committed templates, the variables, the registry."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pulumi
import pytest

from infra.cloud.gitlab_ci import GitlabCi, GitlabCiArgs
from infra.cloud.names import T
from infra.cloud.registry import ContainerRegistry, ContainerRegistryArgs
from infra.config.load import load_spec
from infra.model.platform import load_platform
from infra.offline.mocks import RecordedResource, RecordingMonitor, is_secret
from infra.render.ci_templates import render_ci_templates

ENDPOINT = "rg.fr-par.scw.cloud/gpu-ci"


def _registry_args(platform: dict[str, Any], **extra: Any) -> ContainerRegistryArgs:
    spec = load_spec(platform)
    return ContainerRegistryArgs(region=spec.region, registry=spec.registry, **extra)


def _by_name(monitor: RecordingMonitor) -> dict[str, RecordedResource]:
    return {r.name: r for r in monitor.recorded}


def _settled(ci: GitlabCi) -> pulumi.Output[Any]:
    """Everything the component registers, resolved."""
    return pulumi.Output.all(ci.templates, ci.templates_commit, *ci.variables.values())


def _ci(platform: dict[str, Any], secrets: dict[str, Any] | None = None) -> GitlabCi:
    derived = load_platform(platform)
    args = GitlabCiArgs(
        gitlab=derived.spec.gitlab,
        ci=derived.spec.ci,
        templates=render_ci_templates(derived),
        registry_endpoint=ENDPOINT,
        secrets=secrets,
    )
    return GitlabCi("gitlab-ci", args)


@pulumi.runtime.test
def test_templates_are_committed_to_the_training_project(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> pulumi.Output[Any]:
    ci = _ci(dev_platform)

    def check(values: list[Any]) -> None:
        text = render_ci_templates(load_platform(dev_platform))
        committed = _by_name(pulumi_mocks)["gitlab-ci-templates"]
        assert committed.type == T.REPOSITORY_FILE
        inputs = committed.plain_inputs
        assert (inputs["project"], inputs["filePath"]) == ("ml-team/training", ".gitlab/ci/gpu-ci-templates.yml")
        assert inputs["branch"] == "main"  # the project's default branch, looked up
        assert (inputs["content"], inputs["encoding"]) == (text, "text")
        assert inputs["overwriteOnCreate"] is False  # a file gpu-ci did not create is never replaced silently
        assert values[0] == text

    return _settled(ci).apply(check)


@pulumi.runtime.test
def test_a_configured_branch_needs_no_lookup(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> pulumi.Output[Any]:
    dev_platform["ci"]["templates_branch"] = "ci-templates"
    ci = _ci(dev_platform)

    def check(_: Any) -> None:
        assert _by_name(pulumi_mocks)["gitlab-ci-templates"].plain_inputs["branch"] == "ci-templates"
        assert pulumi_mocks.mocks.invokes == []

    return _settled(ci).apply(check)


@pulumi.runtime.test
def test_variables_registry_plain_and_secret(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> pulumi.Output[Any]:
    dev_platform["ci"]["variables"] = {
        "DATASET_URI": "s3://datasets/lob",
        "WANDB_API_KEY": {"secret": "wandb_api_key", "description": "Weights & Biases"},
    }
    ci = _ci(dev_platform, secrets={"wandb_api_key": pulumi.Output.secret("wandb-0123456789abcdef")})

    def check(_: Any) -> None:
        res = _by_name(pulumi_mocks)
        assert sorted(ci.variables) == ["DATASET_URI", "REGISTRY", "WANDB_API_KEY"]
        registry = res["gitlab-ci-var-REGISTRY"]
        assert registry.type == T.PROJECT_VARIABLE
        assert {k: registry.plain_inputs[k] for k in ("project", "key", "value", "masked", "protected")} == {
            "project": "ml-team/training",
            "key": "REGISTRY",
            "value": ENDPOINT,
            "masked": False,
            "protected": False,  # merge-request pipelines need it
        }
        plain = res["gitlab-ci-var-DATASET_URI"]
        assert (plain.plain_inputs["value"], plain.plain_inputs["masked"]) == ("s3://datasets/lob", False)
        assert not is_secret(plain.inputs["value"])
        secret = res["gitlab-ci-var-WANDB_API_KEY"]
        assert is_secret(secret.inputs["value"])
        assert secret.plain_inputs["value"] == "wandb-0123456789abcdef"
        assert (secret.plain_inputs["masked"], secret.plain_inputs["protected"]) == (True, True)
        assert secret.plain_inputs["description"] == "Weights & Biases"

    return _settled(ci).apply(check)


@pulumi.runtime.test
def test_group_scope_variables(pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]) -> pulumi.Output[Any]:
    dev_platform["ci"]["variables_scope"] = "group"
    ci = _ci(dev_platform)

    def check(_: Any) -> None:
        variable = _by_name(pulumi_mocks)["gitlab-ci-var-REGISTRY"]
        assert variable.type == T.GROUP_VARIABLE
        assert variable.plain_inputs["group"] == "ml-team"

    return _settled(ci).apply(check)


PULL_KEY = "0f2c9d1e-pull-key-secret-part"


@pulumi.runtime.test
def test_registry_is_created_protected_and_pulls_with_the_stack_secret(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> pulumi.Output[Any]:
    """The pull key comes from the stack secret; the program creates no IAM resource (CI has no IAM right)."""
    args = _registry_args(dev_platform, pull_secret_key=pulumi.Output.secret(PULL_KEY))
    registry = ContainerRegistry("registry", args)
    assert registry.docker_config_json is not None

    def check(values: list[Any]) -> None:
        endpoint, docker_config = values
        res = _by_name(pulumi_mocks)
        namespace = res["registry-namespace"]
        assert namespace.options["protect"] is True
        assert (namespace.plain_inputs["name"], namespace.plain_inputs["isPublic"]) == ("gpu-ci", False)
        assert endpoint == ENDPOINT
        assert not [r.type for r in pulumi_mocks.recorded if r.type.startswith("scaleway:iam/")]
        auths = json.loads(docker_config)["auths"]
        assert list(auths) == ["rg.fr-par.scw.cloud"]
        assert (auths["rg.fr-par.scw.cloud"]["username"], auths["rg.fr-par.scw.cloud"]["password"]) == (
            "nologin",
            PULL_KEY,
        )

    return pulumi.Output.all(registry.endpoint, registry.docker_config_json).apply(check)


def test_a_private_registry_without_the_pull_key_secret_is_refused_naming_the_key(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> None:
    with pytest.raises(ValueError, match="needs the stack secret gpu-ci:registry_pull_secret_key"):
        ContainerRegistry("registry", _registry_args(dev_platform))


def test_docker_config_is_a_secret(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any], _event_loop: asyncio.AbstractEventLoop
) -> None:
    args = _registry_args(dev_platform, pull_secret_key=pulumi.Output.secret(PULL_KEY))
    registry = ContainerRegistry("registry", args)
    assert registry.docker_config_json is not None
    assert _event_loop.run_until_complete(registry.docker_config_json.is_secret()) is True


@pulumi.runtime.test
def test_adopted_public_registry_is_read_and_needs_no_key(
    pulumi_mocks: RecordingMonitor, dev_platform: dict[str, Any]
) -> pulumi.Output[Any]:
    dev_platform["registry"].update(existing=True, is_public=True)
    registry = ContainerRegistry("registry", _registry_args(dev_platform))
    assert registry.docker_config_json is None

    def check(values: list[Any]) -> None:
        assert values[1] == ENDPOINT
        assert [r.type for r in pulumi_mocks.recorded] == [T.REGISTRY]
        assert pulumi_mocks.mocks.invokes == [
            ("scaleway:registry/getNamespace:getNamespace", {"name": "gpu-ci", "region": "fr-par"})
        ]

    return pulumi.Output.all(registry.urn, registry.endpoint).apply(check)
