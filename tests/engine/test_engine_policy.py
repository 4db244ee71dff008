"""The policy pack under the real engine: `pulumi preview --policy-pack` refuses what `plan`'s verdict refuses, rule by
rule and resource by resource, and passes what it passes.

Each case is a fresh project and stack: the dev stack, the dev stack with every secret the spec can name, the specs the
program accepts and the pack refuses (tests/support/policy.py), and one of them allowed by `--policy-pack-config`.
The engine's violations are read from its events (`preview --json`, streamed: each `policyEvent`), plan's from the same
program run under the mocks (`infra.offline.policy_check.policy_report`, what `python -m infra plan` prints).
"""

from __future__ import annotations

import copy
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.engine import POLICY_PACK, EngineProject
from support.policy import PACK_REFUSALS, PACK_SECRETS

from infra.offline.harness import run_program
from infra.offline.policy_check import policy_report
from infra.offline.stack_config import load_stack_config

BASE_SECRETS = {"gitlab:token": "glpat-engine-policy-token", "registry_pull_secret_key": "engine-policy-pull-key"}


def _dev() -> dict[str, Any]:
    document = yaml.safe_load((Path(__file__).resolve().parents[2] / "Pulumi.dev.yaml").read_text(encoding="utf-8"))
    return dict(document["config"]["gpu-ci:platform"])


def _with_cache_and_secret_variable(platform: dict[str, Any]) -> None:
    platform["runner"]["cache"] = {"bucket": "gpu-ci-runner-cache"}
    platform["ci"]["variables"] = {"WANDB_API_KEY": {"secret": "wandb_api_key"}, "HYPEROPT_SEED": "7"}


CACHE_SECRETS = {
    "runner_cache_access_key": "SCWENGINEPOLICYKEY00",
    "runner_cache_secret_key": "s",
    "wandb_api_key": "k",
}


@dataclass(frozen=True)
class Case:
    id: str
    edit: Any = None
    secrets: dict[str, str] | None = None
    config: dict[str, Any] | None = None
    """`--policy-pack-config`: the pack's config, as plan's verdict takes it too."""


CASES = [
    Case("dev"),
    Case("cache-and-secret-variable", _with_cache_and_secret_variable, CACHE_SECRETS),
    *(Case(name, edit, PACK_SECRETS) for name, edit in PACK_REFUSALS.items()),
    Case(
        "always-on-gpu-pool-allowed",
        PACK_REFUSALS["gpu-min-size-1"],
        config={"gpu-pool-scales-to-zero": {"always_on_pools": ["ci-training"]}},
    ),
]


@dataclass(frozen=True)
class Verdicts:
    engine: list[tuple[str, str, str]]
    """(policy, resource name, level) of each violation the engine reported."""
    plan: list[tuple[str, str, str]]
    returncode: int
    output: str


def _verdicts(workdir: Path, case: Case) -> Verdicts:
    project = EngineProject(workdir)
    platform = copy.deepcopy(_dev())
    if case.edit:
        case.edit(platform)
    project.set_platform(platform)
    secrets = {**BASE_SECRETS, **(case.secrets or {})}
    project.init_stack(secrets)
    args = ["--policy-pack", POLICY_PACK]
    if case.config is not None:
        (workdir / "policy-config.json").write_text(json.dumps(case.config), encoding="utf-8")
        args += ["--policy-pack-config", str(workdir / "policy-config.json")]
    result, events = project.preview_events(*args)
    engine = sorted(
        (
            e["policyEvent"]["policyName"],
            e["policyEvent"].get("resourceUrn", "").split("::")[-1],
            e["policyEvent"]["enforcementLevel"],
        )
        for e in events
        if "policyEvent" in e
    )
    offline = load_stack_config("dev", path=project.stack_file())
    run = run_program(offline.with_values(secrets, secret_keys=tuple(secrets)))
    plan = sorted((v.policy, v.resource, v.level) for v in policy_report(run, case.config))
    return Verdicts(engine, plan, result.returncode, result.output)


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Verdicts]:
    """Every case's preview, two at a time."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        found = pool.map(lambda case: _verdicts(tmp_path_factory.mktemp(f"policy-{case.id}"), case), CASES)
        return {case.id: verdict for case, verdict in zip(CASES, found, strict=True)}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_engine_runs_the_pack_as_plan_judges(verdicts: dict[str, Verdicts], case: Case) -> None:
    verdict = verdicts[case.id]
    assert verdict.engine == verdict.plan, verdict.output
    mandatory = [v for v in verdict.engine if v[2] == "mandatory"]
    assert (verdict.returncode != 0) == bool(mandatory), verdict.output
    if case.id in PACK_REFUSALS:
        assert mandatory, "a spec the pack refuses passed the real preview"


def test_the_pack_refuses_each_spec_by_its_own_rule(verdicts: dict[str, Verdicts]) -> None:
    rules = {case: {policy for policy, _, _ in verdicts[case].engine} for case in PACK_REFUSALS}
    assert rules == {
        "gpu-min-size-1": {"gpu-pool-scales-to-zero"},
        "fixed-gpu-pool": {"gpu-pool-scales-to-zero"},
        "public-registry": {"registry-namespace-private"},
        "short-poll": {"runner-poll-timeout-covers-cold-start"},
        "unmasked-secret": {"ci-secret-variables-masked"},
    }
