"""A measured window replayed through the engine (`infra.sim.replay`): the waits the model gives the jobs as they
ran, checked by hand on the dev platform (ci-training: one L40S, four jobs a node, removed 5 min after it empties)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from infra.model.platform import load_platform
from infra.sim.levers import apply
from infra.sim.replay import MINUTES_PER_WEEK, ReplayedJob, replay

MONDAY_10 = Fraction(10 * 60)


def _job(key: int, at: Fraction, minutes: int = 30, job_class: Any = "merge_request") -> ReplayedJob:
    return ReplayedJob(key, "supervised", job_class, at, Fraction(minutes))


def test_a_job_on_a_pool_at_zero_waits_the_cold_start_given_and_one_on_its_node_none(
    dev_platform: dict[str, Any],
) -> None:
    platform = load_platform(dev_platform)
    jobs = [_job(7, MONDAY_10), _job(9, MONDAY_10 + 20, job_class="batch"), _job(11, MONDAY_10 + 24 * 60)]
    assert replay(platform, jobs, {"ci-training": 10}) == {7: 10, 9: 0, 11: 10}  # the node went between days
    assert replay(platform, jobs) == {7: 15, 9: 0, 11: 15}  # the stack's cold start (the spec's default)


def test_five_jobs_on_four_slots_the_fifth_waits_for_a_slot_in_gitlab(dev_platform: dict[str, Any]) -> None:
    """GitLab hands out in id order: the job with the highest id waits until the first four end, 10 min for the
    node and their 30 min shared: four jobs keeping 34 % of the GPU each run 1.36 times slower (40.8 min)."""
    platform = load_platform(dev_platform)
    jobs = [_job(key, MONDAY_10) for key in (5, 4, 3, 2, 1)]
    assert replay(platform, jobs, {"ci-training": 10}) == {1: 10, 2: 10, 3: 10, 4: 10, 5: 10 + 30 * Fraction("1.36")}


def test_warm_windows_hold_every_week_the_window_spans(dev_platform: dict[str, Any]) -> None:
    """A node kept warm on working days: the second Monday's job finds it as the first Monday's does."""
    warm = [{"days": "Mon-Fri", "from": "08:00", "to": "18:00", "nodes": 1}]
    platform = load_platform(apply(dev_platform, [(("pools", "ci-training", "warm"), warm)]))
    jobs = [_job(1, MONDAY_10), _job(2, MONDAY_10 + MINUTES_PER_WEEK), _job(3, MONDAY_10 + 10 * 60)]
    assert replay(platform, jobs, {"ci-training": 10}) == {1: 0, 2: 0, 3: 10}  # 20:00: out of the window


def test_a_window_past_the_engines_longest_is_refused_in_one_line(dev_platform: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"a window of more than 30 days"):
        replay(load_platform(dev_platform), [_job(1, Fraction(31 * 24 * 60))])
