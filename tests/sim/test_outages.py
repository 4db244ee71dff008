"""No job lost when a GPU is late or out of stock: the retries the templates carry, each attempt's derived
poll_timeout, and stock-outs in the simulation (issue: a node after 60 min used to fail every job)."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Any

import pytest
from support.paths import FIXTURES

from infra.__main__ import main
from infra.model.platform import Platform, load_platform
from infra.sim.arrivals import week_jobs
from infra.sim.engine import simulate
from infra.sim.pipeline import pipeline_jobs
from infra.sim.platform_scenario import PlannedJob, scenario
from infra.sim.what_if import Knobs, scenario_rows

SAMPLE_PIPELINE = FIXTURES / "training-repo" / ".gitlab-ci.yml"


@pytest.fixture
def platform(dev_platform: dict[str, Any]) -> Platform:
    return load_platform(dev_platform)


def _monday(platform: Platform) -> list[PlannedJob]:
    return [job for job in week_jobs(platform) if job.created_minute < 24 * 60]


def _first_burst(jobs: list[PlannedJob], profile: str, after: int = 0) -> Fraction:
    return min(job.created_minute for job in jobs if job.profile == profile and job.created_minute >= after)


def _run(platform: Platform, jobs: list[PlannedJob], pool: str, start: Fraction, minutes: int) -> Any:
    (row,) = scenario_rows(platform, jobs, Knobs(stockouts={pool: ((start, start + minutes),)}), single_runner=False)
    return row


@pytest.mark.parametrize("pool", ["ci-training", "ci-compile"])
def test_a_90_minute_stockout_at_the_start_of_the_design_pipeline_loses_no_job(platform: Platform, pool: str) -> None:
    """The pipeline's pods wait Pending; each attempt fails after its 49-min poll_timeout and is retried at the end
    of GitLab's queue; the node comes once the stock-out ends, and every job runs."""
    jobs = pipeline_jobs(platform, SAMPLE_PIPELINE)
    row = _run(platform, jobs, pool, Fraction(0), 90)
    assert (row.failed, row.retried > 0) == (0, True)


@pytest.mark.parametrize(("pool", "profile"), [("ci-training", "supervised"), ("ci-compile", "rl")])
def test_a_90_minute_stockout_in_the_middle_of_the_dev_day_loses_no_job(
    platform: Platform, pool: str, profile: str
) -> None:
    monday = _monday(platform)
    start = _first_burst(monday, profile, after=12 * 60)  # the first merge request after noon finds no node
    row = _run(platform, monday, pool, start, 90)
    assert (row.failed, row.retried > 0) == (0, True)


def test_a_stockout_past_the_tolerance_fails_jobs_by_reason_counting_a_retried_job_once(platform: Platform) -> None:
    """Five hours without a node: more than the 122 min the pool survives (3 attempts x 49 min - cold start -
    margin). Each job that fails for good counts once, whatever its attempts; the attempts retried are apart."""
    monday = _monday(platform)
    start = _first_burst(monday, "supervised")
    jobs = scenario(platform, monday, stockouts={"ci-training": ((start, start + 300),)})
    result = simulate(jobs)
    assert result.failed_by_reason == {"runner_system_failure": len(result.failed)} and result.failed
    assert len({job.first_id for job in result.failed}) == len(result.failed)  # one line per job, not per attempt
    assert result.retried_by_reason["runner_system_failure"] >= 2 * len(result.failed)  # each ran out of attempts
    assert {j.attempt for j in result.failed} == {2}
    assert len(result.finals) == len(monday)


def test_the_pool_survives_the_outage_the_plan_states(platform: Platform) -> None:
    """A job taken when the outage starts: its node must be up, with margin, before its last attempt's deadline."""
    runner = platform.runners["ci-training"]
    survived = runner.survives_outage_minutes
    assert survived >= 120  # the default tolerance: a 2-h outage loses nothing
    built = scenario(platform, pipeline_jobs(platform, SAMPLE_PIPELINE)[:1])
    training = [job for job in built.jobs if job.pool == "ci-training"][:1]
    single = replace(built, jobs=tuple(replace(job, created_minute=0) for job in training))
    for outage, lost in ((survived, 0), (survived + 30, 1)):
        stocked = replace(single, pools=tuple(replace(p, stockouts=((0, outage),)) for p in single.pools))
        assert len(simulate(stocked).failed) == lost, outage


def test_simulate_stockout_flag(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["simulate", "--pipeline", str(SAMPLE_PIPELINE), "--stockout", "ci-training:0-90"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "ci-training stock-out minutes 0-90" in out
    assert "per-pool runners: " in out and "attempts retried (counted once)" in out
    assert main([*args[:-1], "ci-training:0-1000"]) == 1  # queued behind each other, attempts last longer
    assert "per-pool runners: failed " in capsys.readouterr().out


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "ci-training",
            "error: --stockout='ci-training': expected POOL:A-B, minutes from the start (ci-training:0-90)",
        ),
        ("ci-training:90-0", "error: --stockout='ci-training:90-0': the window must end after it starts"),
        ("nowhere:0-90", "error: --stockout nowhere: not a GPU pool of the platform (ci-compile, ci-training)"),
        ("ci-training:0-1e9", "error: --stockout='1e9': not a number like 1.1 or 15"),
        (  # a pool name from the command line cannot garble the terminal nor forge a second line
            "x\x1b[2J\nforged line:0-9",
            "error: --stockout x\\x1b[2J\\nforged line: not a GPU pool of the platform",
        ),
        (  # more windows than the engine takes: it used to end in a traceback
            [f"ci-training:{minute}-{minute + 1}" for minute in range(0, 402, 2)],
            "error: --stockout ci-training: 201 windows, the simulation takes at most 200",
        ),
    ],
    ids=["no-window", "reversed", "no-pool", "exponent", "control-characters", "too-many-windows"],
)
def test_a_bad_stockout_is_one_line(capsys: pytest.CaptureFixture[str], value: str | list[str], message: str) -> None:
    values = [value] if isinstance(value, str) else value
    assert main(["simulate", *(arg for text in values for arg in ("--stockout", text))]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and len(err.splitlines()) == 1, err


def test_the_plan_states_the_outage_each_pool_survives(dev_plan: Any) -> None:
    (header,) = [line for line in dev_plan.out.splitlines() if line.startswith("runner ") and "  tags  " in line]
    assert "poll x attempts" in header and "survives outage" in header
    assert "49 min x 3       122 min" in dev_plan.out
