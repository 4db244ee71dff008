"""The offline diff tells the truth, and the review tools read real previews.

On a deployed dev stack, each spec change below is previewed by the real engine (`pulumi preview --diff --json`, and
the text a merge-request note quotes) and compared with `plan-diff` of the offline plans before and after: the same
resources are created, deleted and changed, in the same input fields. What the doubles cannot say, `plan-diff`'s
`REPLACE_ON` (a field the real provider replaces on, e.g. a pool's node type) shows as an update here: only the real
provider's Diff reports that replacement (docs/operations.md).

The preview documents `guard-replacements` is tested on (tests/data/preview/) are this module's output, normalised
(no timings, stack traces or machine paths): `GPU_CI_WRITE_PREVIEWS=1 python -m pytest -n0
tests/engine/test_engine_review.py` writes them again; otherwise a test fails when they differ from the engine's.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from support.engine import EngineProject, Result
from support.paths import DATA
from support.plans import plan_json

from infra.offline.harness import run_program
from infra.offline.stack_config import StackConfig, load_stack_config
from infra.review.diff import PlanDiff, diff_plans
from infra.review.note import summarize
from infra.review.replacements import find_destructive

PREVIEWS = DATA / "preview"
WRITE = os.environ.get("GPU_CI_WRITE_PREVIEWS") == "1"
SECRETS = {"gitlab:token": "glpat-engine-review-token", "registry_pull_secret_key": "engine-review-pull-key"}
POOL_URN = "urn:pulumi:dev::gpu-ci::gpu-ci:infra:KapsuleCluster$scaleway:kubernetes/pool:Pool::kapsule-ci-training"
NAMESPACE_URN = "urn:pulumi:dev::gpu-ci::gpu-ci:infra:GitlabRunner$kubernetes:core/v1:Namespace::runner-namespace"

Edit = Callable[[dict[str, Any]], None]


def _bigger_training_pool_and_a_cpu_pool(platform: dict[str, Any]) -> None:
    platform["pools"]["ci-training"]["max_size"] = 2
    platform["pools"]["ci-cpu"] = {"node_type": "PRO2-XXS", "zone": "fr-par-2", "min_size": 0, "max_size": 1}


def _training_on_h100(platform: dict[str, Any]) -> None:
    platform["pools"]["ci-training"]["node_type"] = "H100-1-80G"


def _runner_namespace_renamed(platform: dict[str, Any]) -> None:
    platform["runner"]["namespace"] = "gitlab-runners"


def _newer_chart(platform: dict[str, Any]) -> None:
    platform["runner"]["chart_version"] = "0.87.0"


def _held_slots(platform: dict[str, Any]) -> None:
    platform["pools"]["ci-training"]["merge_request_slots"] = 1


@dataclass(frozen=True)
class Scenario:
    name: str
    edit: Edit
    replace: tuple[str, ...] = ()
    """`--replace URN`: the engine replaces these (what a real provider's Diff does for a ForceNew field)."""
    fixture: str | None = None
    """The preview document's name in tests/data/preview/, if it is one."""


SCENARIOS = [
    Scenario("bigger-pool-and-new-pool", _bigger_training_pool_and_a_cpu_pool, fixture="update-and-new-pool"),
    Scenario("node-type", _training_on_h100),
    Scenario("namespace", _runner_namespace_renamed),
    Scenario("chart", _newer_chart),
    Scenario("held-slots", _held_slots),
]
"""Spec changes against the deployed dev stack, each compared with plan-diff."""

REPLACEMENTS = [
    Scenario("pool-replaced", _training_on_h100, (POOL_URN,), fixture="pool-node-type-change"),
]
"""Against the dev stack: a pool the engine is asked to replace (protected: the preview fails on it)."""

AFTER_HELD_SLOTS = [
    Scenario(
        "namespace-and-registration", _runner_namespace_renamed, (NAMESPACE_URN,), "runner-namespace-and-registration"
    ),
]
"""Against the dev stack deployed with held slots: the spec without them (a registration deleted) and the runner
namespace renamed and replaced."""


@dataclass
class Previewed:
    document: dict[str, Any]
    text: Result
    plan_diff: PlanDiff | None


def _platform(edit: Edit | None = None) -> dict[str, Any]:
    platform = copy.deepcopy(DEV_PLATFORM)
    if edit:
        edit(platform)
    return platform


DEV_PLATFORM: dict[str, Any] = yaml.safe_load((DATA.parent.parent / "Pulumi.dev.yaml").read_text(encoding="utf-8"))[
    "config"
]["gpu-ci:platform"]


def _offline(project: EngineProject) -> StackConfig:
    return load_stack_config("dev", path=project.stack_file()).with_values(SECRETS, secret_keys=tuple(SECRETS))


@pytest.fixture(scope="module")
def previewed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Previewed]:
    project = EngineProject(tmp_path_factory.mktemp("engine-review"))
    project.init_stack(SECRETS)
    project.pulumi("up", "--yes", "--skip-preview")
    base = plan_json(_offline(project), run_program(_offline(project)))
    found: dict[str, Previewed] = {}

    def preview(scenario: Scenario, base_plan: dict[str, Any] | None) -> None:
        project.set_platform(_platform(scenario.edit))
        extra = [arg for urn in scenario.replace for arg in ("--replace", urn)]
        document = project.pulumi("preview", "--diff", "--json", *extra, check=False).json()
        text = project.pulumi("preview", "--diff", *extra, check=False)
        head = plan_json(_offline(project), run_program(_offline(project))) if base_plan is not None else None
        found[scenario.name] = Previewed(document, text, diff_plans(base_plan, head) if base_plan and head else None)

    for scenario in SCENARIOS:
        preview(scenario, base)
    for scenario in REPLACEMENTS:
        preview(scenario, None)
    project.set_platform(_platform(_held_slots))
    project.pulumi("up", "--yes", "--skip-preview")
    for scenario in AFTER_HELD_SLOTS:
        preview(scenario, None)
    return found


def _engine_changes(document: dict[str, Any]) -> dict[str, tuple[str, frozenset[str]]]:
    """URN -> (create, delete or update, the top-level input fields changed) of each step that changes something."""
    changes = {}
    for step in document["steps"]:
        if step["op"] == "same" or step["urn"].endswith("::gpu-ci-dev"):
            continue
        op = {"create": "create", "delete": "delete"}.get(step["op"], "update")
        fields = frozenset(step.get("diffReasons") or ()) if op == "update" else frozenset()
        changes[step["urn"]] = (op, fields)
    return changes


def _top(path: str) -> str:
    return path.split(".", 1)[0].split("[", 1)[0]


def _offline_changes(diff: PlanDiff) -> dict[str, tuple[str, frozenset[str]]]:
    changes = {}
    for resource in diff.resources:
        op = "update" if resource.op == "replace" else resource.op  # REPLACE_ON: only a real provider says so
        fields = frozenset(_top(c.path) for c in resource.inputs) if op == "update" else frozenset()
        if op != "update" or fields:  # an options-only change (protect, ignore_changes) is no provider diff
            changes[resource.urn] = (op, fields)
    return changes


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_plan_diff_changes_what_the_preview_changes(previewed: dict[str, Previewed], scenario: Scenario) -> None:
    found = previewed[scenario.name]
    assert found.plan_diff is not None
    assert _engine_changes(found.document) == _offline_changes(found.plan_diff)
    assert _engine_changes(found.document), "a scenario that changes nothing proves nothing"


def test_a_field_the_provider_replaces_on_is_a_replacement_offline_and_an_update_to_the_doubles(
    previewed: dict[str, Previewed],
) -> None:
    diff = previewed["node-type"].plan_diff
    assert diff is not None
    (pool,) = [r for r in diff.resources if r.urn == POOL_URN]
    assert (pool.op, pool.replace_reasons, pool.protected) == ("replace", ("nodeType",), True)
    assert _engine_changes(previewed["node-type"].document)[POOL_URN] == ("update", frozenset({"nodeType"}))


@pytest.mark.parametrize("scenario", [*SCENARIOS, *REPLACEMENTS, *AFTER_HELD_SLOTS], ids=lambda s: s.name)
def test_the_note_summary_of_the_preview_text_is_the_engines_count(
    previewed: dict[str, Previewed], scenario: Scenario
) -> None:
    found = previewed[scenario.name]
    summary = summarize(found.text.stdout)
    assert summary.found, found.text
    counts = {op: n for op, n in found.document["changeSummary"].items() if op != "same"}
    assert summary.ops == counts
    assert summary.unchanged == found.document["changeSummary"].get("same", 0)


def test_a_protected_pool_the_engine_would_replace_stops_the_preview_and_the_guard(
    previewed: dict[str, Previewed],
) -> None:
    document = previewed["pool-replaced"].document
    errors = [d["message"] for d in document["diagnostics"] if d["severity"] == "error"]
    assert any("marked for protection" in e and POOL_URN in e for e in errors)
    assert [(f.action, f.urn) for f in find_destructive(document)] == [("replace", POOL_URN)]


def test_a_deleted_registration_and_a_replaced_namespace_are_guarded(previewed: dict[str, Previewed]) -> None:
    found = find_destructive(previewed["namespace-and-registration"].document)
    assert [(f.action, f.kind, f.name) for f in found] == [
        ("delete", "GitLab runner registration", "runner-ci-training-mr-registration"),
        ("replace", "Kubernetes namespace", "runner-namespace"),
    ]


def normalised(document: dict[str, Any]) -> dict[str, Any]:
    """A preview document as a fixture: steps in URN order, without timings, stack traces, source positions,
    creation times, provider ids, dependency order, or the doubles' "using pulumi-resource-X from $PATH"
    warnings (a machine's paths)."""
    transient = {"stackTrace", "sourcePosition", "created", "modified"}

    def state(value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        kept = {k: v for k, v in value.items() if k not in transient}
        if "dependencies" in kept:  # in the order the program's outputs resolved
            kept["dependencies"] = sorted(kept["dependencies"])
        if "propertyDependencies" in kept:
            kept["propertyDependencies"] = {k: sorted(v) for k, v in kept["propertyDependencies"].items()}
        return kept

    steps = [
        {k: state(v) if k in ("oldState", "newState") else v for k, v in step.items()}
        for step in sorted(document["steps"], key=lambda s: (s["urn"], s["op"]))
    ]
    diagnostics = [d for d in document["diagnostics"] if "from $PATH at" not in d["message"]]
    text = json.dumps({**document, "steps": steps, "diagnostics": diagnostics, "duration": 0})
    return json.loads(PROVIDER_ID.sub(r"\1<provider-id>", text))  # the engine makes a new one per deployment


PROVIDER_ID = re.compile(r"(pulumi:providers:[^\"]*?::)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
"""A provider reference's id (after the provider's URN)."""


@pytest.mark.parametrize(
    "scenario", [s for s in [*SCENARIOS, *REPLACEMENTS, *AFTER_HELD_SLOTS] if s.fixture], ids=lambda s: s.fixture
)
def test_the_preview_fixtures_are_what_the_engine_prints(previewed: dict[str, Previewed], scenario: Scenario) -> None:
    path = PREVIEWS / f"{scenario.fixture}.json"
    document = normalised(previewed[scenario.name].document)
    if WRITE:
        path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    assert json.loads(path.read_text(encoding="utf-8")) == document, f"GPU_CI_WRITE_PREVIEWS=1 rewrites {path.name}"


def test_mr_note_quotes_the_real_preview_and_its_count(
    previewed: dict[str, Previewed], tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from support.plans import run_command

    monkeypatch.delenv("CI_COMMIT_SHA", raising=False)
    text = previewed["bigger-pool-and-new-pool"].text.stdout
    path = tmp_path / "preview.txt"
    path.write_text(text, encoding="utf-8")
    run = run_command("mr-note", "--preview", str(path), "--stack", "dev", "--head-sha", "a" * 40, "--dry-run")
    assert run.code == 0, run.err
    counts = previewed["bigger-pool-and-new-pool"].document["changeSummary"]
    assert f"{counts['create']} to create, {counts['update']} to update, {counts['same']} unchanged" in run.out
    assert "maxSize" in run.out and "ci-cpu" in run.out
    assert not [secret for secret in SECRETS.values() if secret in run.out]
