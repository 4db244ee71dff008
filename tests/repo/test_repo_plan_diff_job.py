"""The `plan-diff` job of .gitlab-ci.yml, run for real: its script lines in bash, in a git repository with
a base and a head commit, with GitLab CI's variables, posting to the GitLab of tests/support/fake_gitlab.py.

This exercises `.ci/plan-at` (a worktree of the base), `plan --json` on both sides, `plan-diff` and
`mr-note` exactly as the pipeline chains them. Only the job's `before_script` (creating venv/ with pip)
is replaced: venv/bin/python runs this interpreter.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from support.day import SUITE_DAY_ENV
from support.fake_gitlab import FakeGitLab, Token, running
from support.paths import ROOT
from support.repos import git, venv_python

from infra.review.note import marker

BOT = Token(user_id=900, username="project_42_bot", scopes=frozenset({"api"}))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose head raises ci-training's max_size over its base; venv/ runs this Python."""
    repo = tmp_path / "gpu-ci"
    ignore = shutil.ignore_patterns("__pycache__")
    for name in ("infra", ".ci", "policy"):
        shutil.copytree(ROOT / name, repo / name, ignore=ignore)
    for name in ("__main__.py", "Pulumi.yaml", "Pulumi.dev.yaml"):
        shutil.copy2(ROOT / name, repo / name)
    git(repo, "init", "--quiet")
    git(repo, "add", ".")
    git(repo, "commit", "--quiet", "-m", "base")
    stack = yaml.safe_load((repo / "Pulumi.dev.yaml").read_text(encoding="utf-8"))
    stack["config"]["gpu-ci:platform"]["pools"]["ci-training"]["max_size"] = 2
    (repo / "Pulumi.dev.yaml").write_text(yaml.safe_dump(stack), encoding="utf-8")
    git(repo, "commit", "--quiet", "-am", "ci-training: up to 2 nodes")
    venv_python(repo)
    return repo


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    state = FakeGitLab(tokens={"bot-token": BOT}, projects={"42": 42})
    with running(state) as server:
        yield server


def test_plan_diff_job_posts_the_offline_diff(repo: Path, gitlab: FakeGitLab) -> None:
    ci = yaml.safe_load((ROOT / ".gitlab-ci.yml").read_text(encoding="utf-8"))
    base, head = git(repo, "rev-parse", "HEAD~1"), git(repo, "rev-parse", "HEAD")
    gitlab.merge_requests[(42, 7)] = head
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(repo.parent),
        "NO_PROXY": "127.0.0.1",
        **SUITE_DAY_ENV,  # its two plans check versions against the suite's day, not the calendar's
        **{k: str(v) for k, v in ci["variables"].items() if not str(v).startswith("$")},
        **ci["plan-diff"]["variables"],
        "PULUMI_STACK": ci[".stacks"]["parallel"]["matrix"][0]["PULUMI_STACK"][0],  # the job's matrix
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_SERVER_URL": gitlab.url,
        "CI_MERGE_REQUEST_PROJECT_ID": "42",
        "CI_MERGE_REQUEST_IID": "7",
        "CI_MERGE_REQUEST_DIFF_BASE_SHA": base,
        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
        "CI_COMMIT_SHA": head,
        "CI_COMMIT_SHORT_SHA": head[:8],
        "CI_JOB_URL": "https://gitlab.example.com/platform/gpu-ci/-/jobs/77",
        "GITLAB_NOTE_TOKEN": "bot-token",
    }
    script = "\n".join(ci["plan-diff"]["script"])
    result = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", script], cwd=repo, env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr

    diff = (repo / "plan-diff.txt").read_text(encoding="utf-8")
    assert diff.startswith(f"Offline plan diff of stack 'dev': main@{base[:8]} -> {head[:8]}\n")
    assert "~ scaleway:kubernetes/pool:Pool  kapsule-ci-training  (update)\n" in diff
    assert "~    maxSize: 1 => 2\n" in diff
    # A second node doubles the pool's job slots: its own runner's `concurrent` changes, and no other runner's.
    assert "~ kubernetes:helm.sh/v3:Release  runner-ci-training-release  (update)\n" in diff
    assert "runner-release  (update)" not in diff
    unchanged = len(json.loads((repo / "plan-base.json").read_text(encoding="utf-8"))["resources"]) - 2
    assert f"Resources:\n    ~ 2 to update\n    {unchanged} unchanged\n" in diff
    assert git(repo, "worktree", "list").count("\n") == 0  # the base's worktree is gone
    assert git(repo, "status", "--porcelain", "--untracked-files=no") == ""

    [note] = gitlab.notes_of(42, 7)
    assert note["body"].startswith(marker("dev", "offline"))
    assert f"**Offline plan diff** at commit `{head[:8]}`: 2 to update, {unchanged} unchanged" in note["body"]
    assert "ci-training  L40S-1-48G  fr-par-2  0-2" in note["body"]  # the head's capacity report
    # The cost delta of the two plans opens the note, before the resource diff.
    assert note["body"].index("- ci-training slots 4 -> 8 (+4)") < note["body"].index("**Offline plan diff**")
    assert f"created note {note['id']}" in result.stdout
