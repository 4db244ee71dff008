"""Each rule the program also judges is written once (policy/policies/definitions.py): changing its default there
changes the pack's verdict, the spec's warning (or refusal) and recommend's refusal together.

The program is run once per case (what it registers does not depend on a rule's default); the verdicts are then
taken with the default as it is and as the case sets it, by monkeypatching the one constant.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

import pytest
from support.paths import ROOT

from infra.config.errors import SpecError
from infra.model.platform import load_platform
from infra.offline import policy_check
from infra.offline.harness import ProgramRun, run_program
from infra.offline.stack_config import StackConfig
from infra.sim.search import pack_refusals
from policy.policies import definitions
from policy.policies import pack as pol

Edit = Callable[[dict[str, Any]], None]


def _always_on_pool(p: dict[str, Any]) -> None:
    p["pools"]["ci-training"]["min_size"] = 1


def _as_it_is(p: dict[str, Any]) -> None:
    pass


def _public_registry(p: dict[str, Any]) -> None:
    p["registry"]["is_public"] = True


def _unprotected_secret(p: dict[str, Any]) -> None:
    p["ci"]["variables"] = {"HF_TOKEN": {"secret": "hf_token", "protected": False}}


Case = tuple[str, Edit, str, object]
"""(the rule, the spec edit, the constant of `definitions`, its value that flips every verdict)."""
CASES: list[Case] = [
    (definitions.GPU_POOL_SCALES_TO_ZERO, _always_on_pool, "DEFAULT_ALWAYS_ON_POOLS", ("ci-training",)),
    (definitions.RUNNER_POLL_TIMEOUT_COVERS_COLD_START, _as_it_is, "DEFAULT_MIN_POLL_TIMEOUT_SECONDS", 10**6),
    (definitions.REGISTRY_NAMESPACE_PRIVATE, _public_registry, "DEFAULT_ALLOWED_PUBLIC_NAMESPACES", ("gpu-ci",)),
    (definitions.CI_SECRET_VARIABLES_MASKED, _unprotected_secret, "DEFAULT_ALLOW_UNPROTECTED", ("HF_TOKEN",)),
]


def _verdicts(rule: str, run: ProgramRun, platform: dict[str, Any]) -> tuple[bool, bool, bool]:
    """(the pack refuses, the spec warns, recommend refuses): each by the rule's name."""
    pack = any(v.policy == rule for v in policy_check.policy_report(run, pack=pol))
    derived = load_platform(platform)
    spec = any(w.policy == rule for w in derived.warnings)
    recommend = any(p.policy == rule for p in pack_refusals(derived))
    return pack, spec, recommend


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_a_rules_default_moves_the_pack_the_spec_and_recommend_together(
    monkeypatch: pytest.MonkeyPatch, dev_stack: StackConfig, dev_platform: dict[str, Any], case: Case
) -> None:
    rule, edit, constant, value = case
    edit(dev_platform)
    run = run_program(dev_stack.with_values({"platform": dev_platform, "hf_token": "x"}, secret_keys=("hf_token",)))
    before = _verdicts(rule, run, dev_platform)
    assert before in {(True, True, True), (False, False, False)}, before
    monkeypatch.setattr(definitions, constant, value)
    after = _verdicts(rule, run, dev_platform)
    assert after == tuple(not verdict for verdict in before), after


def test_the_mps_rule_moves_the_pack_and_the_spec_together(
    monkeypatch: pytest.MonkeyPatch, dev_stack: StackConfig, dev_platform: dict[str, Any]
) -> None:
    """mps-pools-protected-runners is a refusal of the spec (recommend skips what the spec refuses)."""
    dev_platform["pools"]["ci-training"]["gpu_sharing"] = {"strategy": "mps", "replicas": 4}
    with pytest.raises(SpecError) as refused:
        load_platform(dev_platform)
    assert [p.policy for p in refused.value.problems] == [definitions.MPS_POOLS_PROTECTED_RUNNERS]
    monkeypatch.setattr(definitions, "MPS_ACCESS_LEVEL", "not_protected")
    load_platform(dev_platform)  # accepted
    run = run_program(dev_stack.with_values({"platform": dev_platform}))
    assert not [
        v for v in policy_check.policy_report(run, pack=pol) if v.policy == definitions.MPS_POOLS_PROTECTED_RUNNERS
    ]
    monkeypatch.undo()
    assert [v.resource for v in policy_check.policy_report(run, pack=pol) if v.policy == "mps-pools-protected-runners"]


def test_every_rule_defined_once_is_a_rule_of_the_pack() -> None:
    assert set(definitions.RULES) <= {p.name for p in pol.POLICIES}
    assert len(set(definitions.RULES)) == 5


def test_the_definitions_import_only_the_standard_library() -> None:
    """The program imports this module of the pack (and only this one): it must not bring pulumi_policy along."""
    tree = ast.parse((ROOT / "policy" / "policies" / "definitions.py").read_text(encoding="utf-8"))
    imported = {
        (alias.name if isinstance(node, ast.Import) else node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported <= {"__future__", "collections", "typing"}
