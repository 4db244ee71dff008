""".gitlab-ci.yml: valid against GitLab's CI schema, and the right jobs in the right pipelines.

Schema: check-jsonschema's vendored copy of GitLab's own CI schema (pinned in requirements-dev.txt). Jobs: as
`infra.pipeline.resolve` builds them (extends, default:). Which jobs a pipeline gets: a small evaluator of
the `rules:if` expressions the file uses, run for each kind of pipeline (MR with and without the protected
variables, default branch, other branches).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.paths import ROOT
from support.pulumi_cli import cli_version

from infra.pipeline.resolve import resolve_file

CI_FILE = ROOT / ".gitlab-ci.yml"
SECRETS = ("SCW_SECRET_KEY", "PULUMI_CONFIG_PASSPHRASE", "GITLAB_NOTE_TOKEN", "AWS_SECRET_ACCESS_KEY")


@pytest.fixture(scope="module")
def ci() -> dict[str, Any]:
    return yaml.safe_load(CI_FILE.read_text(encoding="utf-8"))


def _jobs() -> dict[str, dict[str, Any]]:
    """Real jobs (not keywords, not hidden templates) as GitLab builds them: extends, !reference, default:."""
    pipeline = resolve_file(CI_FILE)
    assert pipeline.problems == [] and all(job.problems == [] for job in pipeline.jobs.values())
    return {name: job.keys for name, job in pipeline.jobs.items()}


def _schema_errors(*paths: Path) -> dict[str, list[str]]:
    """check-jsonschema's verdict on each file, in one run: the JSON paths it refuses, by file name."""
    command = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.gitlab-ci", "-o", "json"]
    result = subprocess.run(
        [*command, "--data-transform", "gitlab-ci", *map(str, paths)], capture_output=True, text=True, check=False
    )
    report = json.loads(result.stdout)
    assert report["parse_errors"] == [], report
    assert result.returncode == (0 if report["status"] == "ok" else 1), result.stderr
    errors: dict[str, list[str]] = {str(path): [] for path in paths}
    for error in report["errors"]:
        errors[error["filename"]].append(error["path"])
    return errors


def test_valid_against_gitlabs_ci_schema(tmp_path: Path) -> None:
    broken = tmp_path / ".gitlab-ci.yml"
    broken.write_text(CI_FILE.read_text(encoding="utf-8").replace("when: manual", "when: sometimes"))
    errors = _schema_errors(CI_FILE, broken)
    assert errors[str(CI_FILE)] == []
    assert errors[str(broken)] == ["$.up.rules[0]"]  # the validator does check


# --- which jobs each pipeline gets ------------------------------------------------------------------------

_TOKEN = re.compile(r'\s*(\$\w+|"[^"]*"|\'[^\']*\'|null|==|!=|&&|\|\||\(|\))')


def evaluate(expression: str, env: dict[str, str]) -> bool:
    """GitLab's `rules:if` for the subset used here: $VAR, ==, != (with strings, null, $VAR), &&, ||, ()."""
    tokens: list[str] = []
    position = 0
    while position < len(expression.rstrip()):
        match = _TOKEN.match(expression, position)
        assert match, f"unsupported syntax at {expression[position:]!r}"
        tokens.append(match[1])
        position = match.end()

    def operand() -> Any:
        token = tokens.pop(0)
        if token == "(":
            value = disjunction()
            assert tokens.pop(0) == ")"
            return value
        if token.startswith("$"):
            return env.get(token[1:])
        return None if token == "null" else token[1:-1]

    def comparison() -> bool:
        left = operand()
        if tokens and tokens[0] in ("==", "!="):
            op = tokens.pop(0)
            right = operand()
            return (left == right) if op == "==" else (left != right)
        return bool(left)

    def conjunction() -> bool:
        value = comparison()
        while tokens and tokens[0] == "&&":
            tokens.pop(0)
            value = comparison() and value
        return value

    def disjunction() -> bool:
        value = conjunction()
        while tokens and tokens[0] == "||":
            tokens.pop(0)
            value = conjunction() or value
        return value

    result = disjunction()
    assert not tokens, f"unparsed: {tokens}"
    return result


def _when(rules: list[dict[str, Any]] | None, env: dict[str, str]) -> str | None:
    """The job's `when` in this pipeline, or None if it is not added (first matching rule wins)."""
    if rules is None:
        return "on_success"
    for rule in rules:
        if "if" not in rule or evaluate(rule["if"], env):
            when = rule.get("when", "on_success")
            return None if when == "never" else when
    return None


def pipeline(ci: dict[str, Any], env: dict[str, str]) -> dict[str, str]:
    if _when(ci["workflow"]["rules"], env) is None:
        return {}
    jobs = {name: _when(job.get("rules"), env) for name, job in _jobs().items()}
    return {name: when for name, when in jobs.items() if when is not None}


SECRETS_SET = {"SCW_ACCESS_KEY": "SCWXXXXXXXXXXXXXXXXX", "SCW_SECRET_KEY": "s3cr3t", "PULUMI_CONFIG_PASSPHRASE": "pw"}
MR = {"CI_PIPELINE_SOURCE": "merge_request_event", "CI_MERGE_REQUEST_IID": "7", "CI_DEFAULT_BRANCH": "main"}
PUSH_MAIN = {"CI_PIPELINE_SOURCE": "push", "CI_COMMIT_BRANCH": "main", "CI_DEFAULT_BRANCH": "main"}
PUSH_BRANCH = {"CI_PIPELINE_SOURCE": "push", "CI_COMMIT_BRANCH": "infra/h100", "CI_DEFAULT_BRANCH": "main"}


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {**MR, **SECRETS_SET},
            {"lint": "on_success", "test": "on_success", "pipeline-oracle": "on_success", "preview": "on_success"},
        ),
        (MR, {"lint": "on_success", "test": "on_success", "pipeline-oracle": "on_success", "plan-diff": "on_success"}),
        (
            {**PUSH_MAIN, **SECRETS_SET},
            {
                "lint": "on_success",
                "test": "on_success",
                "pipeline-oracle": "on_success",
                "preview": "on_success",
                "up": "manual",
            },
        ),
        (PUSH_MAIN, {"lint": "on_success", "test": "on_success", "pipeline-oracle": "on_success"}),
        ({**PUSH_BRANCH, **SECRETS_SET, "CI_OPEN_MERGE_REQUESTS": "platform/gpu-ci!7"}, {}),
        ({**PUSH_BRANCH, **SECRETS_SET}, {"lint": "on_success", "test": "on_success", "pipeline-oracle": "on_success"}),
    ],
    ids=[
        "mr-with-protected-vars",
        "mr-without-cloud-access",
        "default-branch",
        "default-branch-before-bootstrap",
        "branch-with-open-mr",
        "branch-without-mr",
    ],
)
def test_jobs_per_pipeline(ci: dict[str, Any], env: dict[str, str], expected: dict[str, str]) -> None:
    assert pipeline(ci, env) == expected


def test_the_rule_evaluator_reads_what_gitlab_reads() -> None:
    env = {"A": "x", "EMPTY": ""}
    assert evaluate('$A == "x" && $B == null', env)
    assert not evaluate("$EMPTY", env) and not evaluate("$MISSING", env)
    assert evaluate('$MISSING || ($A != "y" && $A)', env)
    assert not evaluate('$A == "x" && ($B || $EMPTY)', env)


# --- what the jobs run ------------------------------------------------------------------------------------


def test_the_pulumi_cli_image_is_the_pinned_cli(ci: dict[str, Any]) -> None:
    version = cli_version()  # tools/engine/go.mod's (tests/repo/test_pulumi_versions.py: the SDK may be older)
    assert ci["default"]["image"] == {"name": f"pulumi/pulumi-python:{version}", "entrypoint": [""]}
    assert all(job["image"] == ci["default"]["image"] for job in _jobs().values())  # nobody drifts (or :latest)
    plugin_cache = [c for c in _jobs()["preview"]["cache"] if ".pulumi/plugins" in c["paths"]]
    assert plugin_cache == [
        {"key": f"pulumi-plugins-{version}-$CI_COMMIT_REF_SLUG-$PULUMI_STACK", "paths": [".pulumi/plugins"]}
    ]
    assert _jobs()["up"]["cache"] == []  # up runs nothing another ref could have cached


def test_lint_and_test_run_what_the_readme_says(ci: dict[str, Any]) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    test_command = next(line for line in readme.splitlines() if line.endswith("&& venv/bin/python -m pytest"))
    commands = [c.replace(" --quiet", "") for c in ci["default"]["before_script"] + ci["test"]["script"]]
    assert " && ".join(commands) == test_command.strip()
    assert ci["lint"]["script"] == ["venv/bin/ruff check .", "venv/bin/ruff format --check .", "venv/bin/mypy"]
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")  # CI of this repository runs the same checks
    assert all(f".ci-venv/bin/{c.removeprefix('venv/bin/')}" in run for c in ci["lint"]["script"])


def test_preview_and_up_use_the_state_bucket_and_the_stack(ci: dict[str, Any]) -> None:
    jobs = _jobs()
    backend = ci["variables"]["PULUMI_BACKEND_URL"]
    assert backend.startswith("s3://") and "endpoint=https://s3.fr-par.scw.cloud" in backend
    assert "s3ForcePathStyle=true" in backend
    assert backend in (ROOT / "README.md").read_text(encoding="utf-8")  # the README's bootstrap is this bucket
    preview = " ".join(jobs["preview"]["script"])
    assert 'pulumi preview --stack "$PULUMI_STACK" --diff --non-interactive' in preview
    assert "mr-note --preview preview.txt" in preview
    up = jobs["up"]
    assert 'pulumi up --stack "$PULUMI_STACK" --yes' in " ".join(up["script"])
    for job, access in ((jobs["preview"], "READ"), (up, "WRITE")):  # the state bucket has its own keys
        assert 'pulumi login "$PULUMI_BACKEND_URL"' in job["script"]
        assert job["variables"]["AWS_ACCESS_KEY_ID"] == f"$STATE_{access}_ACCESS_KEY"
        assert job["variables"]["AWS_SECRET_ACCESS_KEY"] == f"$STATE_{access}_SECRET_KEY"
    assert jobs["preview"]["variables"]["GIT_DEPTH"] == "0"  # the base commit's plan: the note's cost delta


def test_up_is_manual_serialized_and_never_cancelled(ci: dict[str, Any]) -> None:
    up = _jobs()["up"]
    assert [rule.get("when") for rule in up["rules"]] == ["manual"]
    assert "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH" in up["rules"][0]["if"]
    # One lock per stack: named after the very variable that picks the stack, so the two cannot differ.
    assert up["resource_group"] == "pulumi-up-$PULUMI_STACK"
    assert all('--stack "$PULUMI_STACK"' in line for line in up["script"] if line.startswith("pulumi up"))
    assert up["interruptible"] is False and ci["default"]["interruptible"] is True
    assert up["needs"] == ["preview"]
    assert any("git rev-parse FETCH_HEAD" in line for line in up["script"])  # only from the branch's tip


def test_secrets_are_referenced_never_written(ci: dict[str, Any]) -> None:
    blocks = [ci["variables"], *(job.get("variables", {}) for name, job in ci.items() if isinstance(job, dict))]
    for variables in blocks:
        for name in SECRETS:
            value = variables.get(name)
            assert value is None or re.fullmatch(r"\$\w+", value), f"{name}={value!r} is written in .gitlab-ci.yml"
    text = CI_FILE.read_text(encoding="utf-8")
    for name in SECRETS:
        assert not re.search(rf"echo[^\n]*\${name}", text), f"{name} is echoed"
    assert "set -x" not in text and "--show-secrets" not in text
