"""check-ci says "no violation" only when there is none: `extends` depth whatever the order, variables in tags
as GitLab expands them, images and services the runner admits, `parallel: matrix` per created job, keywords of
the wrong type, the job a violation breaks, and lines nothing in the pipeline can forge."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.plans import run_command

from infra.config.load import load_spec
from infra.pipeline.globs import RunnerGlob
from infra.pipeline.resolve import resolve_file
from infra.pipeline.rules import CheckResult, check_pipeline

TEMPLATES = """
include: [{project: ml-team/training, file: .gitlab/ci/gpu-ci-templates.yml}]
stages: [build, train]
"""
"""The platform's templates: `.train-rl-base` (runner ci-compile, [kapsule, gpu]) and `.train-validate-base`
(runner ci-training, [kapsule, ci-training])."""


@pytest.fixture
def check(tmp_path: Path, dev_platform: dict[str, Any]) -> Any:
    def run(pipeline: str, **spec: Any) -> CheckResult:
        path = tmp_path / ".gitlab-ci.yml"
        path.write_text(TEMPLATES + textwrap.dedent(pipeline))
        platform = {**dev_platform, **spec}
        return check_pipeline(path, load_spec(platform))

    return run


def _lines(result: CheckResult) -> list[str]:
    return [str(v) for v in result.violations]


# --- extends ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("job_first", [True, False])
def test_the_extends_depth_limit_does_not_depend_on_the_order_of_declaration(tmp_path: Path, job_first: bool) -> None:
    """Once, a template declared before the job was extended first and remembered without its depth: the job
    12 levels deep passed when declared last."""
    chain = {f".t{i}": {"extends": f".t{i + 1}"} for i in range(1, 12)} | {".t12": {"script": ["x"]}}
    job = {"job": {"extends": ".t1"}}
    path = tmp_path / ".gitlab-ci.yml"
    path.write_text(yaml.safe_dump({**job, **chain} if job_first else {**chain, **job}, sort_keys=False))
    pipeline = resolve_file(path)
    assert not pipeline.jobs["job"].complete
    assert [p.message for p in pipeline.jobs["job"].problems] == ["extends nests deeper than 11 levels"]


def test_a_cycle_is_named_the_same_whatever_the_order(tmp_path: Path) -> None:
    lines = []
    for order in ([".a", ".b", "job"], ["job", ".b", ".a"]):
        document = {".a": {"extends": ".b"}, ".b": {"extends": ".a", "script": ["x"]}, "job": {"extends": ".a"}}
        path = tmp_path / ".gitlab-ci.yml"
        path.write_text(yaml.safe_dump({k: document[k] for k in order}, sort_keys=False))
        pipeline = resolve_file(path)
        lines.append(sorted({str(p) for p in [*pipeline.problems, *pipeline.jobs["job"].problems]}))
    assert (
        lines[0]
        == lines[1]
        == [
            ".gitlab-ci.yml: .a: extends .b, which extends it back (a cycle)",
            ".gitlab-ci.yml: .b: extends .a, which extends it back (a cycle)",
        ]
    )


# --- tags through variables ------------------------------------------------------------------------------------


def test_tags_are_routed_once_gitlab_expands_their_variables(check: Any) -> None:
    """Global, job and `default:` tags, `$NAME`, `${NAME}` and `%NAME%`: expanded before routing, so a family job
    whose tags name the other pool through a variable is caught."""
    result = check(
        """
        variables: {POOL: docker}
        default: {tags: [kapsule, $POOL]}
        hyperopt-tft: {extends: .train-validate-base, script: [x], tags: [kapsule, $POOL]}
        train-validate-tft: {extends: .train-validate-base, script: [x], tags: ["%KIND%", "${SIDE}"],
                             variables: {KIND: kapsule, SIDE: ci-training}}
        report: {stage: build, script: [x]}
        """
    )
    assert _lines(result) == [
        ".gitlab-ci.yml: hyperopt-tft: tags ['kapsule', 'docker'] are not all held by its profile's runner "
        "ci-training ['kapsule', 'ci-training']: no gpu-ci runner takes it",
        ".gitlab-ci.yml: report: tags ['kapsule', 'docker']: no gpu-ci runner holds them all (ci-compile ['kapsule', "
        "'gpu', 'ci-compile'], ci-training ['kapsule', 'ci-training']): no runner takes it",
    ]
    assert result.warnings == []


def test_a_variable_defined_from_another_is_not_expanded_in_tags(check: Any) -> None:
    """gitlab#407129: GitLab expands a tag once, with the variables as written; `$BASE` stays a literal tag."""
    result = check(
        """
        variables: {BASE: ci-training, POOL: $BASE}
        hyperopt-tft: {extends: .train-validate-base, script: [x], tags: [kapsule, $POOL]}
        """
    )
    assert _lines(result) == [
        ".gitlab-ci.yml: hyperopt-tft: tags: $POOL is $BASE once GitLab expands it: GitLab does not expand $POOL "
        "(defined as $BASE) again in tags (gitlab#407129), so the job keeps the tag $BASE, which no runner holds: it "
        "stays pending"
    ]


def test_a_tag_only_gitlab_can_expand_is_a_warning(check: Any) -> None:
    result = check("hyperopt-tft: {extends: .train-validate-base, script: [x], tags: [$CI_RUNNER_POOL]}\n")
    assert (_lines(result), result.warnings) == (
        [],
        [
            ".gitlab-ci.yml: hyperopt-tft: tags: $CI_RUNNER_POOL holds $CI_RUNNER_POOL, only known to GitLab: which "
            "runner takes the job is not checked"
        ],
    )


def test_the_projects_variables_win_over_the_yamls_in_tags(check: Any, dev_platform: dict[str, Any]) -> None:
    ci = {**dev_platform["ci"], "variables": {"TRAIN_POOL": "docker"}}
    pipeline = """
        variables: {TRAIN_POOL: ci-training}
        report: {stage: build, script: [x], tags: [kapsule, $TRAIN_POOL]}
        """
    assert _lines(check(pipeline)) == []
    assert _lines(check(pipeline, ci=ci)) == [
        ".gitlab-ci.yml: report: tags ['kapsule', 'docker']: no gpu-ci runner holds them all (ci-compile ['kapsule', "
        "'gpu', 'ci-compile'], ci-training ['kapsule', 'ci-training']): no runner takes it"
    ]


# --- images and services -----------------------------------------------------------------------------------------


def test_images_and_services_outside_what_the_runner_admits_are_violations(check: Any) -> None:
    result = check(
        """
        default: {image: docker.io/library/python:3.12}
        report: {stage: build, script: [x], tags: [kapsule, gpu]}
        hyperopt-ppo:
          {extends: .train-rl-base, script: [x], services: [rg.fr-par.scw.cloud/gpu-ci/redis:7, postgres:16]}
        hyperopt-tft: {extends: .train-validate-base, script: [x], image: {name: "$MIRROR/training:1"},
                       variables: {MIRROR: docker.io/ml}}
        hyperopt-kan:
          {extends: .train-validate-base, script: [x], image: "rg.fr-par.scw.cloud/gpu-ci/team/x:${CI_COMMIT_SHA}"}
        lint: {stage: build, script: [ruff], image: python:3.12}
        """
    )
    allowed = "[rg.fr-par.scw.cloud/gpu-ci/*, rg.fr-par.scw.cloud/gpu-ci/**/*, alpine:3.22]"
    assert _lines(result) == [
        f".gitlab-ci.yml: report: image docker.io/library/python:3.12 is not in runner ci-compile's "
        f"allowed_images {allowed}: the runner refuses it, the job fails",
        f".gitlab-ci.yml: hyperopt-ppo: service postgres:16 is not in runner ci-compile's allowed_services "
        f"{allowed}: the runner refuses it, the job fails",
        f".gitlab-ci.yml: hyperopt-tft: image $MIRROR/training:1 (docker.io/ml/training:1) is not in runner "
        f"ci-training's allowed_images {allowed}: the runner refuses it, the job fails",
    ]  # lint has no tags: not a platform job; the templates' image and hyperopt-kan's are the registry's


def test_the_configured_allowed_images_match_as_the_runner_matches(check: Any, dev_platform: dict[str, Any]) -> None:
    runner = {**dev_platform.get("runner", {}), "allowed_images": ["docker.io/library/python:*"]}
    pipeline = "hyperopt-dqn: {extends: .train-rl-base, script: [x], image: %s}\n"
    assert _lines(check(pipeline % "docker.io/library/python:3.12", runner=runner)) == []
    assert len(_lines(check(pipeline % "python:3.12", runner=runner))) == 1  # no docker.io/library/ added
    assert _lines(check(pipeline % "alpine:3.22", runner=runner)) == []  # the runner's default image
    result = check(pipeline % "$CI_REGISTRY_IMAGE/train:1", runner=runner)
    assert result.warnings == [
        ".gitlab-ci.yml: hyperopt-dqn: image $CI_REGISTRY_IMAGE/train:1 is only known to GitLab: not checked "
        "against allowed_images"
    ]


@pytest.mark.parametrize(
    ("pattern", "name", "admitted"),
    [
        ("docker.io/library/python:*", "docker.io/library/python:3.12", True),
        ("docker.io/library/*", "docker.io/library/a/b", False),  # `*` stays in one segment
        ("registry/**/*", "registry/x", True),  # `**/` is zero or more segments
        ("registry/**/*", "registry/a/b/c:1", True),
        ("registry/**", "registry", True),
        ("registry/a**b", "registry/a/b", False),  # `**` inside a segment is a `*`
        ("python:3.1?", "python:3.12", True),
        ("python:3.[0-9]", "python:3.9", True),
        ("python:3.[!0-9]", "python:3.9", False),
        ("{python,pypy}:3", "pypy:3", True),
        ("python:{3", "python:{3", False),  # malformed: the runner ignores the pattern
        ("*a*a*a*a*a*a*a*a*b", "a" * 2000, False),  # linear: no backtracking on a hostile name
    ],
)
def test_runner_globs_are_doublestar_globs(pattern: str, name: str, admitted: bool) -> None:
    assert RunnerGlob(pattern).matches(name) is admitted


# --- parallel: matrix -------------------------------------------------------------------------------------------


def test_matrix_jobs_are_checked_one_by_one(check: Any) -> None:
    result = check(
        """
        hyperopt-dqn:
          extends: .train-rl-base
          script: [x]
          tags: [kapsule, $SIDE]
          parallel:
            matrix:
              - {SIDE: gpu, KUBERNETES_MEMORY_LIMIT: [8Gi, 64Gi]}
              - {SIDE: docker}
        """
    )
    assert _lines(result) == [
        ".gitlab-ci.yml: hyperopt-dqn: [gpu, 64Gi]: KUBERNETES_MEMORY_LIMIT=64Gi is above the runner's "
        "memory_limit_overwrite_max_allowed=16Gi: the job would fail",
        ".gitlab-ci.yml: hyperopt-dqn: [docker]: tags ['kapsule', 'docker'] are not all held by its profile's runner "
        "ci-compile ['kapsule', 'gpu', 'ci-compile']: no gpu-ci runner takes it",
    ]
    assert result.jobs_checked == 3


def test_a_matrix_of_more_than_200_jobs_is_refused_by_gitlab(check: Any) -> None:
    matrix = "{A: [" + ", ".join(map(str, range(1000))) + "], B: [" + ", ".join(map(str, range(1000))) + "]}"
    result = check(f"hyperopt-dqn: {{extends: .train-rl-base, script: [x], parallel: {{matrix: [{matrix}]}}}}\n")
    assert _lines(result) == [
        ".gitlab-ci.yml: hyperopt-dqn: parallel: matrix config generates too many jobs (maximum is 200)"
    ]


# --- keywords of the wrong type -------------------------------------------------------------------------------


def test_a_variable_of_the_wrong_type_is_a_violation_not_a_warning(check: Any) -> None:
    result = check(
        """
        .sizes: {variables: {KUBERNETES_CPU_REQUEST: [1, 2]}}
        hyperopt-dqn: {extends: [.train-rl-base, .sizes], script: [x]}
        hyperopt-ppo: {extends: .train-rl-base, script: [x], variables: {EPOCHS: 1.5, RAW: {value: x, scope: y}}}
        """
    )
    assert _lines(result) == [
        ".gitlab-ci.yml: .sizes: variables: KUBERNETES_CPU_REQUEST: a list is not a variable value (GitLab takes a "
        "string or an integer; quote it) (job hyperopt-dqn)",
        ".gitlab-ci.yml: hyperopt-ppo: variables: EPOCHS: a float is not a variable value (GitLab takes a string or "
        "an integer; quote it)",
        ".gitlab-ci.yml: hyperopt-ppo: variables: RAW: uses invalid data keys: scope",
    ]
    assert result.warnings == []


def test_images_and_scripts_of_the_wrong_type_are_violations(check: Any) -> None:
    result = check("lint: {stage: build, script: [1, 2], image: [python], services: python}\n")
    assert _lines(result) == [
        ".gitlab-ci.yml: lint: script: not a command or a list of commands",
        ".gitlab-ci.yml: lint: image: not an image name or {name: <image>}",
        ".gitlab-ci.yml: lint: services: not a list of image names or {name: <image>}",
    ]


@pytest.mark.parametrize("rules", ['"x"', "[5]", "{if: $X}", "[[5]]"])
def test_rules_of_the_wrong_type_are_violations(check: Any, rules: str) -> None:
    """GitLab refuses rules that are not a list of rules; check-ci said "no violation"."""
    result = check(f"lint: {{stage: build, script: [ruff], tags: [kapsule, gpu], rules: {rules}}}\n")
    assert _lines(result) == [".gitlab-ci.yml: lint: rules: not a list of rules ({if: ..., when: ...})"]


@pytest.mark.parametrize("digits", ["\uff11\uff10\uff10m", "\u0661\u0660\u0660m", "\u0967Gi"])
def test_a_quantity_in_other_digits_than_ascii_is_a_violation(check: Any, digits: str) -> None:
    """Python's `\\d` takes full-width or Arabic-Indic digits, Kubernetes does not: the runner fails the job."""
    variable = "KUBERNETES_MEMORY_REQUEST" if digits.endswith("Gi") else "KUBERNETES_CPU_REQUEST"
    result = check(
        f'train-validate-tft: {{extends: .train-validate-base, script: [x], variables: {{{variable}: "{digits}"}}}}\n'
    )
    (line,) = _lines(result)
    assert line.endswith((": not a Kubernetes CPU quantity", ": not a Kubernetes memory quantity"))


# --- what the lines say ---------------------------------------------------------------------------------------


def test_a_violation_in_a_shared_value_names_the_jobs_it_breaks(check: Any) -> None:
    """The same global selector is fine for one runner and refused by the other: the line names those jobs."""
    result = check(
        """
        variables: {KUBERNETES_NODE_SELECTOR_POOL: k8s.scaleway.com/pool-name=ci-training}
        hyperopt-dqn: {extends: .train-rl-base, script: [x]}
        hyperopt-ppo: {extends: .train-rl-base, script: [x]}
        hyperopt-tft: {extends: .train-validate-base, script: [x]}
        """
    )
    assert _lines(result) == [
        r".gitlab-ci.yml: variables: KUBERNETES_NODE_SELECTOR_POOL=k8s.scaleway.com/pool-name=ci-training is refused "
        r"by runner ci-compile (node_selector_overwrite_allowed=^k8s\.scaleway\.com/pool-name=(ci-compile)$): the job "
        "would fail (2 jobs: hyperopt-dqn, hyperopt-ppo)"
    ]


def test_names_cannot_forge_or_garble_lines(tmp_path: Path) -> None:
    """A job name holding a newline, a terminal escape or a token: one line each, escaped, redacted."""
    token = "glpat-" + "a" * 20
    document = {
        "stages": ["build"],
        "evil\n.gitlab-ci.yml: fake: forged line": {"stage": "build", "script": ["x"], "tags": ["kapsule"]},
        "\x1b[2J\x1b[31mred": {"stage": "nope", "script": ["x"]},
        f"leak-{token}": {"stage": "nope", "script": ["x"]},
        "x" * 5000: {"stage": "nope", "script": ["x"]},
    }
    (tmp_path / ".gitlab-ci.yml").write_text(yaml.safe_dump(document, sort_keys=False))
    run = run_command("check-ci", str(tmp_path))
    assert run.code == 1
    lines = run.out.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith(r".gitlab-ci.yml: evil\n.gitlab-ci.yml: fake: forged line: tags ['kapsule'] are held")
    assert lines[1].startswith(r".gitlab-ci.yml: \x1b[2J\x1b[31mred: chosen stage nope does not exist")
    assert lines[2].startswith(".gitlab-ci.yml: leak-<redacted>: chosen stage nope")
    assert len(lines[3]) == 400 and " … " in lines[3] and lines[3].endswith("available stages are .pre, build, .post")
    assert token not in run.out + run.err and "\x1b" not in run.out + run.err


def test_an_unresolvable_name_is_one_escaped_error_line(tmp_path: Path) -> None:
    (tmp_path / ".gitlab-ci.yml").write_text('job: {script: !reference ["a\\nerror: forged", script]}\n')
    run = run_command("check-ci", str(tmp_path))
    assert run.code == 2
    assert run.err.splitlines() == [
        r"error: .gitlab-ci.yml: job: !reference [a\nerror: forged, script] could not be found"
    ]


def test_an_image_name_too_long_to_be_one_is_a_violation(check: Any) -> None:
    """Not matched at all: a registry's repository name has at most 255 characters, and this one is hostile."""
    image = "rg.fr-par.scw.cloud/gpu-ci/" + "a/" * 3000 + "x"
    (line,) = _lines(check(f"hyperopt-dqn: {{extends: .train-rl-base, script: [x], image: '{image}'}}\n"))
    assert line == (
        f".gitlab-ci.yml: hyperopt-dqn: image {image[:80]}… is longer than 4096 characters: not an image reference "
        "(a repository name has at most 255), the job fails"
    )
