"""`check-ci --online`: GitLab's CI Lint API merges the pipeline, the same rules check the merged YAML.

Against tests/support/fake_gitlab.py (a real HTTP server answering in the API's shape), through python-gitlab.
"""

from __future__ import annotations

import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.fake_gitlab import FakeGitLab, Token, running
from support.paths import FIXTURES

from infra.__main__ import main
from infra.model.platform import load_platform
from infra.render.ci_templates import render_ci_templates

SAMPLE = FIXTURES / "training-repo"
SNIPPET = (
    "snippet-lint: {stage: build, script: [ruff], tags: [kapsule, gpu], variables: {KUBERNETES_MEMORY_LIMIT: 64Gi}}"
)


@pytest.fixture
def gitlab(dev_platform: dict[str, Any]) -> Iterator[FakeGitLab]:
    """The training project (its templates and supervised jobs on the default branch) and a snippets project."""
    state = FakeGitLab(
        tokens={
            "glpat-ml": Token(1, "ml-bot", frozenset({"api"})),
            "glpat-ro": Token(2, "ro", frozenset({"read_api"})),
        },
        projects={"ml-team/training": 7, "7": 7, "ml-team/ci-snippets": 9},
        repository_files={
            (7, ".gitlab/ci/gpu-ci-templates.yml"): render_ci_templates(load_platform(dev_platform)),
            (7, "ci/supervised.yml"): (SAMPLE / "ci" / "supervised.yml").read_text(),
            (9, "lint.yml"): SNIPPET + "\n",
        },
    )
    with running(state) as fake:
        yield fake


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The sample repository, also including a file of another project (unreadable offline)."""
    repo = Path(shutil.copytree(SAMPLE, tmp_path / "repo"))
    pipeline = repo / ".gitlab-ci.yml"
    document = yaml.safe_load(pipeline.read_text())
    document["include"].append({"project": "ml-team/ci-snippets", "file": "lint.yml"})
    pipeline.write_text(yaml.safe_dump(document))
    return repo


def _run(*args: str) -> int:
    return main(["check-ci", *args])


@pytest.fixture(autouse=True)
def _no_ci_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI_JOB_TOKEN", raising=False)
    monkeypatch.setenv("GITLAB_TOKEN", "glpat-ml")


def test_gitlab_merges_what_offline_cannot_and_the_rules_check_it(
    gitlab: FakeGitLab, repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(str(repo)) == 2
    assert capsys.readouterr().err.startswith("error: .gitlab-ci.yml: project include 'ml-team/ci-snippets'")

    assert _run(str(repo), "--online", "--gitlab-url", gitlab.url) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        ".gitlab-ci.yml (merged by GitLab): snippet-lint: KUBERNETES_MEMORY_LIMIT=64Gi is above the runner's "
        "memory_limit_overwrite_max_allowed=16Gi: the job would fail"
    ]
    assert captured.err == "1 violation(s) in 23 jobs\n"  # the sample's 22 and the snippet's
    (lint,) = gitlab.requests
    assert (lint.method, lint.path) == ("POST", "/api/v4/projects/ml-team%2Ftraining/ci/lint")
    assert lint.body == {"content": (repo / ".gitlab-ci.yml").read_text(), "dry_run": True, "include_jobs": True}


def test_the_project_and_ref_can_be_given(gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(str(SAMPLE), "--online", "--gitlab-url", gitlab.url, "--project", "7", "--ref", "feature") == 0
    assert capsys.readouterr().err == "22 jobs checked: no violation\n"
    assert gitlab.requests[-1].path == "/api/v4/projects/7/ci/lint"
    body = gitlab.requests[-1].body
    assert body is not None and body["ref"] == "feature"


def test_gitlabs_errors_and_warnings_are_passed_on(
    gitlab: FakeGitLab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = tmp_path / ".gitlab-ci.yml"
    pipeline.write_text("include: [{local: ci/nope.yml}]\njob: {script: [x]}\n")
    assert _run(str(pipeline), "--online", "--gitlab-url", gitlab.url) == 2
    assert capsys.readouterr().err == "error: Local file `ci/nope.yml` does not exist!\n"

    pipeline.write_text("job: {script: [x], rules: [{when: manual}]}\n")
    assert _run(str(pipeline), "--online", "--gitlab-url", gitlab.url) == 0
    assert capsys.readouterr().err.splitlines() == [
        "warning: GitLab: jobs:job may allow multiple pipelines to run for a single action due to `rules:when` "
        "clause with no `workflow:rules` - read more: https://docs.gitlab.com/ee/ci/troubleshooting.html"
        "#pipeline-warnings",
        "1 jobs checked: no violation",
    ]


@pytest.mark.parametrize(
    "case",
    [
        ("glpat-nope", "ml-team/training", "refused the token (401: 401 Unauthorized)"),
        ("glpat-ro", "ml-team/training", "may not use the CI Lint API of ml-team/training (403: it needs the api"),
        ("glpat-ml", "ml-team/nope", "has no project ml-team/nope, or the token cannot see it (404)"),
    ],
)
def test_refusals_are_one_line_and_exit_2(
    gitlab: FakeGitLab,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    case: tuple[str, str, str],
) -> None:
    token, project, message = case
    monkeypatch.setenv("GITLAB_TOKEN", token)
    assert _run(str(SAMPLE), "--online", "--gitlab-url", gitlab.url, "--project", project) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and message in err


def test_no_gitlab_and_no_token_are_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert _run(str(SAMPLE), "--online", "--gitlab-url", f"http://127.0.0.1:{port}") == 2
    assert capsys.readouterr().err == f"error: cannot reach GitLab at http://127.0.0.1:{port} (ConnectionError)\n"

    monkeypatch.delenv("GITLAB_TOKEN")
    assert _run(str(SAMPLE), "--online") == 2
    assert capsys.readouterr().err == (
        "error: --online needs a GitLab token: set GITLAB_TOKEN (CI_JOB_TOKEN inside a CI job)\n"
    )


def test_a_redirect_to_another_host_takes_no_token_there(
    gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    with running(FakeGitLab(tokens={"glpat-ml": Token(1, "ml-bot", frozenset({"api"}))})) as other:
        gitlab.redirect_to = other.url
        assert _run(str(SAMPLE), "--online", "--gitlab-url", gitlab.url) == 2
    assert other.requests == []
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("error: ") and f"sent the client on to {other.url}" in line and "glpat-ml" not in line


@pytest.mark.parametrize("valid", ["false", "true", 1, None])
def test_a_valid_that_is_not_true_is_no_verdict(
    gitlab: FakeGitLab, tmp_path: Path, capsys: pytest.CaptureFixture[str], valid: object
) -> None:
    """A hostile or broken CI Lint answer `valid: "false"` was read as valid (a non-empty string): "no violation"."""
    answer = {"valid": valid, "errors": [], "warnings": [], "merged_yaml": "job: {script: [x]}\n"}
    gitlab.answer = lambda method, path, query: (200, answer, {}) if path.endswith("/ci/lint") else None
    pipeline = tmp_path / ".gitlab-ci.yml"
    pipeline.write_text("job: {script: [x]}\n")
    assert _run(str(pipeline), "--online", "--gitlab-url", gitlab.url) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: GitLab does not say .gitlab-ci.yml is valid (valid: ") and len(err.splitlines()) == 1
