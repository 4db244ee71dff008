"""The cost model: a simulated day of the workload (infra/sim/week.py), against figures computed by hand."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from support.specs import with_legacy_workload

from infra.model.platform import load_platform
from infra.model.prices import price_rows
from infra.render.report import render_report
from infra.render.text import format_eur
from infra.sim.arrivals import split_evenly
from infra.sim.arrivals import week_jobs as workload_jobs
from infra.sim.week import simulate_week

L4, L40S, PRO2_XXS = Fraction("0.7875"), Fraction("1.469916"), Fraction("0.0561")


def test_split_evenly() -> None:
    assert split_evenly(12, 3) == [4, 4, 4]
    assert split_evenly(7, 3) == [3, 2, 2]
    assert split_evenly(1, 3) == [1, 0, 0]


def test_the_workload_becomes_bursts_spread_over_every_day_of_the_week(dev_platform: dict[str, Any]) -> None:
    """Profiles without kinds: the day gpu-ci simulated before, seven times (3 bursts, 8 h apart)."""
    jobs = workload_jobs(load_platform(with_legacy_workload(dev_platform)))
    assert len(jobs) == 7 * 36
    assert sorted({job.created_minute for job in jobs}) == [
        day * 1440 + hour for day in range(7) for hour in (0, 480, 960)
    ]
    assert {job.job_class for job in jobs} == {"merge_request"}
    first = [job for job in jobs if job.created_minute == 0]
    assert [job.profile for job in first] == ["rl"] * 4 + ["supervised"] * 8  # the pipeline's order
    assert {job.minutes for job in jobs if job.profile == "supervised"} == {40}


def test_a_legacy_day_by_hand(dev_platform: dict[str, Any]) -> None:
    """The dev stack's profiles with the profile-level workload: each of the week's days computed by hand."""
    cost = simulate_week(load_platform(with_legacy_workload(dev_platform)))
    assert cost is not None
    pools = {p.pool: p for p in cost.pools}
    # ci-compile, per burst: 4 RL jobs, 2 per L4; node ready at 15, two rounds of 30 min: empty at 75, removed 80.
    assert pools["ci-compile"].scaled_node_hours == Fraction(3 * 80, 60)
    assert pools["ci-compile"].eur_per_day == 4 * L4  # 3.15
    # ci-training: 8 supervised, 4 per L40S sharing one GPU at 4 x 0.34: each 40 x 1.36 = 54.4 min; empty at
    # 15 + 108.8 = 123.8, removed at 128.8: 129 started minutes billed, 3 bursts.
    assert pools["ci-training"].scaled_node_hours == Fraction(3 * 129, 60)
    assert pools["ci-training"].eur_per_day == Fraction(3 * 129, 60) * L40S  # 9.4810
    assert (pools["ci-training"].peak_pods, pools["ci-training"].slots) == (4, 4)  # the rest waited in GitLab
    assert pools["system"].eur_per_day == 24 * PRO2_XXS  # 1.3464
    assert format_eur(cost.eur_per_day) == "13.9774"
    assert cost.failed_jobs == 0 and cost.makespan_minutes == Fraction("123.8")
    # The longest wait: the last 4 supervised jobs queue until minute 69.4 of their burst.
    assert cost.longest_wait_minutes == Fraction("69.4")
    supervised = next(p for p in cost.profiles if p.profile == "supervised")
    assert supervised.minutes_as_run == Fraction("54.4")
    # Old: an L40S and an idle L4 around the clock; a burst of 4 x 30 + 8 x 40 = 440 min, 3 a day = 22 h.
    assert cost.baseline.eur_per_day == 24 * (L40S + L4)  # 54.177984
    assert (cost.baseline.makespan_minutes, cost.baseline.busy_hours_per_day, cost.baseline.keeps_up) == (440, 22, True)
    assert cost.as_json()["eur_per_day"] == pytest.approx(13.9774, abs=1e-4)


def test_the_design_claim_about_l4_prices(dev_platform: dict[str, Any]) -> None:
    """The design brief says the L4 is ~60 % cheaper; the catalogue says 46.4 % per node-hour (73.2 % per job slot)."""
    rows = {r.pool: r for r in price_rows(load_platform(dev_platform))}
    l4 = rows["ci-compile"]
    assert (l4.reference, l4.node_ratio) == ("L40S-1-48G", L4 / L40S)
    assert f"{float(1 - l4.node_ratio):.3f}" == "0.464"
    assert l4.eur_per_job_hour == L4 / 2
    assert rows["ci-training"].job_ratio == Fraction(1, 4)
    platform = load_platform(dev_platform)
    report = render_report(platform, simulate_week(platform))
    assert "53.6 % (46.4 % cheaper)" in report
    assert "0.3938" in report  # 0.39375 rounded half up


def test_report_shows_new_against_old(dev_platform: dict[str, Any]) -> None:
    platform = load_platform(with_legacy_workload(dev_platform))
    report = render_report(platform, simulate_week(platform))
    assert "new setup                                                      13.9774" in report
    assert "old: L40S-1-48G, one job at a time, always on + idle L4-1-24G  54.1780" in report
    assert "New setup: 25.8 % of the old daily cost" in report
    assert "Failed jobs: none. Largest burst: 123.8 min (old setup: 440 min)" in report


def test_a_day_the_old_setup_cannot_hold(dev_platform: dict[str, Any]) -> None:
    """96 x 45 min = 72 h of serial work a day: the old node's queue never drains; the new pools keep up, since
    jobs beyond a pool's slots wait in GitLab, not as Pending pods."""
    with_legacy_workload(dev_platform)
    dev_platform["workload"]["batches_per_day"] = 12  # bursts 2 h apart
    dev_platform["workload"]["profiles"]["supervised"].update(jobs_per_day=96, minutes_per_job=45)
    platform = load_platform(dev_platform)
    cost = simulate_week(platform)
    assert cost is not None and not cost.baseline.keeps_up
    assert cost.failed_jobs == 0
    report = render_report(platform, cost)
    assert "do not fit in 24 h on one node" in report
    assert "Failed jobs: none." in report


def test_no_workload_no_cost_section(dev_platform: dict[str, Any]) -> None:
    del dev_platform["workload"]
    spec = load_platform(dev_platform)
    assert simulate_week(spec) is None
    report = render_report(spec, None)
    assert "An average day of the week, new setup against old" not in report
    assert "against one job at a time on L40S-1-48G" in report  # the dearest GPU pool is the reference
