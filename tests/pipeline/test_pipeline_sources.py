"""Pipeline sources: the list the held-slot runners hold a tag for is GitLab's, and check-ci warns about a rule
naming a source outside it (its jobs would reach no runner, and GitLab would drop them as stuck)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from support.paths import DATA

from infra.config.load import load_spec
from infra.model.platform import load_platform
from infra.model.routes import PIPELINE_SOURCES
from infra.pipeline.rules import CheckResult, check_pipeline
from infra.pipeline.sources import named_sources

GITLAB_SOURCES = DATA / "upstream" / "gitlab-pipeline-sources.txt"


def _gitlab_sources() -> list[str]:
    lines = GITLAB_SOURCES.read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_the_sources_are_gitlabs_each_once() -> None:
    assert sorted(PIPELINE_SOURCES) == sorted(_gitlab_sources())
    assert len(set(PIPELINE_SOURCES)) == len(PIPELINE_SOURCES)


def test_the_shared_runner_of_a_pool_with_held_slots_holds_every_sources_tag(dev_platform: dict[str, Any]) -> None:
    dev_platform["pools"]["ci-training"]["merge_request_slots"] = 1
    platform = load_platform(dev_platform)
    shared, held = platform.runners["ci-training"], platform.runners["ci-training-mr"]
    assert {f"ci-training-{source}" for source in _gitlab_sources()} <= set(shared.tags)
    assert [tag for tag in held.tags if tag.startswith("ci-training-")] == ["ci-training-merge_request_event"]


@pytest.fixture
def check(tmp_path: Path, dev_platform: dict[str, Any]) -> Any:
    """The dev stack with one L40S slot held for merge requests, and the templates as `pulumi up` commits them."""
    dev_platform["pools"]["ci-training"]["merge_request_slots"] = 1
    spec = load_spec(dev_platform)
    head = "include: [{project: ml-team/training, ref: main, file: .gitlab/ci/gpu-ci-templates.yml}]\nstages: [train]\n"

    def run(jobs: str) -> CheckResult:
        path = tmp_path / ".gitlab-ci.yml"
        path.write_text(head + textwrap.dedent(jobs))
        return check_pipeline(path, spec)

    return run


def test_rules_on_the_sources_gitlab_documents_say_nothing(check: Any) -> None:
    found = check(
        """
        train-validate-tft:
          extends: .train-validate-base
          script: [train]
          rules: [{if: '$CI_PIPELINE_SOURCE == "merge_request_event" || $CI_PIPELINE_SOURCE == "schedule"'}]
        """
    )
    assert found.violations == [] and found.warnings == []


def test_a_rule_naming_a_source_no_runner_holds_a_tag_for_is_a_warning(check: Any) -> None:
    found = check(
        """
        train-validate-tft:
          extends: .train-validate-base
          script: [train]
          rules: [{if: '"release_event" == $CI_PIPELINE_SOURCE'}, {if: '${CI_PIPELINE_SOURCE} != "push"'}]
        """
    )
    assert found.violations == []
    assert found.warnings == [
        ".gitlab-ci.yml: train-validate-tft: rules: compare CI_PIPELINE_SOURCE with 'release_event', a source pool "
        "ci-training's runners hold no tag for: in such a pipeline the job's tag ci-training-release_event reaches no "
        "runner, it stays pending and GitLab drops it as stuck after 60 min, twice retried (a typo, or a source "
        "GitLab added since: add it to PIPELINE_SOURCES in infra/model/routes.py, then `pulumi up`)"
    ]


def test_sources_are_read_from_nested_rules_either_side_of_the_comparison() -> None:
    rules = [
        {"if": '$CI_PIPELINE_SOURCE == "web"'},
        [{"if": "'api' != $CI_PIPELINE_SOURCE && $OTHER == \"x\""}],
        {"when": "never"},
        {"if": '$CI_PIPELINE_SOURCE_X == "nope"'},  # another variable
    ]
    assert named_sources(rules) == ["web", "api"]
