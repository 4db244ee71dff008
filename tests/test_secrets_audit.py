"""Secrets audit of the whole program: every secret value is found only where it belongs, and only as a secret.

Runs `__main__.py` with the dev stack plus a runner cache and a secret CI variable, then searches every
recorded resource's inputs (secrets masked: what the engine would store and show in clear), every stack
output, every log line, the rendered artifacts and the offline plan for the runner token, the registry
pull key, the cache keys and the variable's value.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest

from infra.offline.harness import ProgramRun, run_program
from infra.offline.mocks import MOCK_RUNNER_TOKEN_PREFIX, mask_secrets
from infra.offline.plan import plan_document
from infra.offline.stack_config import StackConfig
from infra.render.artifacts import render_artifacts
from infra.spec.platform import load_spec

CACHE_ACCESS_KEY = "SCWAUDITACCESSKEY0000"
CACHE_SECRET_KEY = "audit-cache-secret-key-value"
WANDB_KEY = "audit-wandb-api-key-value"
SECRETS = {
    "runner_cache_access_key": CACHE_ACCESS_KEY,
    "runner_cache_secret_key": CACHE_SECRET_KEY,
    "wandb_api_key": WANDB_KEY,
}


def _stack(dev_stack: StackConfig, dev_platform: dict[str, Any], *, as_secrets: bool = True) -> StackConfig:
    dev_platform["runner"]["cache"] = {"bucket": "gpu-ci-runner-cache"}
    dev_platform["ci"]["variables"] = {"WANDB_API_KEY": {"secret": "wandb_api_key"}}
    return dev_stack.with_values(
        {"platform": dev_platform, **SECRETS}, secret_keys=tuple(SECRETS) if as_secrets else ()
    )


@pytest.fixture
def audited(dev_stack: StackConfig, dev_platform: dict[str, Any]) -> tuple[StackConfig, ProgramRun]:
    stack = _stack(dev_stack, dev_platform)
    return stack, run_program(stack)


def _secret_values(run: ProgramRun) -> dict[str, str]:
    """Each secret value, by the resource (name) it may appear in."""
    token = run.one("gitlab:index/userRunner:UserRunner", "runner-registration").outputs["token"]
    pull_key = run.one("scaleway:iam/apiKey:ApiKey", "registry-pull-key").outputs["secretKey"]
    assert token.startswith(MOCK_RUNNER_TOKEN_PREFIX)
    return {
        token: "runner-token",
        pull_key: "runner-registry-pull",
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
            assert value not in shown, f"{owner}'s secret is in {resource.name}'s inputs in clear"
            if resource.name != owner:
                assert value not in plain, f"{owner}'s secret reached {resource.name}"
    for owner in set(secrets.values()):
        resource = next(r for r in run.resources if r.name == owner)
        assert any(v in json.dumps(resource.plain_inputs) for v, o in secrets.items() if o == owner), owner


def test_provider_outputs_holding_secrets_are_marked_secret(audited: tuple[StackConfig, ProgramRun]) -> None:
    _, run = audited
    runner = run.one("gitlab:index/userRunner:UserRunner", "runner-registration")
    assert "token" in runner.options["additional_secret_outputs"]
    key = run.one("scaleway:iam/apiKey:ApiKey", "registry-pull-key")
    assert "secretKey" in key.options["additional_secret_outputs"]


def test_no_secret_in_outputs_logs_artifacts_or_plan(audited: tuple[StackConfig, ProgramRun]) -> None:
    stack, run = audited
    secrets = _secret_values(run)
    spec = load_spec(stack.get("platform"))
    public = [
        *(json.dumps(out.value, default=str) for out in run.outputs.values() if not out.secret),
        *(message for _, message in run.logs),
        *render_artifacts(spec).values(),
        json.dumps(plan_document(stack, spec, run), default=str),
    ]
    for text in public:
        for value, owner in secrets.items():
            assert value not in text, f"{owner}'s secret leaked"
    assert {"runner_id", "registry", "ci_templates"} <= set(run.outputs)


def test_a_secret_stored_in_plain_text_is_refused(dev_stack: StackConfig, dev_platform: dict[str, Any]) -> None:
    run = run_program(_stack(dev_stack, dev_platform, as_secrets=False), check=False)
    assert isinstance(run.error, pulumi.RunError)
    assert str(run.error).startswith("gpu-ci:runner_cache_access_key is stored in plain text")
    assert run.resources == []


def test_a_missing_secret_stops_before_any_resource(dev_stack: StackConfig, dev_platform: dict[str, Any]) -> None:
    dev_platform["ci"]["variables"] = {"HF_TOKEN": {"secret": "hf_token"}}
    run = run_program(dev_stack.with_values({"platform": dev_platform}), check=False)
    assert isinstance(run.error, pulumi.ConfigMissingError)
    assert "gpu-ci:hf_token" in str(run.error) and "--secret" in str(run.error)
    assert run.resources == []
