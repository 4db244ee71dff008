"""The pipeline's least-trust properties, read from .gitlab-ci.yml, and `.ci/trusted-policy-pack` run for real.

What a Developer must not reach: the write keys (only `up`, behind its stack's protected environment),
any cloud or protected credential in the unprotected `plan-diff` job, a cache `up` would run, and the
policy pack that judges their own merge request.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.day import SUITE_DAY_ENV
from support.paths import ROOT
from support.repos import git, venv_python

from infra.pipeline.resolve import resolve_file

CI = yaml.safe_load((ROOT / ".gitlab-ci.yml").read_text(encoding="utf-8"))
JOBS = resolve_file(ROOT / ".gitlab-ci.yml").jobs
WRITE_KEYS = ("SCW_WRITE_ACCESS_KEY", "SCW_WRITE_SECRET_KEY", "STATE_WRITE_ACCESS_KEY", "STATE_WRITE_SECRET_KEY")
PROTECTED = (
    *WRITE_KEYS,
    "SCW_READONLY_SECRET_KEY",
    "STATE_READ_SECRET_KEY",
    "GITLAB_READ_TOKEN",
    "GITLAB_PROVIDER_TOKEN",
    "GITLAB_PREVIEW_NOTE_TOKEN",
    "PULUMI_CONFIG_PASSPHRASE",
)


def _job(name: str) -> dict[str, Any]:
    """A job as GitLab hands it to a runner: extends merged, `default:` applied (check-ci's resolver)."""
    return JOBS[name].keys


def _text(job: dict[str, Any]) -> str:
    return json.dumps({k: job.get(k) for k in ("before_script", "script", "variables", "rules")})


def test_only_up_maps_the_write_keys_and_up_is_a_manual_protected_deployment() -> None:
    for name in ("preview", "plan-diff", "lint", "test"):
        assert not [key for key in WRITE_KEYS if key in _text(_job(name))], name
    up = _job("up")
    assert up["variables"]["SCW_SECRET_KEY"] == "$SCW_WRITE_SECRET_KEY"
    assert up["variables"]["AWS_SECRET_ACCESS_KEY"] == "$STATE_WRITE_SECRET_KEY"  # the state bucket's own key
    assert up["environment"] == {"name": "$PULUMI_STACK", "action": "start"}
    assert [rule["when"] for rule in up["rules"]] == ["manual"]
    assert all("$CI_DEFAULT_BRANCH" in rule["if"] for rule in up["rules"])


def test_preview_runs_with_the_read_only_keys_in_its_own_environment() -> None:
    preview = _job("preview")
    assert preview["variables"] == {
        "SCW_ACCESS_KEY": "$SCW_READONLY_ACCESS_KEY",
        "SCW_SECRET_KEY": "$SCW_READONLY_SECRET_KEY",
        "AWS_ACCESS_KEY_ID": "$STATE_READ_ACCESS_KEY",
        "AWS_SECRET_ACCESS_KEY": "$STATE_READ_SECRET_KEY",
        "GITLAB_TOKEN": "$GITLAB_READ_TOKEN",
        "GIT_DEPTH": "0",  # the MR's base commit, whose plan the note's cost delta compares with
    }
    assert preview["environment"] == {"name": "preview/$PULUMI_STACK", "action": "prepare"}


def test_the_unprotected_plan_diff_job_sees_no_protected_credential() -> None:
    text = _text(_job("plan-diff"))
    assert [key for key in PROTECTED if key in text] == ["PULUMI_CONFIG_PASSPHRASE"]  # only to step aside
    assert "--plan-diff" in text and "--token-variable" not in text  # mr-note's default: GITLAB_NOTE_TOKEN


def test_up_runs_no_cache_and_preview_only_its_own_refs() -> None:
    assert _job("up")["cache"] == []
    for cache in _job("preview")["cache"]:
        assert "$CI_COMMIT_REF_SLUG" in cache["key"], cache


def test_every_stack_has_its_own_resource_group_and_environment() -> None:
    stacks = CI[".stacks"]["parallel"]["matrix"][0]["PULUMI_STACK"]
    assert "dev" in stacks
    for name in ("preview", "plan-diff", "up"):
        job = _job(name)
        assert job["parallel"]["matrix"] == CI[".stacks"]["parallel"]["matrix"]
        assert "$PULUMI_STACK" in job["resource_group"], name
    assert _job("up")["resource_group"] == "pulumi-up-$PULUMI_STACK"


def test_preview_and_up_run_the_trusted_pack_and_up_guards_replacements_first() -> None:
    before = _job("up")["before_script"]
    assert any('bash .ci/trusted-policy-pack "$CI_PROJECT_DIR/.trusted"' in line for line in before)
    for name in ("preview", "up"):
        pulumi = [line for line in _job(name)["script"] if re.search(r"pulumi (preview|up) ", line)]
        assert pulumi and all('--policy-pack "$pack"' in line for line in pulumi), name
        assert not any("--policy-pack policy" in line for line in pulumi)
    script = _job("up")["script"]
    guard = next(i for i, line in enumerate(script) if "guard-replacements preview.json" in line)
    preview = next(i for i, line in enumerate(script) if "pulumi preview" in line and "--json" in line)
    apply = next(i for i, line in enumerate(script) if "pulumi up " in line)
    assert preview < guard < apply


# ---------------------------------------------------------------------------------------------------------
# .ci/trusted-policy-pack, for real: a merge request that weakens the pack is judged by the merged one


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A CI clone on an MR branch whose policy/ is weakened; `origin` (a bare repo) has main with the pack."""
    origin, seed, clone = tmp_path / "origin.git", tmp_path / "seed", tmp_path / "clone"
    git(tmp_path, "init", "--quiet", "--bare", str(origin))
    seed.mkdir()
    git(seed, "init", "--quiet")
    (seed / "policy").mkdir()
    (seed / "policy" / "PulumiPolicy.yaml").write_text("runtime: python\n", encoding="utf-8")
    (seed / "policy" / "policies.py").write_text("STRICT = True\n", encoding="utf-8")
    git(seed, "add", ".")
    git(seed, "commit", "--quiet", "-m", "pack")
    git(seed, "push", "--quiet", str(origin), "HEAD:refs/heads/main")
    git(tmp_path, "clone", "--quiet", str(origin), str(clone))
    git(clone, "checkout", "--quiet", "-b", "weaken")
    (clone / "policy" / "policies.py").write_text("STRICT = False\n", encoding="utf-8")
    git(clone, "commit", "--quiet", "-am", "weaken the pack")
    return clone


def test_the_pack_comes_from_the_default_branch_not_the_checkout(clone: Path, tmp_path: Path) -> None:
    script = ROOT / ".ci" / "trusted-policy-pack"
    out = tmp_path / "trusted"
    result = subprocess.run(
        ["bash", str(script), str(out)],
        cwd=clone,
        env={"PATH": "/usr/bin:/bin", **SUITE_DAY_ENV, "CI_DEFAULT_BRANCH": "main"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == str(out / "policy")
    assert (out / "policy" / "policies.py").read_text(encoding="utf-8") == "STRICT = True\n"
    assert (clone / "policy" / "policies.py").read_text(encoding="utf-8") == "STRICT = False\n"  # untouched
    main = git(clone, "rev-parse", "origin/main")
    assert (out / "policy" / ".trusted-commit").read_text(encoding="utf-8").strip() == main
    assert git(clone, "status", "--porcelain") == ""


def test_a_default_branch_without_a_pack_stops_the_job(clone: Path, tmp_path: Path) -> None:
    git(clone, "checkout", "--quiet", "-b", "no-pack", "origin/main")
    git(clone, "rm", "--quiet", "-r", "policy")
    git(clone, "commit", "--quiet", "-m", "drop the pack")
    git(clone, "push", "--quiet", "origin", "no-pack")
    result = subprocess.run(
        ["bash", str(ROOT / ".ci" / "trusted-policy-pack"), str(tmp_path / "t"), "no-pack"],
        cwd=clone,
        env={"PATH": "/usr/bin:/bin", **SUITE_DAY_ENV},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert result.stderr.startswith("error: no-pack (") and "no trusted policy pack to run" in result.stderr
    assert not (tmp_path / "t").exists()


# ---------------------------------------------------------------------------------------------------------
# The `up` job's script, run for real in bash with a stand-in `pulumi` that records its arguments


PREVIEWS = ROOT / "tests" / "data" / "preview"


@pytest.fixture(scope="module")
def up_clone(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A CI clone of the default branch's tip (with infra/, .ci/, policy/), venv/ running this Python, and a
    `pulumi` on PATH that logs each call and prints $PREVIEW_JSON for `preview --json`."""
    tmp_path = tmp_path_factory.mktemp("up")
    origin, seed, clone = tmp_path / "origin.git", tmp_path / "seed", tmp_path / "clone"
    git(tmp_path, "init", "--quiet", "--bare", str(origin))
    ignore = shutil.ignore_patterns("__pycache__", "venv")
    for name in ("infra", ".ci", "policy"):
        shutil.copytree(ROOT / name, seed / name, ignore=ignore)
    git(seed, "init", "--quiet")
    git(seed, "add", ".")
    git(seed, "commit", "--quiet", "-m", "tip")
    git(seed, "push", "--quiet", str(origin), "HEAD:refs/heads/main")
    git(tmp_path, "clone", "--quiet", str(origin), str(clone))
    venv_python(clone)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pulumi = bin_dir / "pulumi"
    pulumi.write_text(
        '#!/bin/sh\necho "$*" >> "$PULUMI_LOG"\ncase "$*" in *preview*--json*) cat "$PREVIEW_JSON";; esac\n',
        encoding="utf-8",
    )
    pulumi.chmod(0o755)
    return clone, bin_dir


@pytest.fixture
def up_repo(up_clone: tuple[Path, Path], tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The clone and the up job's environment, with a fresh log of `pulumi` calls."""
    clone, bin_dir = up_clone
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        **SUITE_DAY_ENV,
        "HOME": str(tmp_path),
        "CI_PROJECT_DIR": str(clone),
        "CI_DEFAULT_BRANCH": "main",
        "CI_COMMIT_SHA": git(clone, "rev-parse", "HEAD"),
        "CI_COMMIT_SHORT_SHA": git(clone, "rev-parse", "--short", "HEAD"),
        "PULUMI_STACK": "dev",
        "PULUMI_BACKEND_URL": "s3://state",
        "PULUMI_LOG": str(tmp_path / "pulumi.log"),
    }
    return clone, env


def _run_up(
    repo: Path, env: dict[str, str], preview: str, **extra: str
) -> tuple[subprocess.CompletedProcess[str], str]:
    """The up job's before_script and script, minus the virtualenv and pip lines (venv/ is ready)."""
    job = _job("up")
    lines = [line for line in job["before_script"] if " install " not in line and "-m venv" not in line]
    script = "\n".join([*lines, *job["script"]])
    run_env = {**env, "PREVIEW_JSON": str(PREVIEWS / f"{preview}.json"), **extra}
    result = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", script], cwd=repo, env=run_env, capture_output=True, text=True, check=False
    )
    log = Path(env["PULUMI_LOG"])
    return result, log.read_text(encoding="utf-8") if log.exists() else ""


def test_up_stops_before_pulumi_up_on_a_pool_replacement(up_repo: tuple[Path, dict[str, str]]) -> None:
    repo, env = up_repo
    result, calls = _run_up(repo, env, "pool-node-type-change")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "error: the plan replaces Kapsule pool 'kapsule-ci-training' (because of id)" in result.stderr
    assert [line.split()[0] for line in calls.splitlines()] == ["login", "preview"]  # never `up`


def test_up_applies_with_the_trusted_pack_when_nothing_guarded_is_replaced(
    up_repo: tuple[Path, dict[str, str]],
) -> None:
    repo, env = up_repo
    result, calls = _run_up(repo, env, "update-and-new-pool")
    assert result.returncode == 0, result.stdout + result.stderr
    _login, preview, up = calls.splitlines()
    pack = f"--policy-pack {repo}/.trusted/policy"
    assert preview.startswith("preview --stack dev --json") and pack in preview
    assert up.startswith("up --stack dev --yes") and pack in up
    assert (repo / ".trusted" / "policy" / "policies" / "__init__.py").is_file()


def test_an_allowed_replacement_goes_through(up_repo: tuple[Path, dict[str, str]]) -> None:
    repo, env = up_repo
    result, calls = _run_up(repo, env, "pool-node-type-change", GPU_CI_ALLOW_REPLACE="1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert calls.splitlines()[-1].startswith("up --stack dev")
    assert "allowed: the plan replaces Kapsule pool 'kapsule-ci-training'" in result.stderr
