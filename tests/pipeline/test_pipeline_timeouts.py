"""infra.pipeline.timeouts: a job keeps the `timeout:` its template sets (one attempt's wait for a node plus its
pool's longest job on a full node); `timeout:` read as GitLab reads it."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from infra.config.load import load_spec
from infra.pipeline.rules import CheckResult, check_pipeline
from infra.pipeline.timeouts import gitlab_duration_seconds

INCLUDE = """
include: [{project: ml-team/training, ref: main, file: .gitlab/ci/gpu-ci-templates.yml}]
stages: [train]
"""
"""The templates as `pulumi up` commits them (rendered from the dev stack): .train-rl-base sets 3h 22m."""


@pytest.fixture
def check(tmp_path: Path, dev_platform: dict[str, Any]) -> Any:
    spec = load_spec(dev_platform)

    def run(jobs: str, head: str = INCLUDE) -> CheckResult:
        path = tmp_path / ".gitlab-ci.yml"
        path.write_text(head + textwrap.dedent(jobs))
        return check_pipeline(path, spec)

    return run


@pytest.mark.parametrize(
    "timeout",
    ["3h 22m", "3h 30m", "4 hours", "202 minutes", "12120", "3:22:00", "1 day"],
)
def test_a_job_that_keeps_or_raises_its_templates_timeout_passes(check: Any, timeout: str) -> None:
    """A timeout above the runner's maximum is capped by GitLab, which costs nothing: only lowering it breaks."""
    found = check(f"hyperopt-dqn: {{extends: .train-rl-base, script: [train], timeout: '{timeout}'}}\n")
    assert [str(v) for v in found.violations] == []
    assert not [w for w in found.warnings if "timeout" in w]


def test_a_job_that_inherits_the_templates_timeout_passes(check: Any) -> None:
    found = check("hyperopt-dqn: {extends: .train-rl-base, script: [train]}\n")
    assert [str(v) for v in found.violations] == [] and found.warnings == []


@pytest.mark.parametrize("timeout", ["1h", "60 minutes", "3h 21m 59s", "2h30m", "1:00:00", "3600"])
def test_a_job_that_lowers_its_templates_timeout_is_a_violation(check: Any, timeout: str) -> None:
    found = check(f"hyperopt-dqn: {{extends: .train-rl-base, script: [train], timeout: '{timeout}'}}\n")
    assert [str(v) for v in found.violations] == [
        f".gitlab-ci.yml: hyperopt-dqn: timeout: {timeout} is below .train-rl-base's 3h 22m, which holds one "
        "attempt's wait for a node plus the pool's longest job on a full node: GitLab kills the job when it waits "
        "out a cold start and then runs long (drop `timeout:` from the job)"
    ]


def test_a_timeout_lowered_by_an_intermediate_template_or_a_job_of_no_family(check: Any) -> None:
    """The job's final `timeout:` counts, wherever it is written (extends merges it like any keyword); a job of
    no family that extends the template runs on its pool and needs it too."""
    found = check(
        """
        .short: {extends: .train-validate-base, timeout: 1h}
        train-validate-tft: {extends: .short, script: [train]}
        evaluate: {extends: .train-rl-base, script: [eval], timeout: 30m}
        """
    )
    assert [v.job for v in found.violations] == ["train-validate-tft", "evaluate"]
    assert "below .train-validate-base's 2h 52m" in str(found.violations[0])


def test_default_timeout_does_not_lower_a_templates(check: Any) -> None:
    """`default: timeout:` fills only jobs that set none: the template's own wins, as in GitLab."""
    found = check(
        "train-validate-dqn: {extends: .train-rl-base, script: [train]}\n", INCLUDE + "default: {timeout: 1h}\n"
    )
    assert [str(v) for v in found.violations] == []


def test_a_timeout_check_ci_cannot_read_is_a_warning_not_a_verdict(check: Any) -> None:
    found = check("hyperopt-dqn: {extends: .train-rl-base, script: [train], timeout: three hours}\n")
    assert found.violations == []
    assert found.warnings == [
        ".gitlab-ci.yml: hyperopt-dqn: timeout: 'three hours' is not read by check-ci: whether it holds "
        ".train-rl-base's 3h 22m is unchecked"
    ]


def test_a_templates_file_from_before_the_timeouts_is_a_warning(check: Any) -> None:
    """Templates committed before the timeouts give their jobs the project's 60 min (GitLab's default)."""
    old = "stages: [train]\n.train-rl-base: {stage: train, tags: [kapsule, gpu], retry: 2}\n"
    found = check("hyperopt-dqn: {extends: .train-rl-base, script: [train]}\n", old)
    assert found.violations == []
    assert found.warnings == [
        ".gitlab-ci.yml: hyperopt-dqn: no timeout: .train-rl-base predates the platform's timeouts (commit the "
        "templates file gpu-ci renders): GitLab gives the job the project's timeout, 60 min by default"
    ]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("3h 30m", 12600),
        ("3h30m", 12600),
        ("1 hour and 5 mins", 3900),
        ("1.5 hours", 5400),
        ("90 Minutes", 5400),
        ("2 hrs, 20 min", 8400),
        ("1 week", 604800),
        ("3600", 3600),
        ("1:20", 80),
        ("4:01:01", 14461),
        ("three hours", None),  # number words: ChronicDuration reads them, check-ci does not
        ("3h 30", None),  # a bare number after a unit: not read, never guessed
        ("3 fortnights", None),
        ("", None),
        (3600, None),  # not a string: GitLab's schema refuses it
    ],
)
def test_timeouts_read_as_gitlab_reads_them(text: object, seconds: int | None) -> None:
    assert gitlab_duration_seconds(text) == seconds
