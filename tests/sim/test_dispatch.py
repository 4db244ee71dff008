"""The dev platform's dispatch, simulated: the design pipeline (20 training jobs in one stage) loses no job with one
runner per pool, whatever the order, cold start, slower jobs or a manager upgrade; the former single runner did."""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction
from typing import Any

import pytest
from support.paths import FIXTURES

from infra.__main__ import main
from infra.model.platform import Platform, load_platform
from infra.sim.bound import bound_makespan
from infra.sim.engine import simulate
from infra.sim.platform_scenario import PlannedJob, scenario, sim_pools, sim_runners, single_runner
from infra.sim.scenario import Upgrade

SAMPLE_PIPELINE = FIXTURES / "training-repo" / ".gitlab-ci.yml"


def design_pipeline(platform: Platform) -> list[PlannedJob]:
    """Every family's train-validate job and its hyperopt, in the sample pipeline's order: 4 RL (30 min), 16
    supervised (40 min at 34 % of a GPU)."""
    minutes = {"rl": Fraction(30), "supervised": Fraction(40)}
    return [
        PlannedJob(f"{kind}-{family}", name, minutes[name])
        for name, profile in platform.profiles.items()
        for family in profile.families
        for kind in ("train-validate", "hyperopt")
    ]


@pytest.fixture
def platform(dev_platform: dict[str, Any]) -> Platform:
    return load_platform(dev_platform)


def _orders(jobs: list[PlannedJob]) -> list[list[PlannedJob]]:
    """The YAML order, RL last, and 20 seeded random orders."""
    rl_last = [j for j in jobs if j.profile != "rl"] + [j for j in jobs if j.profile == "rl"]
    generator = random.Random(20)
    shuffled = [generator.sample(jobs, len(jobs)) for _ in range(20)]
    return [jobs, rl_last, *shuffled]


def test_the_platforms_pools_and_runners_as_the_simulation_sees_them(platform: Platform) -> None:
    pools = {p.name: p for p in sim_pools(platform)}
    assert set(pools) == {"ci-compile", "ci-training"}  # the system pool runs no CI job
    assert (pools["ci-compile"].slots_per_node, pools["ci-training"].slots_per_node) == (2, 4)
    assert pools["ci-training"].cold_start_minutes == 15 and not pools["ci-training"].mps
    runners = {r.name: r for r in sim_runners(platform)}
    assert runners["ci-training"].tags == frozenset({"kapsule", "ci-training"})
    assert runners["ci-training"].pools == frozenset({"ci-training"})
    assert (runners["ci-compile"].concurrent, runners["ci-training"].concurrent) == (2, 4)
    assert runners["ci-training"].poll_timeout_minutes == 49 and runners["ci-training"].upgrade_strategy == "recreate"
    (single,) = single_runner(platform)
    assert (single.concurrent, single.poll_timeout_minutes, single.upgrade_strategy) == (6, 15, "rolling")


def test_the_simulated_job_timeout_is_the_templates_not_the_runners_maximum(platform: Platform) -> None:
    """The jobs get their template's `timeout:` (3h 22m on the L4, 2h 52m on the L40S), below the runners'
    `maximum_timeout` of 3h 30m: a 190-min RL job on a cold pool (15 + 190 = 205 min) is killed at 202 min."""
    runners = {r.name: r for r in sim_runners(platform)}
    assert (runners["ci-compile"].job_timeout_minutes, runners["ci-training"].job_timeout_minutes) == (202, 172)
    assert platform.spec.runner.job_timeout_seconds == 210 * 60
    fits = simulate(scenario(platform, [PlannedJob("hyperopt-dqn", "rl", Fraction(185))]))
    assert fits.failed == ()
    (killed,) = simulate(scenario(platform, [PlannedJob("hyperopt-dqn", "rl", Fraction(190))])).failed
    assert killed.reason == "job_execution_timeout" and killed.finished is not None and killed.taken is not None
    assert killed.finished - killed.taken == 202


@pytest.mark.parametrize("cold_start", [None, Fraction(15)], ids=["cold-as-configured", "cold-15"])
@pytest.mark.parametrize("slower", [Fraction(1), Fraction("1.1")], ids=["as-estimated", "10pc-slower"])
@pytest.mark.parametrize("upgrade", [None, 20], ids=["no-upgrade", "upgrade-at-20"])
def test_no_job_of_the_design_pipeline_fails_in_any_order(
    platform: Platform, cold_start: Fraction | None, slower: Fraction, upgrade: int | None
) -> None:
    jobs = design_pipeline(platform)
    upgrades = (Upgrade(upgrade),) if upgrade is not None else ()
    for order in _orders(jobs):
        run = simulate(scenario(platform, order, slower=slower, cold_start_minutes=cold_start, upgrades=upgrades))
        assert run.failed == (), [(j.name, j.reason, j.cause) for j in run.failed]
        assert len(run.jobs) == 20


def test_the_design_pipeline_runs_at_the_bound_its_slots_set(platform: Platform) -> None:
    """No GPU slot idles while a job of its pool waits: within 1.1x of cold start + waves x job time."""
    for order in _orders(design_pipeline(platform)):
        built = scenario(platform, order)
        run = simulate(built)
        bound = bound_makespan(built)
        assert run.makespan <= Fraction(11, 10) * bound, (run.makespan, bound)
    # The YAML order by hand: ci-training, 16 jobs, 4 a wave: 15 + 4 x 54.4 = 232.6 min.
    assert simulate(scenario(platform, design_pipeline(platform))).makespan == Fraction("232.6")


def test_the_former_single_runner_loses_jobs(platform: Platform) -> None:
    """One runner for both pools, concurrent 6 over 2 + 4 slots, poll_timeout = the cold start: the runner
    takes jobs the cluster cannot place, and their pods time out (runner_system_failure)."""
    failures = []
    for order in _orders(design_pipeline(platform)):
        run = simulate(scenario(platform, order, layout="single"))
        failures.append(len(run.failed))
        assert {j.reason for j in run.failed} <= {"runner_system_failure"}
    assert min(failures) >= 4, failures
    upgraded = simulate(scenario(platform, design_pipeline(platform), layout="single", upgrades=(Upgrade(20),)))
    plain = simulate(scenario(platform, design_pipeline(platform), layout="single"))
    assert len(upgraded.failed) >= len(plain.failed)


def test_a_poll_timeout_without_margin_fails_the_first_job_on_a_cold_pool(platform: Platform) -> None:
    built = scenario(platform, design_pipeline(platform)[:1])
    no_margin = replace(built, runners=tuple(replace(r, poll_timeout_minutes=15) for r in built.runners))
    retried = simulate(no_margin)  # the templates retry it: the second attempt finds the node up
    assert retried.failed == () and retried.retried_by_reason == {"runner_system_failure": 1}
    no_retry = replace(no_margin, jobs=tuple(replace(j, retry_max=0) for j in no_margin.jobs))
    assert [j.reason for j in simulate(no_retry).failed] == ["runner_system_failure"]
    assert simulate(built).failed == () and not simulate(built).retried_by_reason  # 49 min: cold start + margin


def test_simulate_command_compares_the_layouts(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["simulate", "--pipeline", str(SAMPLE_PIPELINE), "--orders", "5", "--cold-start", "15", "--slower", "1.1"]
    assert main([*args, "--upgrade-at", "20"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Simulated 20 jobs (4 rl, 16 supervised) on stack 'dev': cold start 15 min; jobs x1.1;")
    assert "per-pool runners  0  " in out
    assert main([*args, "--single-runner"]) == 1  # the former layout fails jobs: exit 1
    single = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("single runner"))
    assert int(single.split()[3]) >= 4


NOT_A_NUMBER = "not a number like 1.1 or 15 (a decimal, or a fraction like 11/10 whose denominator is not 0)"


def test_a_pipeline_past_the_engines_caps_is_refused_naming_the_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("infra.cli.simulate.MAX_JOBS", 19)  # the sample pipeline has 20 training jobs
    assert main(["simulate", "--pipeline", str(SAMPLE_PIPELINE)]) == 2
    assert capsys.readouterr().err == (
        f"error: --pipeline {SAMPLE_PIPELINE}: 20 jobs to simulate, the simulation takes at most 19\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--orders", "1000"], "error: --orders=1000: must be 0-200"),
        (["--slower", "0"], "error: --slower=0: must be above 0 and at most 10"),
        (["--pipeline", "/nonexistent/.gitlab-ci.yml"], "error: no pipeline file /nonexistent/.gitlab-ci.yml"),
        (["--slower", "1/0"], f"error: --slower='1/0': {NOT_A_NUMBER}"),
        (["--cold-start", "1e999999"], f"error: --cold-start='1e999999': {NOT_A_NUMBER}"),
        (["--upgrade-at", "nan"], f"error: --upgrade-at='nan': {NOT_A_NUMBER}"),
        (["--cold-start", "9" * 5000], f"error: --cold-start='{'9' * 39}…': {NOT_A_NUMBER}"),
        (["--cold-start", "100000"], "error: --cold-start=100000: must be 0-1440 minutes"),
        (
            ["--week", "--orders", "200", "--single-runner"],
            "error: --orders=200 --single-runner: 402 run(s) of 200 jobs = 80400 simulated jobs, above the budget "
            "of 50000 per command: fewer orders, or a smaller pipeline",
        ),
    ],
)
def test_simulate_command_refuses_bad_knobs(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert main(["simulate", *args]) == 2
    assert capsys.readouterr().err.strip() == message
