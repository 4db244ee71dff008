"""The registry pull key's committed placeholder (docs/security.md, "Bootstrap: the registry pull key"): a plain value
the CLI hands on, so the program names it where `pulumi preview` and `up` stop (tests/engine/test_engine_lifecycle.py
runs that on the real CLI), and `plan`, which cannot decrypt a stack secret either, warns at it and goes on."""

from __future__ import annotations

from typing import Any

import yaml
from support.paths import ROOT

from infra.config.registry import PULL_KEY_PLACEHOLDER, REGISTRY_PULL_SECRET_CONFIG, committed_placeholder
from infra.offline.harness import ProgramRun, run_program
from infra.offline.mocks import is_secret
from infra.offline.stack_config import StackConfig

KEY = f"gpu-ci:{REGISTRY_PULL_SECRET_CONFIG}"


def test_the_dev_stack_commits_the_placeholder() -> None:
    config = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text(encoding="utf-8"))["config"]
    assert config[KEY] == PULL_KEY_PLACEHOLDER


def test_the_placeholder_is_named_with_why_and_the_command_that_replaces_it() -> None:
    why = committed_placeholder(KEY, PULL_KEY_PLACEHOLDER)
    assert why is not None and why.startswith(f"{KEY}='bootstrap-not-done': the stack file's placeholder, not a key")
    assert "by someone with IAM rights" in why and '"Bootstrap: the registry pull key"' in why
    assert why.endswith("`pulumi config set --secret registry_pull_secret_key <its secret part>`")
    assert "\\" not in why and "\t" not in why
    assert committed_placeholder(KEY, "a-real-key") is None
    assert committed_placeholder("gpu-ci:wandb_api_key", PULL_KEY_PLACEHOLDER) is None


def test_plan_warns_at_it_and_hands_the_program_a_secret_it_cannot_read(dev_run: ProgramRun) -> None:
    assert [m for level, m in dev_run.logs if level == "warning" and m.startswith(KEY)] == [
        committed_placeholder(KEY, PULL_KEY_PLACEHOLDER)
    ]
    assert dev_run.error is None
    [pull] = [r for r in dev_run.resources if r.type == "kubernetes:core/v1:Secret" and "pull" in r.name]
    assert is_secret(pull.inputs["stringData"])  # the pull Secret built from it stays a Pulumi secret
    assert PULL_KEY_PLACEHOLDER not in str(pull.inputs)


def test_no_warning_where_the_platform_needs_no_pull_key(dev_stack: StackConfig, dev_platform: dict[str, Any]) -> None:
    dev_platform["registry"]["is_public"] = True
    run = run_program(dev_stack.with_values({"platform": dev_platform}))
    assert [m for _, m in run.logs if KEY in m] == [  # no bootstrap warning: only that nothing reads the key now
        f"Pulumi.dev.yaml: {KEY}: nothing reads this key (the program reads gpu-ci:platform): name it in the spec or "
        f"remove it (pulumi config rm {KEY})"
    ]


def test_a_real_key_replaces_it_and_the_warning_goes(dev_stack: StackConfig) -> None:
    run = run_program(dev_stack.with_values({REGISTRY_PULL_SECRET_CONFIG: "a-real-key"}, secret_keys=(KEY,)))
    assert not [m for _, m in run.logs if KEY in m]
