"""infra.pipeline.environment: a job's variables from every source GitLab puts them in (global, `workflow: rules:`,
its own, its `rules:`, the project's), once per rule that may apply; and check-ci judging each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.pipelines import write_pipeline

from infra.config.load import load_spec
from infra.model.platform import derive
from infra.pipeline.environment import Workflow, environments, platform_variables, rule_choices
from infra.pipeline.resolve import ResolveError, resolve_file
from infra.pipeline.rules import CheckResult, check_pipeline, platform_templates


@pytest.mark.parametrize(
    ("rules", "reached"),
    [
        (None, [""]),
        ([], [""]),  # GitLab refuses an empty `rules:`; checked as none
        ("never", [""]),
        ([{"when": "never"}, {"variables": {"A": "1"}}], []),  # the first rule always matches and creates nothing
        ([{"if": "$X", "when": "never"}, {"variables": {"A": "1"}}], ["rules[1]"]),
        (
            [{"changes": ["a"]}, {"exists": ["b"], "when": "manual"}, {"when": "always"}, {"if": "$Y"}],
            ["rules[0]", "rules[1]", "rules[2]"],
        ),
        ([[{"if": "$X"}, [{"when": "never", "if": "$Y"}]], {"when": "delayed"}], ["rules[0]", "rules[2]"]),
        ([{"if": "$X", "when": "never"}, "not a rule", {"if": "$Z", "when": "never"}], []),
    ],
)
def test_the_rules_that_may_apply_are_those_gitlab_can_reach(rules: Any, reached: list[str]) -> None:
    """GitLab takes the first rule that matches: one without `if`/`changes`/`exists` always does (so nothing after it
    is reached), one with `when: never` creates no job. `!reference`d rules are flattened at any depth."""
    assert [choice.where for choice in rule_choices(rules, "")] == reached


@pytest.fixture
def platform(dev_platform: dict[str, Any]) -> Any:
    return derive(load_spec(dev_platform))


def _environments(tmp_path: Path, platform: Any, jobs: str, job: str = "job") -> list[Any]:
    pipeline = resolve_file(write_pipeline(tmp_path, jobs), tmp_path, platform_templates(platform))
    return environments(pipeline.created[job], Workflow.of(pipeline), platform_variables(platform))


def test_each_source_wins_over_the_one_before_as_in_gitlab(tmp_path: Path, platform: Any) -> None:
    """Global < workflow rule < the job's own < its rule < the project's CI/CD variables; tags see all but the job's
    rule."""
    (found,) = _environments(
        tmp_path,
        platform,
        """
        variables: {A: global, B: global, C: global, D: global, REGISTRY: mine}
        workflow: {rules: [{variables: {B: workflow, C: workflow, D: workflow}}]}
        job:
          stage: build
          script: [x]
          variables: {C: own, D: own}
          rules: [{variables: {D: rule, REGISTRY: rule}}]
        """,
    )
    assert {k: found.tag_variables[k] for k in "ABCD"} == {"A": "global", "B": "workflow", "C": "own", "D": "own"}
    assert {k: found.variables[k] for k in "ABCD"} == {"A": "global", "B": "workflow", "C": "own", "D": "rule"}
    assert found.variables["REGISTRY"] == found.tag_variables["REGISTRY"] == platform.registry_endpoint
    assert (found.origin["B"], found.origin["D"], found.label) == (
        (".gitlab-ci.yml", "workflow"),
        (".gitlab-ci.yml", "job"),
        "",  # one rule reached at each level: every pipeline GitLab creates takes it
    )


def test_each_combination_of_rules_that_may_apply_is_named(tmp_path: Path, platform: Any) -> None:
    found = _environments(
        tmp_path,
        platform,
        """
        workflow: {rules: [{if: $CI_COMMIT_TAG, variables: {W: "1"}}, {when: always}]}
        job:
          stage: build
          script: [x]
          rules: [{if: $A, variables: {R: a}}, {if: $B, variables: {R: b}}, {if: $C}, {if: $D, variables: {R: a}}]
        """,
    )
    assert [(e.label, e.variables.get("W"), e.variables.get("R")) for e in found] == [
        ("workflow: rules[0] and rules[0]", "1", "a"),
        ("workflow: rules[0] and rules[1]", "1", "b"),
        ("workflow: rules[0]", "1", None),
        ("rules[0]", None, "a"),
        ("rules[1]", None, "b"),
        ("", None, None),
    ]


def test_inherit_variables_drops_the_workflow_rules_ones_too(tmp_path: Path, platform: Any) -> None:
    """`inherit: variables:` filters the pipeline's root variables, which hold the workflow rule's."""
    (found,) = _environments(
        tmp_path,
        platform,
        """
        workflow: {rules: [{if: $CI_COMMIT_TAG, variables: {KEPT: "1", DROPPED: "1"}}]}
        job: {stage: build, script: [x], inherit: {variables: [KEPT]}}
        """,
    )
    assert ("KEPT" in found.tag_variables, "DROPPED" in found.tag_variables) == (True, False)


def test_a_job_no_rule_creates_has_no_environment(tmp_path: Path, platform: Any) -> None:
    jobs = "job: {stage: build, script: [x], rules: [{when: never}, {variables: {NVIDIA_DRIVER_CAPABILITIES: all}}]}\n"
    assert _environments(tmp_path, platform, jobs) == []
    piped = "workflow: {rules: [{when: never}]}\njob: {stage: build, script: [x]}\n"
    assert _environments(tmp_path, platform, piped) == []


def test_too_many_combinations_of_rules_are_over_budget(tmp_path: Path, platform: Any) -> None:
    rules = ", ".join(f"{{if: $A{i}, variables: {{N: '{i}'}}}}" for i in range(9))
    jobs = f"workflow: {{rules: [{rules}]}}\njob: {{stage: build, script: [x], rules: [{rules}]}}\n"
    with pytest.raises(
        ResolveError, match=r"^81 combinations of workflow: rules: and rules: variables \(more than 64\)"
    ):
        _environments(tmp_path, platform, jobs)


# --- through check-ci -------------------------------------------------------------------------------------------


@pytest.fixture
def check(tmp_path: Path, dev_platform: dict[str, Any]) -> Any:
    spec = load_spec(dev_platform)
    return lambda jobs: check_pipeline(write_pipeline(tmp_path, jobs), spec)


def _lines(result: CheckResult) -> list[str]:
    return [str(v) for v in result.violations]


FF = "FF_USE_ADVANCED_POD_SPEC_CONFIGURATION"


def _ff(line: str) -> str:
    """A guard's line up to the variable it sets (the reason after it is the spec's own)."""
    return line.partition(f"sets {FF}: ")[0] + f"sets {FF}"


def test_a_guard_set_in_a_rule_only_some_pipelines_take_is_a_violation(check: Any) -> None:
    """The conservative verdict: GitLab alone knows whether `if:` holds, so a rule that may apply is checked."""
    result = check(
        f"""
        hyperopt-ppo:
          extends: .train-rl-base
          script: [x]
          rules:
            - {{if: '$CI_COMMIT_BRANCH == "main"', when: never}}
            - {{if: $NIGHTLY, variables: {{{FF}: "false"}}}}
            - {{when: on_success}}
            - {{variables: {{CUDA_MPS_PIPE_DIRECTORY: /tmp}}}}
        """
    )
    assert [_ff(line) for line in _lines(result)] == [f".gitlab-ci.yml: hyperopt-ppo: rules[1]: variables: sets {FF}"]


def test_a_guard_in_workflow_rules_or_a_service_is_named_where_it_is_written(check: Any) -> None:
    result = check(
        f"""
        workflow:
          rules: [{{if: $CI_MERGE_REQUEST_IID, variables: {{{FF}: "false"}}}}, {{when: always}}]
        lint: {{stage: build, script: [x], tags: [docker]}}
        hyperopt-tft:
          extends: .train-validate-base
          script: [x]
          services: [{{name: rg.fr-par.scw.cloud/gpu-ci/db:1, variables: {{NVIDIA_DRIVER_CAPABILITIES: all}}}}]
        train-validate-dqn: {{extends: .train-rl-base, script: [x]}}
        """
    )
    lines = _lines(result)
    assert _ff(lines[0]) == f".gitlab-ci.yml: workflow: rules[0]: variables: sets {FF}"
    assert lines[0].endswith(" (2 jobs: hyperopt-tft, train-validate-dqn)")  # not lint: no platform job
    assert lines[1].startswith(
        ".gitlab-ci.yml: hyperopt-tft: services: 'rg.fr-par.scw.cloud/gpu-ci/db:1': variables: sets "
        "NVIDIA_DRIVER_CAPABILITIES: "
    )
    assert len(lines) == 2


def test_a_guard_a_rule_takes_by_reference_is_found(check: Any) -> None:
    result = check(
        """
        .knobs: {variables: {NVIDIA_MIG_CONFIG_DEVICES: all}}
        .nightly: {rules: [{if: $NIGHTLY, variables: !reference [.knobs, variables]}]}
        train-validate-tft:
          extends: .train-validate-base
          script: [x]
          rules: [!reference [.nightly, rules], {when: manual}]
        """
    )
    (line,) = _lines(result)
    assert line.startswith(".gitlab-ci.yml: train-validate-tft: rules[0]: variables: sets NVIDIA_MIG_CONFIG_DEVICES: ")


def test_a_guard_after_a_rule_that_always_applies_is_never_reached(check: Any) -> None:
    result = check(
        "report: {stage: build, script: [x], tags: [kapsule, gpu], rules: [{when: always}, {variables: {FF_X: '1'}}]}\n"
    )
    assert (_lines(result), result.jobs_checked) == ([], 1)


def test_a_rules_override_is_checked_on_the_runner_that_takes_the_job(check: Any) -> None:
    """A rule's `KUBERNETES_*` reaches the runner as the job's own do; only in the pipelines it applies to."""
    result = check(
        """
        hyperopt-dqn:
          extends: .train-rl-base
          script: [x]
          rules: [{if: $BIG, variables: {KUBERNETES_MEMORY_LIMIT: 200Gi}}, {when: on_success}]
        """
    )
    assert _lines(result) == [
        ".gitlab-ci.yml: hyperopt-dqn: KUBERNETES_MEMORY_LIMIT=200Gi is above the runner's "
        "memory_limit_overwrite_max_allowed=16Gi: the job would fail (in pipelines where rules[0] applies)"
    ]


@pytest.mark.parametrize(
    ("where", "pool"),
    [
        ("workflow: {rules: [{if: $CI_COMMIT_TAG, variables: {SIDE: ci-training}}, {when: always}]}", "ci-training"),
        ("workflow: {rules: [{variables: {SIDE: gpu}}]}\n        variables: {SIDE: ci-training}", "ci-compile"),
    ],
)
def test_tags_are_expanded_with_the_workflow_rules_variables(check: Any, where: str, pool: str) -> None:
    """GitLab expands tags with the root variables, the workflow rule's merged over the global ones; not with the
    job's own rule's."""
    result = check(
        f"""
        {where}
        hyperopt-dqn: {{extends: .train-rl-base, script: [x], tags: ["kapsule", "${{SIDE}}"]}}
        report:
          stage: build
          script: [x]
          tags: [kapsule, $SIDE]
          rules: [{{variables: {{SIDE: docker}}}}]
        """
    )
    assert pool in result.routes["hyperopt-dqn"] and pool in result.routes["report"]


@pytest.mark.parametrize("workflow", ["always", "{rules: {if: $X}}", "{rules: [never]}"])
def test_a_workflow_gitlab_refuses_is_a_violation_and_its_jobs_are_checked(check: Any, workflow: str) -> None:
    result = check(
        f"workflow: {workflow}\nreport: {{stage: build, script: [x], tags: [kapsule, gpu], variables: {{FF_A: '1'}}}}\n"
    )
    lines = _lines(result)
    assert lines[0].startswith(".gitlab-ci.yml: workflow: ") and lines[1].startswith(
        ".gitlab-ci.yml: report: sets FF_A: "
    )


def test_a_guard_named_by_an_id_token_or_a_secret_is_a_violation(check: Any) -> None:
    """GitLab hands an ID token and a secret to the job as variables of the names they are given."""
    result = check(
        """
        hyperopt-ppo:
          extends: .train-rl-base
          script: [x]
          id_tokens: {FF_USE_ADVANCED_POD_SPEC_CONFIGURATION: {aud: https://example.com}}
          secrets: {NVIDIA_VISIBLE_DEVICES: {vault: gpu/devices@ci}}
        """
    )
    lines = _lines(result)
    assert len(lines) == 2
    assert lines[0].startswith(".gitlab-ci.yml: hyperopt-ppo: id_tokens: sets FF_USE_ADVANCED_POD_SPEC_CONFIGURATION: ")
    assert lines[1].startswith(".gitlab-ci.yml: hyperopt-ppo: secrets: sets NVIDIA_VISIBLE_DEVICES: ")
