"""The target over many weeks: each week drawn anew and reproducibly, the same weeks for two specs (common random
numbers), week 0 the one `plan` always simulated, the pooled p95, the weekly spread and the weeks met; and the
spec's keys and the `simulate --weeks` flags refused in one line each."""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

import pytest

from infra.__main__ import main
from infra.config.errors import SpecError
from infra.model.platform import load_platform
from infra.sim.arrivals import week_jobs
from infra.sim.week import simulate_week
from infra.sim.weeks import simulate_weeks


def test_each_week_is_drawn_anew_and_the_same_for_every_spec(dev_platform: dict[str, Any]) -> None:
    platform = load_platform(dev_platform)
    first, second = week_jobs(platform, week=0), week_jobs(platform, week=1)
    assert first == week_jobs(platform) and second == week_jobs(platform, week=1)  # seeded: reproducible
    assert [j.created_minute for j in first] != [j.created_minute for j in second]
    assert [j.minutes for j in first] != [j.minutes for j in second]
    bigger = copy.deepcopy(dev_platform)
    bigger["pools"]["ci-training"].update(max_size=3, warm=[{"days": "Mon", "from": "09:00", "to": "12:00"}])
    assert week_jobs(load_platform(bigger), week=1) == second  # the levers change no arrival


def test_week_0_is_the_plans_week_and_the_weeks_pool_their_jobs(dev_platform: dict[str, Any]) -> None:
    platform = load_platform(dev_platform)
    one = simulate_week(platform)
    weeks = simulate_weeks(platform, 4)
    assert one is not None and weeks is not None
    requests = weeks.of("merge_request")
    assert requests.weekly[0].percentile() == one.merge_request_p95
    assert requests.jobs == 4 * 150 and requests.pooled.waits == tuple(
        sorted(w for x in requests.weekly for w in x.waits)
    )
    low, high = requests.weekly_p95(10), requests.weekly_p95(90)
    assert low is not None and high is not None and low <= requests.p95 <= high  # type: ignore[operator]
    assert weeks.met_by_week == (False,) * 4 and weeks.met_weeks == 0 and weeks.target_met is False
    assert weeks.eur_per_week[0] == one.eur_per_week
    assert simulate_weeks(platform, 4) == weeks


def test_met_in_enough_weeks_is_the_confidence(dev_platform: dict[str, Any]) -> None:
    """The former recommendation meets the target in most weeks with nodes on time, in none 5 min late; at
    confidence 1, most is not enough."""
    pools = dev_platform["pools"]
    pools["ci-compile"]["max_size"] = pools["ci-training"]["max_size"] = 3
    pools["ci-training"]["gpu_sharing"]["replicas"] = 5
    platform = load_platform(dev_platform)
    on_time, late = simulate_weeks(platform, 10), simulate_weeks(platform, 10, late_boot=Fraction(5))
    assert on_time is not None and late is not None and on_time.met_weeks is not None
    assert on_time.required_weeks == 9 and on_time.met_weeks >= 9 and on_time.target_met
    assert late.met_weeks == 0 and late.margin == -5  # every job over the median waits for the late node
    assert not on_time.warnings() and "met in 0 of 10 simulated weeks" in str(late.warnings()[0])
    dev_platform["slo"]["confidence"] = 1.0
    strict = simulate_weeks(load_platform(dev_platform), 10)
    assert strict is not None and strict.required_weeks == 10
    assert strict.target_met is (strict.met_weeks == 10)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("weeks", 0, "platform.slo.weeks=0: Input should be greater than or equal to 1"),
        ("weeks", 101, "platform.slo.weeks=101: Input should be less than or equal to 100"),
        ("weeks", 2.5, "platform.slo.weeks=2.5: Input should be a valid integer"),
        ("confidence", 0, "platform.slo.confidence=0: Input should be greater than 0"),
        ("confidence", 1.5, "platform.slo.confidence=1.5: Input should be less than or equal to 1"),
    ],
)
def test_the_weeks_keys_are_refused_at_their_key(
    dev_platform: dict[str, Any], key: str, value: object, message: str
) -> None:
    dev_platform["slo"][key] = value
    with pytest.raises(SpecError) as caught:
        load_platform(dev_platform)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--weeks", "3"], "--weeks=3: needs --week (the weeks are whole weeks): add --week"),
        (["--weeks", "20"], "--weeks=20: needs --week"),  # in range: not "must be 1-100"
        (["--week", "--weeks", "0"], "--weeks=0: must be 1-100"),
        (["--week", "--weeks", "101"], "--weeks=101: must be 1-100"),
        (["--week", "--weeks", "2", "--late-boot", "-1"], "--late-boot='-1': not a number"),
        (["--week", "--weeks", "2", "--late-boot", "2000"], "--late-boot=2000: must be 0-1440 minutes"),
    ],
)
def test_bad_weeks_flags_are_one_line(flags: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", *flags]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {message}"), err


def test_simulate_weeks_prints_the_verdict_over_them(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--week", "--weeks", "3", "--late-boot", "5"]) == 0
    out = capsys.readouterr().out
    assert "every boot 5 min late" in out and "3 simulated week(s)" in out
    assert "merge_request  450" in out and "MISSED: in 0 of 3 weeks (at least 3 asked" in out
