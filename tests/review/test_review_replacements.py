"""The replacement guard (`python -m infra guard-replacements`) on `pulumi preview --json` documents the real engine
printed (tests/data/preview/, written by tests/engine/test_engine_review.py: steps with op, urn, old/new state and
replaceReasons). There the engine replaces what it is told to (`--replace`: reason `id`); a field the real provider
replaces on is its Diff's to say (reason `nodeType`), which the provider doubles do not invent: an inline step here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.paths import DATA

from infra.__main__ import main
from infra.review.replacements import Finding, PreviewDocumentError, allowed, find_destructive

PREVIEWS = DATA / "preview"
POOL_URN = "urn:pulumi:dev::gpu-ci::gpu-ci:infra:KapsuleCluster$scaleway:kubernetes/pool:Pool::kapsule-ci-training"


def _load(name: str) -> object:
    return json.loads((PREVIEWS / f"{name}.json").read_text(encoding="utf-8"))


def test_a_pool_the_engine_replaces_is_one_replacement_with_its_reason() -> None:
    assert find_destructive(_load("pool-node-type-change")) == [Finding("replace", "Kapsule pool", POOL_URN, ("id",))]


def test_the_reason_a_provider_gives_is_named() -> None:
    steps = [
        {"op": op, "urn": POOL_URN, "replaceReasons": ["nodeType"]}
        for op in ("create-replacement", "replace", "delete-replaced")
    ]
    assert find_destructive({"steps": steps}) == [Finding("replace", "Kapsule pool", POOL_URN, ("nodeType",))]


def test_an_update_in_place_and_a_new_pool_are_not_guarded() -> None:
    assert find_destructive(_load("update-and-new-pool")) == []


def test_a_renamed_runner_namespace_and_a_removed_registration_are_found() -> None:
    found = find_destructive(_load("runner-namespace-and-registration"))
    assert [(f.action, f.kind, f.name, f.reasons) for f in found] == [
        ("delete", "GitLab runner registration", "runner-ci-training-mr-registration", ()),
        ("replace", "Kubernetes namespace", "runner-namespace", ("id",)),
    ]


def test_the_type_is_read_from_the_urn_when_a_step_has_no_state() -> None:
    step = {"op": "delete", "urn": POOL_URN}
    assert find_destructive({"steps": [step]}) == [Finding("delete", "Kapsule pool", POOL_URN)]


@pytest.mark.parametrize("document", [[], {"steps": {}}, {"steps": [{"op": "delete"}]}])
def test_a_document_that_is_not_a_preview_is_refused(document: object) -> None:
    with pytest.raises(PreviewDocumentError, match="not a `pulumi preview --json` document"):
        find_destructive(document)


@pytest.mark.parametrize(("value", "expected"), [("1", True), ("true", True), ("0", False), ("", False), (None, False)])
def test_only_an_explicit_yes_allows(value: str | None, expected: bool) -> None:
    assert allowed(value) is expected


def test_the_cli_refuses_a_pool_replacement_naming_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GPU_CI_ALLOW_REPLACE", raising=False)
    assert main(["guard-replacements", str(PREVIEWS / "pool-node-type-change.json")]) == 1
    err = capsys.readouterr().err
    assert f"error: the plan replaces Kapsule pool 'kapsule-ci-training' (because of id) [{POOL_URN}]" in err
    assert "GPU_CI_ALLOW_REPLACE=1" in err


def test_the_cli_lets_an_allowed_replacement_through_and_still_lists_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPU_CI_ALLOW_REPLACE", "1")
    assert main(["guard-replacements", str(PREVIEWS / "runner-namespace-and-registration.json")]) == 0
    captured = capsys.readouterr()
    assert "allowed: the plan deletes GitLab runner registration 'runner-ci-training-mr-registration'" in captured.err
    assert "letting 2 through" in captured.out


def test_the_cli_passes_a_harmless_plan_and_fails_on_bad_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["guard-replacements", str(PREVIEWS / "update-and-new-pool.json")]) == 0
    broken = tmp_path / "preview.json"
    broken.write_text("Previewing update (dev):\n", encoding="utf-8")
    assert main(["guard-replacements", str(broken)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {broken}: not JSON")
