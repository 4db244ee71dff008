"""infra.pipeline.tags: a job's tags as GitLab stores them (expanded once, then `Tags::Parser` and `TagList#clean!`),
and check-ci routing those, not the strings as written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.pipelines import write_pipeline

from infra.config.load import load_spec
from infra.pipeline.rules import CheckResult, check_pipeline
from infra.pipeline.tags import job_tags, parse_tags, routes_alike


@pytest.mark.parametrize(
    ("written", "stored"),
    [
        (["a,b"], ("a", "b")),
        (["\tkapsule,,, gpu\t", ","], ("kapsule", "gpu")),
        (["x, y", "y", " x "], ("x", "y")),
        (['"one, two", three'], ("one, two", "three")),
        (["a", "'b,c' ", 'd, "e,f"'], ("e,f", "b,c", "a", "d")),
        (['a"b,c"'], ('a"b', 'c"')),  # a quote inside a tag is no quoting
        (["", " ", "\t,\n", "\u00a0"], ()),  # blank tags are dropped, a no-break space alone is blank
        (["\u00a0gpu", "gpu\x00"], ("\u00a0gpu", "gpu")),  # Ruby's strip keeps the no-break space, drops a NUL
        (["Kapsule", "kapsule"], ("Kapsule", "kapsule")),  # names are case-sensitive
    ],
)
def test_tags_are_parsed_as_gitlab_parses_them(written: list[str], stored: tuple[str, ...]) -> None:
    """The cases of GitLab's own parser spec, in other words: commas split, quotes keep commas, spaces stripped."""
    assert parse_tags(written) == stored


def test_a_variable_expands_to_several_tags_or_to_none() -> None:
    assert job_tags(["$PAIR", "${NONE}"], {"PAIR": "kapsule ,\tgpu", "NONE": ""}).tags == ("kapsule", "gpu")
    assert job_tags(["%NONE%"], {"NONE": " , "}).tags == ()


def test_a_doubled_dollar_is_no_escape_in_tags() -> None:
    """`ExpandVariables` knows no `$$`: the second `$` starts a reference, the first stays."""
    assert job_tags(["$$POOL"], {"POOL": "ci-training"}).tags == ("$ci-training",)


def test_a_reference_gitlab_cannot_expand_is_kept_and_named() -> None:
    nested = job_tags(["kapsule,$A"], {"A": "${B}", "B": "gpu"})
    assert (nested.tags, nested.nested, nested.known) == (
        ("kapsule", "${B}"),
        ("kapsule,$A", "kapsule,${B}", "A", "${B}"),
        False,
    )
    unknown = job_tags(["kapsule", "$CI_RUNNER_TAG"], {})
    assert (unknown.tags, unknown.unknown) == (("kapsule", "$CI_RUNNER_TAG"), ("$CI_RUNNER_TAG", "CI_RUNNER_TAG"))


def test_tags_route_alike_once_parsed() -> None:
    assert routes_alike(["gpu , kapsule", "gpu"], ["kapsule", "gpu"])
    assert not routes_alike(["kapsule gpu"], ["kapsule", "gpu"])


# --- through check-ci -------------------------------------------------------------------------------------------


@pytest.fixture
def check(tmp_path: Path, dev_platform: dict[str, Any]) -> Any:
    spec = load_spec(dev_platform)
    return lambda jobs: check_pipeline(write_pipeline(tmp_path, jobs), spec)


def _lines(result: CheckResult) -> list[str]:
    return [str(v) for v in result.violations]


GUARD = (
    "sets CUDA_VISIBLE_DEVICES: would change which GPUs a job sees around the device plugin "
    "(NVIDIA_VISIBLE_DEVICES=all shows it every GPU of its node): the GPU share comes from the pool's gpu_sharing"
)


@pytest.mark.parametrize(
    "tags",
    [
        '["\\tkapsule,,gpu,"]',
        '["gpu ,  kapsule\\t", "gpu"]',
        "['\"kapsule\", gpu']",
        "[$TWO]",
        "[kapsule, $TWO, $NOTHING]",
    ],
)
def test_a_job_with_the_l4_runners_tags_in_another_spelling_is_on_the_gpu(check: Any, tags: str) -> None:
    """check-ci compared the strings as written: `"kapsule,gpu"` was no runner's tag, so a job that lands on the L4
    with a guard disarmed was "no violation"."""
    result = check(
        f"""
        report:
          stage: build
          script: [x]
          tags: {tags}
          variables: {{TWO: "gpu,kapsule", NOTHING: " ", CUDA_VISIBLE_DEVICES: "0,1"}}
        """
    )
    assert _lines(result) == [f".gitlab-ci.yml: report: {GUARD}"]
    assert result.routes == {"report": {"ci-compile"}}


def test_tags_that_parse_to_nothing_are_an_untagged_job(check: Any) -> None:
    result = check('report: {stage: build, script: [x], tags: [" ", ",", $NONE], variables: {NONE: ""}}\n')
    assert (_lines(result), result.routes) == ([], {"report": set()})


def test_a_tag_that_expands_to_nothing_leaves_tags_both_pools_hold(check: Any) -> None:
    result = check("report: {stage: build, script: [x], tags: [kapsule, $EMPTY], variables: {EMPTY: ''}}\n")
    assert _lines(result) == [
        ".gitlab-ci.yml: report: tags ['kapsule'] are held by the runners of pools ci-compile, ci-training: either "
        "may take it"
    ]


def test_tags_given_as_a_string_are_refused(check: Any) -> None:
    result = check("report: {stage: build, script: [x], tags: 'kapsule,gpu', variables: {CUDA_VISIBLE_DEVICES: '0'}}\n")
    assert _lines(result) == [".gitlab-ci.yml: report: tags: not a list of tag names"]
