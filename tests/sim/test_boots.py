"""A pool's cold start as measured figures, drawn per scale-up: reproducible, within its figures, the same k-th
boot for two specs on the same week, and no job lost when nodes boot near the slowest figure."""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

import pytest

from infra.model.platform import load_platform
from infra.sim.arrivals import week_jobs
from infra.sim.boots import Boots
from infra.sim.engine import simulate
from infra.sim.platform_scenario import boot_seed, scenario, sim_pools


def _draws(boots: Boots, seed: int, count: int = 400) -> list[Fraction]:
    stream = boots.draws(seed)
    return [stream.next_minutes() for _ in range(count)]


def test_the_median_alone_is_every_boot() -> None:
    assert set(_draws(Boots(Fraction(15)), 1)) == {15}
    assert set(_draws(Boots(Fraction(15), late=Fraction(5)), 1)) == {20}


@pytest.mark.parametrize(
    ("boots", "low", "high"),
    [
        (Boots(Fraction(15), Fraction(20)), 8, Fraction(28)),
        (Boots(Fraction(15), Fraction(20), Fraction(24)), 8, 24),
        (Boots(Fraction(15), None, Fraction(30)), 7, 30),
    ],
    ids=["p90", "p90-and-max", "max-alone"],
)
def test_draws_stay_within_the_figures(boots: Boots, low: float, high: float) -> None:
    drawn = _draws(boots, 7, 2_000)
    assert boots.fastest >= low and boots.slowest <= high
    assert min(drawn) >= boots.fastest and max(drawn) <= boots.slowest
    ordered = sorted(drawn)
    median, p90 = ordered[len(ordered) // 2], ordered[int(0.9 * len(ordered))]
    assert abs(median - 15) <= 1  # the draw goes through the median...
    if boots.p90 is not None:
        assert abs(p90 - boots.p90) <= Fraction(3, 2)  # ...and the p90 (2,000 draws)
    assert all(value.denominator in (1, 2, 5, 10) for value in drawn)  # to 0.1 min


def test_draws_are_seeded_and_the_kth_boot_is_common_to_two_specs(dev_platform: dict[str, Any]) -> None:
    boots = Boots(Fraction(15), Fraction(22), Fraction(35))
    assert _draws(boots, 3) == _draws(boots, 3) and _draws(boots, 3) != _draws(boots, 4)
    dev_platform["pools"]["ci-training"].update(cold_start_p90_minutes=22, cold_start_max_minutes=35)
    bigger = copy.deepcopy(dev_platform)
    bigger["pools"]["ci-training"]["max_size"] = 3
    one, three = (
        next(p for p in sim_pools(load_platform(spec), week=2) if p.name == "ci-training")
        for spec in (dev_platform, bigger)
    )
    assert one.cold_start_seed == three.cold_start_seed == boot_seed("ci-training", 2) != boot_seed("ci-training", 3)
    assert _draws(one.boots, one.cold_start_seed, 20) == _draws(three.boots, three.cold_start_seed, 20)


def test_each_node_of_a_week_boots_in_its_own_drawn_time(dev_platform: dict[str, Any]) -> None:
    dev_platform["pools"]["ci-training"].update(cold_start_p90_minutes=22, cold_start_max_minutes=35)
    platform = load_platform(dev_platform)
    result = simulate(scenario(platform, week_jobs(platform)))
    boots = [ready - created for _, created, ready in result.pool("ci-training").boots]
    assert len(set(boots)) > 5 and min(boots) >= 8 and max(boots) <= 35
    assert result.failed == ()


def test_boots_at_the_slowest_figure_lose_no_job(dev_platform: dict[str, Any]) -> None:
    """Every boot as slow as the slowest measured (60 min): the poll_timeout derived from that max holds them
    (no attempt retried); the one a median alone gives (49 min) fails first attempts, retried as new jobs."""
    measured = copy.deepcopy(dev_platform)
    measured["pools"]["ci-training"].update(cold_start_p90_minutes=30, cold_start_max_minutes=60)
    for spec, retried in ((measured, False), (dev_platform, True)):
        platform = load_platform(spec)
        jobs = [job for job in week_jobs(platform) if job.profile == "supervised"]
        result = simulate(scenario(platform, jobs, cold_start_minutes=Fraction(60)))
        assert result.failed == ()
        assert any(job.retried for job in result.jobs if job.pool == "ci-training") is retried
