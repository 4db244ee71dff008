"""`recommend`'s second step (`infra.sim.refine`): the half-hour grid of warm windows, the moves the arrival profile
allows, the seeds from the bound, and the descent on a stack whose optimum is known."""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

from infra.model.platform import load_platform
from infra.offline.stack_config import load_stack_config
from infra.sim.arrivals import week_jobs
from infra.sim.levers import Levers
from infra.sim.refine import SLOTS, _blocks, arrival_rates, grid, seed_levers, windows
from infra.sim.target_cost import week_bound


def _dev() -> dict[str, Any]:
    return copy.deepcopy(load_stack_config("dev").get("platform"))


def test_windows_and_the_grid_are_one_schedule() -> None:
    warm = (
        ("Mon-Fri", "08:30", "10:00", 2),
        ("Mon-Fri", "10:00", "12:00", 3),
        ("Mon-Fri", "12:00", "13:30", 1),
        ("Mon-Fri", "13:30", "18:00", 3),
        ("Sat", "10:00", "24:00", 1),
    )
    schedule = grid(warm)
    assert sorted(schedule) == ["Mon-Fri", "Sat"] and len(schedule["Mon-Fri"]) == SLOTS
    assert schedule["Mon-Fri"][17:21] == (2, 2, 2, 3)  # 08:30-10:30
    assert windows(schedule) == warm


def test_the_moves_follow_the_arrival_profile_not_the_draws() -> None:
    """The dev stack's merge requests come evenly over 09:00-18:00 on working days: one band, lowered whole or at
    its first or last 30, 60 or 90 min, never a half-hour inside it."""
    platform = load_platform(_dev())
    rates = arrival_rates(platform, "ci-training", 0)
    assert {rate for rate in rates if rate} == {Fraction(24, 9 * 60)}  # 24 jobs over nine hours
    assert rates[18:36] == (Fraction(24, 540),) * 18 and not any(rates[:18] + rates[36:])
    assert not any(arrival_rates(platform, "ci-training", 5))  # Saturday
    assert _blocks(rates) == [(18, 36), (18, 19), (35, 36), (18, 20), (34, 36), (18, 21), (33, 36)]


def test_two_kinds_make_two_bands() -> None:
    """A morning kind and an evening one of another rate: each band its own moves, the quiet hours between none."""
    raw = _dev()
    kinds = raw["workload"]["profiles"]["supervised"]["kinds"]
    kinds["train-validate"].update({"from": "09:00", "to": "12:00"})
    kinds["evening"] = {**kinds["train-validate"], "jobs_per_day": 8, "from": "16:00", "to": "18:00"}
    rates = arrival_rates(load_platform(raw), "ci-training", 2)
    bands = [(first, last) for first, last in _blocks(rates) if last - first > 3]
    assert bands == [(18, 24), (32, 36)]


def test_the_seed_gives_each_band_the_clairvoyants_ready_nodes() -> None:
    """Fitted from the bound's solution: at the 90 % quantile of the nodes ready over the band (two L40S: a
    merge request's 8 jobs on 5 slots each), at most max_size; at the most, more."""
    platform = load_platform(_dev())
    floors = [week_bound(platform, week_jobs(platform, week=week)) for week in range(4)]
    rates = arrival_rates(platform, "ci-training", 0)
    levers = Levers(3, 5, 0, ())
    seeded = seed_levers(levers, floors, "ci-training", [("Mon-Fri", rates)], Fraction(9, 10))
    assert seeded.warm == (("Mon-Fri", "09:00", "18:00", 2),)
    most = seed_levers(levers, floors, "ci-training", [("Mon-Fri", rates)], Fraction(1))
    assert most.warm_nodes == 3  # capped at max_size
