"""`simulate --pipeline` dispatches the tags check-ci routes: both run on the same pipelines (tags in other
spellings, through variables of every source, job keys YAML reads as numbers, rules that create no job)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.pipelines import write_pipeline
from support.plans import run_command

from infra.config.load import load_spec
from infra.model.platform import Platform, derive
from infra.pipeline.resolve import resolve_file
from infra.pipeline.rules import check_resolved, platform_templates
from infra.sim.pipeline import pipeline_jobs

PIPELINES = {
    "spellings": """
        train-validate-dqn: {extends: .train-rl-base, script: [x], tags: ["gpu ,\\tkapsule", gpu]}
        hyperopt-mamba2: {extends: .train-validate-base, script: [x], tags: ["'ci-training', kapsule,,"]}
        """,
    "variables": """
        variables: {RL: "kapsule , gpu"}
        workflow: {rules: [{variables: {SUPERVISED: "ci-training,kapsule"}}]}
        hyperopt-ppo: {extends: .train-rl-base, script: [x], tags: [$RL]}
        train-validate-kan: {extends: .train-validate-base, script: [x], tags: ["${SUPERVISED}"], variables: {X: "1"}}
        """,
    "workflow moves a job": """
        variables: {SIDE: gpu}
        workflow: {rules: [{when: always, variables: {SIDE: ci-training}}]}
        hyperopt-dqn: {extends: .train-rl-base, script: [x], tags: [kapsule, "%SIDE%"]}
        """,
    "keys and rules": """
        2.50: {extends: .train-rl-base, script: [x]}
        train-validate-xlstm: {extends: .train-validate-base, script: [x], rules: [{when: never}]}
        hyperopt-tlob: {extends: .train-validate-base, script: [x], rules: [{if: $NEVER, when: never}, {when: manual}]}
        """,
}


@pytest.fixture
def platform(dev_platform: dict[str, Any]) -> Platform:
    """The dev stack, with one run time for every RL job, the job `2.5` too (no kind prefixes its name)."""
    dev_platform["workload"]["profiles"]["rl"] = {"jobs_per_day": 8, "minutes_per_job": 30}
    return derive(load_spec(dev_platform))


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_the_simulation_routes_each_job_as_check_ci_does(tmp_path: Path, platform: Platform, name: str) -> None:
    path = write_pipeline(tmp_path, PIPELINES[name])
    checked = check_resolved(resolve_file(path, tmp_path, platform_templates(platform)), platform)
    simulated = {
        job.name: {r.pool for r in platform.runners_taking(job.tags or ())} for job in pipeline_jobs(platform, path)
    }
    assert simulated == checked.routes
    assert all(len(pools) == 1 for pools in simulated.values())


def test_a_job_that_lands_on_another_pool_through_a_workflow_rule_is_simulated_there(
    tmp_path: Path, platform: Platform
) -> None:
    path = write_pipeline(tmp_path, PIPELINES["workflow moves a job"])
    (job,) = pipeline_jobs(platform, path)
    assert {r.pool for r in platform.runners_taking(job.tags or ())} == {"ci-training"}


def test_jobs_whose_tags_need_their_variables_are_not_simulated_as_stuck(tmp_path: Path) -> None:
    """Before, the simulation dispatched `$RL` as written: no runner holds it, both jobs failed stuck."""
    run = run_command("simulate", "--pipeline", str(write_pipeline(tmp_path, PIPELINES["variables"])))
    assert run.code == 0, run.out + run.err
    assert "per-pool runners  0 " in run.out
