"""Secrets audit of the whole program: every secret value is found only where it belongs, and only as a secret.

Runs `__main__.py` with the dev stack plus a runner cache and a secret CI variable, then searches every
recorded resource's inputs (secrets masked: what the engine would store and show in clear), every stack
output, every log line, the rendered artifacts and the offline plan for the runner token, the registry
pull key, the cache keys and the variable's value.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pulumi
import pytest

from infra.cli.plan import plan_document, render_plan
from infra.cloud.names import T
from infra.offline.harness import ProgramRun, run_program
from infra.offline.mocks import MOCK_KUBECONFIG_PREFIX, MOCK_RUNNER_TOKEN_PREFIX, is_secret, mask_secrets
from infra.offline.stack_config import StackConfig
from infra.render.artifacts import render_artifacts

CACHE_ACCESS_KEY = "SCWAUDITACCESSKEY0000"
CACHE_SECRET_KEY = "audit-cache-secret-key-value"
WANDB_KEY = "audit-wandb-api-key-value"
PULL_KEY = "audit-registry-pull-key-value"
SECRETS = {
    "registry_pull_secret_key": PULL_KEY,
    "runner_cache_access_key": CACHE_ACCESS_KEY,
    "runner_cache_secret_key": CACHE_SECRET_KEY,
    "wandb_api_key": WANDB_KEY,
}
PROVIDER_SECRETS = {
    "scaleway:access_key": "SCWAUDITPROVIDERKEY00",
    "scaleway:secret_key": "audit-scaleway-secret-key-value",
    "gitlab:token": "glpat-audit-gitlab-provider-token",
}
"""Provider credentials: read by the provider plugins from the stack config, never by the program."""


def _stack(dev_stack: StackConfig, dev_platform: dict[str, Any], *, as_secrets: bool = True) -> StackConfig:
    dev_platform["runner"]["cache"] = {"bucket": "gpu-ci-runner-cache"}
    dev_platform["ci"]["variables"] = {"WANDB_API_KEY": {"secret": "wandb_api_key"}}
    return dev_stack.with_values(
        {"platform": dev_platform, **SECRETS, **PROVIDER_SECRETS},
        secret_keys=(*SECRETS, *PROVIDER_SECRETS) if as_secrets else (),
    )


@pytest.fixture(scope="module")
def audited(dev_stack: StackConfig) -> tuple[StackConfig, ProgramRun]:
    """One audited run, shared: the tests below only read what it registered, exported and logged."""
    stack = _stack(dev_stack, copy.deepcopy(dev_stack.get("platform")))
    return stack, run_program(stack)


def _secret_values(run: ProgramRun) -> dict[str, str]:
    """Each secret value, by the resource (name) it may appear in."""
    token = run.one(T.USER_RUNNER, "runner-registration").outputs["token"]
    kubeconfig = run.one(T.CLUSTER, "kapsule-cluster").outputs["kubeconfigs"][0]
    assert kubeconfig["configFile"].startswith(MOCK_KUBECONFIG_PREFIX)
    assert token.startswith(MOCK_RUNNER_TOKEN_PREFIX)
    return {
        kubeconfig["configFile"]: "kapsule-k8s",
        token: "runner-token",
        PULL_KEY: "runner-registry-pull",
        CACHE_ACCESS_KEY: "runner-cache",
        CACHE_SECRET_KEY: "runner-cache",
        WANDB_KEY: "gitlab-ci-var-WANDB_API_KEY",
    }


def test_secrets_appear_only_in_their_resource_and_only_as_secrets(audited: tuple[StackConfig, ProgramRun]) -> None:
    _, run = audited
    secrets = _secret_values(run)
    for resource in run.resources:
        shown = json.dumps(mask_secrets(resource.inputs), default=str)
        plain = json.dumps(resource.plain_inputs, default=str)
        for value, owner in secrets.items():
            assert _in_json(value, shown) is False, f"{owner}'s secret is in {resource.name}'s inputs in clear"
            if resource.name != owner:
                assert _in_json(value, plain) is False, f"{owner}'s secret reached {resource.name}"
    for owner in set(secrets.values()):
        resource = next(r for r in run.resources if r.name == owner)
        assert any(_in_json(v, json.dumps(resource.plain_inputs)) for v, o in secrets.items() if o == owner), owner


def _in_json(value: str, text: str) -> bool:
    """Whether `value` occurs in JSON `text` (multi-line values are escaped there)."""
    return json.dumps(value)[1:-1] in text


def test_provider_outputs_holding_secrets_are_marked_secret(audited: tuple[StackConfig, ProgramRun]) -> None:
    _, run = audited
    runner = run.one(T.USER_RUNNER, "runner-registration")
    assert "token" in runner.options["additional_secret_outputs"]
    assert not [r.type for r in run.resources if r.type.startswith("scaleway:iam/")]  # no IAM right needed


def test_no_secret_in_outputs_logs_artifacts_or_plan(audited: tuple[StackConfig, ProgramRun]) -> None:
    stack, run = audited
    secrets = _secret_values(run)
    platform, day = run.namespace["platform"], run.namespace["day"]
    artifacts = render_artifacts(platform, day)
    public = [
        *(json.dumps(out.value, default=str) for out in run.outputs.values() if not out.secret),
        *(message for _, message in run.logs),
        *artifacts.values(),
        json.dumps(plan_document(stack, platform, day, run), default=str),
        render_plan(stack, platform, day, run, out=None, artifacts=artifacts),
    ]
    for text in public:
        for value, owner in secrets.items():
            assert value not in text and not _in_json(value, text), f"{owner}'s secret leaked"
        assert MOCK_KUBECONFIG_PREFIX.splitlines()[-1] not in text, "the kubeconfig leaked"
        for key, value in PROVIDER_SECRETS.items():
            assert value not in text, f"provider credential {key} leaked"


def test_provider_credentials_reach_no_resource(audited: tuple[StackConfig, ProgramRun]) -> None:
    _, run = audited
    everything = json.dumps([r.plain_inputs for r in run.resources] + [o.value for o in run.outputs.values()])
    for key, value in PROVIDER_SECRETS.items():
        assert value not in everything, f"{key} reached a resource or an output"


def test_kubeconfig_is_exported_only_as_a_secret(audited: tuple[StackConfig, ProgramRun]) -> None:
    _, run = audited
    assert run.outputs["kubeconfig"].secret is True
    provider = run.one(T.K8S_PROVIDER, "kapsule-k8s")
    assert is_secret(provider.inputs["kubeconfig"])
    for name, output in run.outputs.items():
        if name != "kubeconfig":
            assert not _in_json(MOCK_KUBECONFIG_PREFIX, json.dumps(output.value, default=str)), name


def test_every_ci_variable_holding_a_secret_is_masked_and_protected(audited: tuple[StackConfig, ProgramRun]) -> None:
    _, run = audited
    variables = [r for r in run.resources if r.type in (T.PROJECT_VARIABLE, T.GROUP_VARIABLE)]
    secret_ones = [r for r in variables if is_secret(r.inputs["value"])]
    assert [r.plain_inputs["key"] for r in secret_ones] == ["WANDB_API_KEY"]
    for variable in secret_ones:
        assert variable.plain_inputs["masked"] is True and variable.plain_inputs["protected"] is True
    for variable in variables:
        if not variable.plain_inputs.get("masked"):
            assert not is_secret(variable.inputs["value"]), variable.name


def test_no_config_map_or_helm_value_holds_a_secret(audited: tuple[StackConfig, ProgramRun]) -> None:
    _, run = audited
    for resource in run.resources:
        if resource.type in (T.CONFIG_MAP, T.HELM_RELEASE):
            assert "[secret]" not in json.dumps(mask_secrets(resource.inputs)), resource.name
    assert {"runner_ids", "registry", "ci_templates"} <= set(run.outputs)


def test_a_secret_stored_in_plain_text_is_refused(dev_stack: StackConfig, dev_platform: dict[str, Any]) -> None:
    run = run_program(_stack(dev_stack, dev_platform, as_secrets=False), check=False)
    assert isinstance(run.error, pulumi.RunError)
    assert str(run.error).startswith(
        "Pulumi.dev.yaml: gpu-ci:registry_pull_secret_key is stored in plain text"
    )  # the first, sorted
    assert run.resources == []


def test_a_missing_secret_stops_before_any_resource(dev_stack: StackConfig, dev_platform: dict[str, Any]) -> None:
    dev_platform["ci"]["variables"] = {"HF_TOKEN": {"secret": "hf_token"}}
    run = run_program(dev_stack.with_values({"platform": dev_platform}), check=False)
    assert str(run.error) == (  # one line, not the SDK's two (the second a tab)
        "Pulumi.dev.yaml: gpu-ci:hf_token: missing: the spec reads this stack secret: pulumi config set --secret "
        "hf_token ..."
    )
    assert run.resources == []
