"""infra.pipeline.rules: routing by tags over the platform's runners, one per GPU pool.

On the dev stack the default pool's runner holds [kapsule, gpu, ci-compile], the other's [kapsule,
ci-training]; each runner admits node selectors of its own pool only, and its maxima are those of its
pool's profiles.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from infra.config.load import load_spec
from infra.model.platform import load_platform
from infra.pipeline.rules import check_pipeline

PIPELINE = """
stages: [build, train]
.train-rl-base: {stage: train, tags: [kapsule, gpu], variables: {HYPEROPT_EPOCHS: "8"}}
.train-validate-base:
  stage: train
  tags: [kapsule, ci-training]
  variables: {KUBERNETES_NODE_SELECTOR_POOL: k8s.scaleway.com/pool-name=ci-training}
train-validate-dqn: {extends: .train-rl-base, script: [train]}
train-validate-tft: {extends: .train-validate-base, script: [train]}
lint: {stage: build, script: [ruff], tags: [docker]}
"""


@pytest.fixture
def check(tmp_path: Path, dev_platform: dict[str, Any]) -> Any:
    spec = load_spec(dev_platform)

    def run(extra: str) -> list[str]:
        path = tmp_path / ".gitlab-ci.yml"
        path.write_text(PIPELINE + textwrap.dedent(extra))
        return [str(v) for v in check_pipeline(path, spec).violations]

    return run


def test_the_fleet_is_one_runner_per_pool(dev_platform: dict[str, Any]) -> None:
    """What these tests route against: the dev stack's runners and the tags its templates carry."""
    platform = load_platform(dev_platform)
    assert {name: r.tags for name, r in platform.runners.items()} == {
        "ci-compile": ("kapsule", "gpu", "ci-compile"),
        "ci-training": ("kapsule", "ci-training"),
    }
    assert {p.template: p.tags for p in platform.profiles.values()} == {
        ".train-rl-base": ("kapsule", "gpu"),
        ".train-validate-base": ("kapsule", "ci-training"),
    }


def test_the_templates_tags_each_reach_one_runner(check: Any) -> None:
    assert check("") == []


def test_a_job_no_runner_takes_is_named_with_its_tags(check: Any) -> None:
    assert check("report: {stage: build, script: [x], tags: [kapsule, docker]}\n") == [
        ".gitlab-ci.yml: report: tags ['kapsule', 'docker']: no gpu-ci runner holds them all (ci-compile "
        "['kapsule', 'gpu', 'ci-compile'], ci-training ['kapsule', 'ci-training']): no runner takes it"
    ]


def test_a_job_of_two_pools_is_named_with_its_pools(check: Any) -> None:
    assert check("report: {stage: build, script: [x], tags: [kapsule]}\n") == [
        ".gitlab-ci.yml: report: tags ['kapsule'] are held by the runners of pools ci-compile, ci-training: "
        "either may take it"
    ]


def test_a_family_job_taken_by_another_profiles_runner(check: Any) -> None:
    assert check("hyperopt-ppo: {extends: .train-rl-base, script: [x], tags: [kapsule, ci-training]}\n") == [
        ".gitlab-ci.yml: hyperopt-ppo: tags ['kapsule', 'ci-training'] are taken by runner ci-training (pool "
        "ci-training), not by profile rl's runner ci-compile ['kapsule', 'gpu', 'ci-compile']"
    ]


def test_a_family_with_an_underscore_is_a_word_of_the_job_name(tmp_path: Path, dev_platform: dict[str, Any]) -> None:
    """Families may hold `_`: `my_model` is a token of `train-validate-my_model`, as it is for the workload."""
    dev_platform["profiles"]["supervised"]["families"].append("my_model")
    path = tmp_path / ".gitlab-ci.yml"
    path.write_text(PIPELINE + "train-validate-my_model: {extends: .train-rl-base, script: [x]}\n")
    assert [str(v) for v in check_pipeline(path, load_spec(dev_platform)).violations] == [
        ".gitlab-ci.yml: train-validate-my_model: extends .train-rl-base, not .train-validate-base: my_model jobs "
        "run with profile supervised on pool ci-training"
    ]


def test_a_node_selector_is_checked_by_the_runner_that_takes_the_job(check: Any) -> None:
    """ci-compile is a pool of the platform, but not one the ci-training runner admits."""
    lines = check(
        """
        hyperopt-kan:
          extends: .train-validate-base
          script: [x]
          variables: {KUBERNETES_NODE_SELECTOR_POOL: k8s.scaleway.com/pool-name=ci-compile}
        """
    )
    assert lines == [
        ".gitlab-ci.yml: hyperopt-kan: KUBERNETES_NODE_SELECTOR_POOL=k8s.scaleway.com/pool-name=ci-compile is "
        r"refused by runner ci-training (node_selector_overwrite_allowed=^k8s\.scaleway\.com/pool-name=(ci-training)$)"
        ": the job would fail"
    ]


def test_resources_are_checked_against_the_maxima_of_the_runner_that_takes_the_job(check: Any) -> None:
    """20Gi is within the platform's largest limit (40Gi, ci-training) but not within ci-compile's."""
    extra = "hyperopt-dqn: {extends: .train-rl-base, script: [x], variables: {KUBERNETES_MEMORY_LIMIT: %s}}\n"
    assert check(extra % "16Gi") == []
    assert check(extra % "20Gi") == [
        ".gitlab-ci.yml: hyperopt-dqn: KUBERNETES_MEMORY_LIMIT=20Gi is above the runner's "
        "memory_limit_overwrite_max_allowed=16Gi: the job would fail"
    ]


def test_foreign_and_untagged_jobs_are_not_the_platforms(check: Any) -> None:
    assert (
        check("other: {stage: build, script: [x], tags: [docker, arm64]}\nplain: {stage: build, script: [x]}\n") == []
    )


HELD_PIPELINE = """
stages: [train]
.train-rl-base:
  stage: train
  tags: [kapsule, "ci-compile-${CI_PIPELINE_SOURCE}"]
  retry: {max: 2, when: [runner_system_failure, stuck_or_timeout_failure, scheduler_failure]}
"""


@pytest.fixture
def check_held(tmp_path: Path, dev_platform: dict[str, Any]) -> Any:
    """The dev stack with one of the L4's two slots held for merge requests: its template routes by source."""
    dev_platform["pools"]["ci-compile"]["merge_request_slots"] = 1
    spec = load_spec(dev_platform)

    def run(jobs: str) -> list[str]:
        path = tmp_path / ".gitlab-ci.yml"
        path.write_text(HELD_PIPELINE + textwrap.dedent(jobs))
        return [str(v) for v in check_pipeline(path, spec).violations]

    return run


def test_a_job_of_a_pool_with_held_slots_is_checked_for_both_kinds_of_pipeline(check_held: Any) -> None:
    assert check_held("train-validate-dqn: {extends: .train-rl-base, script: [train]}\n") == []


def test_a_job_that_defeats_the_merge_request_routing_is_named(check_held: Any) -> None:
    found = check_held(
        """
        train-validate-dqn: {extends: .train-rl-base, script: [train], tags: [kapsule, gpu]}
        hyperopt-ppo: {extends: .train-rl-base, script: [train], variables: {CI_PIPELINE_SOURCE: schedule}}
        train-validate-ppo:
          extends: .train-rl-base
          script: [train]
          rules: [{if: $CI_MERGE_REQUEST_IID, variables: {CI_PIPELINE_SOURCE: push}}, {when: on_success}]
        """
    )
    assert found == [
        ".gitlab-ci.yml: train-validate-dqn: sets its own tags ['kapsule', 'gpu'] instead of .train-rl-base's "
        "['kapsule', 'ci-compile-${CI_PIPELINE_SOURCE}']: its merge-request pipelines' jobs no longer reach pool "
        "ci-compile's held slots (or no runner at all); drop `tags:` from the job",
        ".gitlab-ci.yml: hyperopt-ppo: sets CI_PIPELINE_SOURCE, which GitLab sets and the template's tags route by "
        "(pool ci-compile holds slots for merge requests): the job lands where its value says, not where its "
        "pipeline is",
        ".gitlab-ci.yml: train-validate-ppo: sets CI_PIPELINE_SOURCE, which GitLab sets and the template's tags "
        "route by (pool ci-compile holds slots for merge requests): the job lands where its value says, not where "
        "its pipeline is",
    ]


@pytest.mark.parametrize(
    ("retry", "verdict"),
    [
        ("2", None),
        ("{max: 2}", None),
        ("{max: 2, when: always}", None),
        ("0", "retry: max 0: fewer than the templates' 2 retries of what the platform causes"),
        ("{max: 1, when: [runner_system_failure]}", "retry: max 1: fewer than the templates' 2 retries"),
        (
            "{max: 2, when: [script_failure]}",
            "retry: when ['script_failure'] leaves out runner_system_failure, stuck_or_timeout_failure, "
            "scheduler_failure",
        ),
        ("yes", "retry: 'true' is not a retry GitLab accepts"),
        ("~", "retry: empty is not a retry GitLab accepts"),
        ("3", "retry: max 3 (GitLab takes 0 to 2): GitLab refuses the pipeline"),
        ("{max: 99999999999999999999}", "retry: max 99999999999999999999 (GitLab takes 0 to 2): GitLab refuses"),
        ("{max: 2, when: [always, nonsense]}", "retry: when nonsense (no failure reason GitLab knows): GitLab refuses"),
        ("{max: 2, tries: 5}", "retry: unknown keys tries: GitLab refuses the pipeline"),
    ],
)
def test_a_job_that_overrides_the_retry_away_is_named(check: Any, retry: str, verdict: str | None) -> None:
    found = check(f"hyperopt-dqn: {{extends: .train-rl-base, script: [train], retry: {retry}}}\n")
    if verdict is None:
        assert found == []
    else:
        (line,) = found
        assert line.startswith(f".gitlab-ci.yml: hyperopt-dqn: {verdict}"), line


def test_a_job_of_no_family_that_extends_a_template_keeps_its_retry(check: Any) -> None:
    """`evaluate` extends the L4's template and runs on its pool: its pod waits for a node like a family's job;
    its `retry: 0` was not looked at."""
    found = check("evaluate: {extends: .train-rl-base, script: [eval], retry: 0}\n")
    (line,) = found
    assert line.startswith(".gitlab-ci.yml: evaluate: retry: max 0: fewer than the templates' 2 retries"), line


@pytest.mark.parametrize(
    ("pipeline", "verdict"),
    [
        (  # a job of no family that extends the template and pins the held slots' tag: batch jobs take them
            "evaluate: {extends: .train-rl-base, script: [eval], tags: [kapsule, ci-compile-merge_request_event]}\n",
            "evaluate: sets its own tags ['kapsule', 'ci-compile-merge_request_event'] instead of .train-rl-base's",
        ),
        (  # workflow: rules: variables set the source for every job of the pipeline
            "workflow: {rules: [{variables: {CI_PIPELINE_SOURCE: merge_request_event}}]}\n"
            "train-validate-dqn: {extends: .train-rl-base, script: [train]}\n",
            "train-validate-dqn: workflow: rules: sets CI_PIPELINE_SOURCE",
        ),
        (  # rules taken by a reference to rules that are themselves a reference
            ".inner: {rules: [{if: $X, variables: {CI_PIPELINE_SOURCE: push}}]}\n"
            ".outer: {rules: [!reference [.inner, rules]]}\n"
            "train-validate-dqn: {extends: .train-rl-base, script: [train], rules: [!reference [.outer, rules]]}\n",
            "train-validate-dqn: sets CI_PIPELINE_SOURCE",
        ),
    ],
)
def test_other_routes_around_the_merge_request_routing_are_named(check_held: Any, pipeline: str, verdict: str) -> None:
    found = check_held(pipeline)
    assert any(line.startswith(f".gitlab-ci.yml: {verdict}") for line in found), found


@pytest.mark.parametrize(
    "tags",
    [
        '[kapsule, "ci-compile-$CI_PIPELINE_SOURCE"]',
        '["ci-compile-${CI_PIPELINE_SOURCE}", kapsule]',
        '[kapsule, kapsule, "ci-compile-${CI_PIPELINE_SOURCE}"]',
    ],
)
def test_tags_that_route_as_the_template_s_do_are_not_a_violation(check_held: Any, tags: str) -> None:
    """GitLab expands `$CI_PIPELINE_SOURCE` as it does `${CI_PIPELINE_SOURCE}`; a runner matches tags as a set."""
    assert check_held(f"train-validate-dqn: {{extends: .train-rl-base, script: [train], tags: {tags}}}\n") == []


def test_tags_that_route_merge_requests_alike_but_not_batch_pipelines_are_a_violation(check_held: Any) -> None:
    found = check_held(
        'hyperopt-dqn: {extends: .train-rl-base, script: [x], tags: [kapsule, "ci-compile-merge_request_event"]}\n'
    )
    assert len(found) == 1 and "sets its own tags" in found[0]


@pytest.mark.parametrize(
    ("variables", "name"),
    [
        ("{NVIDIA_VISIBLE_DEVICES: all}", "NVIDIA_VISIBLE_DEVICES"),
        ('{CUDA_VISIBLE_DEVICES: "0,1"}', "CUDA_VISIBLE_DEVICES"),
        ("{CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: 100}", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"),
        ('{FF_USE_ADVANCED_POD_SPEC_CONFIGURATION: "false"}', "FF_USE_ADVANCED_POD_SPEC_CONFIGURATION"),
    ],
)
def test_a_job_may_not_set_what_disarms_a_guard(check: Any, variables: str, name: str) -> None:
    """What the spec refuses in its CI and profile variables, a training job may not set either."""
    found = check(f"hyperopt-dqn: {{extends: .train-rl-base, script: [x], variables: {variables}}}\n")
    assert len(found) == 1 and found[0].startswith(f".gitlab-ci.yml: hyperopt-dqn: sets {name}: ")


def test_a_guard_variable_set_globally_is_named_where_it_is_written_with_the_jobs_it_breaks(check: Any) -> None:
    found = check(
        "variables: {NVIDIA_VISIBLE_DEVICES: all}\n"
        "hyperopt-dqn: {extends: .train-rl-base, script: [x]}\n"
        "other: {stage: build, script: [x], tags: [docker]}\n"
    )
    assert len(found) == 1 and found[0].startswith(
        ".gitlab-ci.yml: variables: sets NVIDIA_VISIBLE_DEVICES: would change"
    )
    assert "hyperopt-dqn" in found[0] and "other" not in found[0]


def test_lower_case_names_are_other_variables(check: Any) -> None:
    assert (
        check("hyperopt-dqn: {extends: .train-rl-base, script: [x], variables: {nvidia_visible_devices: all}}\n") == []
    )
