"""infra.pipeline.keys: top-level keys YAML reads as no string (`3.10:`, `.5:`, `5:`, `yes:`), which GitLab refuses as
job names, and the name Ruby prints for them, under which check-ci still checks the job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.pipelines import write_pipeline

from infra.config.load import load_spec
from infra.pipeline.keys import ruby_float
from infra.pipeline.rules import check_pipeline


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (3.10, "3.1"),
        (0.5, "0.5"),
        (-0.0, "-0.0"),
        (100.0, "100.0"),
        (1e14, "100000000000000.0"),
        (1e15, "1.0e+15"),
        (1234567890123456.0, "1.234567890123456e+15"),
        (1e16, "1.0e+16"),
        (0.0001, "0.0001"),
        (0.00001, "1.0e-05"),
        (5e-324, "5.0e-324"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
        (float("nan"), "NaN"),
    ],
)
def test_a_float_is_named_as_ruby_prints_it(value: float, text: str) -> None:
    """Each `text` is what Ruby 3.1's `Float#to_s` prints."""
    assert ruby_float(value) == text


@pytest.fixture
def check(tmp_path: Path, dev_platform: dict[str, Any]) -> Any:
    spec = load_spec(dev_platform)
    return lambda jobs: check_pipeline(write_pipeline(tmp_path, jobs), spec)


REFUSED = (
    ', and GitLab takes only a string as a job\'s name ("name should be a symbol"): it refuses the pipeline; quote '
    "the key"
)


@pytest.mark.parametrize(
    ("key", "name", "read"),
    [
        ("3.10", "3.1", "the number 3.1"),
        (".5", "0.5", "the number 0.5"),
        ("-0.250", "-0.25", "the number -0.25"),
        ("1_0.5", "10.5", "the number 10.5"),
        ("5", "5", "the number 5"),
        ("0x1F", "31", "the number 31"),
        ("yes", "true", "the boolean true"),
        ("Off", "false", "the boolean false"),
    ],
)
def test_a_job_key_read_as_a_number_or_a_boolean_is_refused_and_still_checked(
    check: Any, key: str, name: str, read: str
) -> None:
    """check-ci skipped `3.10:` and `.5:` ("0 jobs checked: no violation"). GitLab refuses them (its job names are
    strings); a job it took anyway would land on the L4 with its GPUs shown whole."""
    result = check(
        f"{key}: {{stage: build, script: [x], tags: [kapsule, gpu], variables: {{CUDA_VISIBLE_DEVICES: '0'}}}}\n"
    )
    lines = [str(v) for v in result.violations]
    assert lines[0] == f".gitlab-ci.yml: {name}: YAML reads this top-level key as {read}{REFUSED}"
    assert lines[1].startswith(f".gitlab-ci.yml: {name}: sets CUDA_VISIBLE_DEVICES: ")
    assert (len(lines), result.jobs_checked) == (2, 1)


@pytest.mark.parametrize(
    ("key", "read"),
    [("~", "null (no name)"), ("2026-12-01", "the date 2026-12-01 (GitLab's YAML loader refuses dates)")],
)
def test_a_key_that_is_no_name_at_all_is_refused(check: Any, key: str, read: str) -> None:
    result = check(f"{key}: {{stage: build, script: [x], tags: [kapsule, gpu]}}\n")
    assert ([str(v) for v in result.violations], result.jobs_checked) == (
        [f".gitlab-ci.yml: YAML reads this top-level key as {read}{REFUSED}"],
        0,
    )


def test_a_quoted_key_is_a_name(check: Any) -> None:
    result = check('"3.10": {stage: build, script: [x], tags: [kapsule, gpu]}\n')
    assert ([str(v) for v in result.violations], list(result.routes)) == ([], ["3.10"])
