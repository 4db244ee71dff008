"""The cost and drain-time model, against figures computed by hand (in the comments)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from infra.cost import QueuedJob, cost_report, drain_burst, price_rows, slowdown, split_evenly
from infra.model import load_platform
from infra.render.report import render_report
from infra.render.text import format_eur

L4, L40S, PRO2_XXS = Fraction("0.7875"), Fraction("1.469916"), Fraction("0.0561")


def _drain(jobs: list[QueuedJob], **overrides: Any) -> Any:
    settings: dict[str, Any] = {
        "jobs_per_node": 4,
        "max_size": 1,
        "warm_nodes": 0,
        "mps_replicas": None,
        "cold_start_minutes": Fraction(15),
        "unneeded_minutes": Fraction(5),
        "delay_after_add_minutes": Fraction(5),
    }
    return drain_burst(jobs, **{**settings, **overrides})


def test_split_and_slowdown() -> None:
    assert split_evenly(12, 3) == [4, 4, 4]
    assert split_evenly(7, 3) == [3, 2, 2]
    assert split_evenly(1, 3) == [1, 0, 0]
    assert slowdown(None, 4) == 1
    assert slowdown(Fraction("0.34"), 2) == 1  # 68 % of the GPU: no one waits
    assert slowdown(Fraction("0.34"), 4) == Fraction("1.36")


def test_full_waves_with_time_slicing() -> None:
    # 8 jobs, 4 per node, 1 node: 2 waves of 4; each job 40 x (4 x 0.34) = 54.4 min.
    run = _drain([QueuedJob(Fraction(40), Fraction("0.34"))] * 8)
    assert (run.nodes, run.waves) == (1, 2)
    assert run.drain_minutes == 15 + 2 * Fraction("54.4")  # 123.8
    assert run.billed_node_minutes == Fraction("123.8") + 5


def test_a_partial_last_wave_runs_faster() -> None:
    # 6 jobs: wave 1 has 4 (54.4 min), wave 2 has 2 sharing the GPU at 68 %: 40 min.
    run = _drain([QueuedJob(Fraction(40), Fraction("0.34"))] * 6)
    assert run.drain_minutes == 15 + Fraction("54.4") + 40


def test_mps_caps_even_a_lone_job() -> None:
    # MPS x4: each client gets 25 % of the SMs, so a job needing 34 % runs 1.36 x longer even alone.
    run = _drain([QueuedJob(Fraction(40), Fraction("0.34"))], mps_replicas=4)
    assert run.drain_minutes == 15 + 40 * Fraction("1.36")


def test_jobs_on_different_gpus_of_one_node_do_not_share() -> None:
    # A 2-GPU node time-sliced x2 holds 4 jobs, 2 per GPU: 2 x 0.34 = 68 %, no slowdown.
    run = _drain([QueuedJob(Fraction(40), Fraction("0.34"))] * 4, gpus_per_node=2)
    assert run.drain_minutes == 15 + 40


def test_several_nodes_bill_until_their_own_last_wave() -> None:
    # 10 jobs, 2 per node, 3 nodes: wave 1 = 6 jobs on 3 nodes, wave 2 = 4 jobs on nodes 0 and 1.
    run = _drain([QueuedJob(Fraction(30), None)] * 10, jobs_per_node=2, max_size=3)
    assert (run.nodes, run.waves, run.drain_minutes) == (3, 2, 75)  # 15 + 30 + 30
    assert run.billed_node_minutes == (75 + 5) * 2 + (45 + 5)  # node 2 leaves after wave 1


def test_scale_down_waits_for_the_delay_after_add() -> None:
    # A 2-minute job on a node ready after 1 minute ends at 3; unneeded after 4, but no scale-down before 10.
    run = _drain(
        [QueuedJob(Fraction(2), None)],
        cold_start_minutes=Fraction(1),
        unneeded_minutes=Fraction(1),
        delay_after_add_minutes=Fraction(10),
    )
    assert (run.drain_minutes, run.billed_node_minutes) == (3, 10)


def test_always_on_nodes_start_at_once_and_are_not_billed_again() -> None:
    run = _drain([QueuedJob(Fraction(30), None)] * 2, jobs_per_node=2, max_size=2, warm_nodes=1)
    assert (run.drain_minutes, run.billed_node_minutes) == (30, 0)


def test_no_jobs_no_nodes() -> None:
    assert _drain([]).billed_node_minutes == 0


def test_dev_stack_day_by_hand(dev_platform: dict[str, Any]) -> None:
    cost = cost_report(load_platform(dev_platform))
    assert cost is not None
    pools = {p.pool: p for p in cost.pools}
    # ci-compile: 12 RL jobs in 3 bursts of 4; 2 per L4: 2 waves of 30 min; node up 15 + 60 + 5 = 80 min.
    assert pools["ci-compile"].drain_minutes == 75
    assert pools["ci-compile"].scaled_node_hours == Fraction(3 * 80, 60)
    assert pools["ci-compile"].eur_per_day == 4 * L4  # 3.15
    # ci-training: 24 supervised in bursts of 8; 4 per L40S, each 40 x 1.36 = 54.4 min: 15 + 108.8 + 5 = 128.8.
    assert pools["ci-training"].drain_minutes == Fraction("123.8")
    assert pools["ci-training"].eur_per_day == 3 * Fraction("128.8") / 60 * L40S  # 9.4663
    assert pools["system"].eur_per_day == 24 * PRO2_XXS  # 1.3464
    assert cost.eur_per_day == 4 * L4 + Fraction("6.44") * L40S + 24 * PRO2_XXS
    assert format_eur(cost.eur_per_day) == "13.9627"
    # Old: an L40S and an idle L4 around the clock; a burst of 4 x 30 + 8 x 40 = 440 min, 3 a day = 22 h.
    assert cost.baseline.eur_per_day == 24 * (L40S + L4)  # 54.177984
    assert (cost.baseline.drain_minutes, cost.baseline.busy_hours_per_day, cost.baseline.keeps_up) == (440, 22, True)
    assert cost.drain_minutes == Fraction("123.8")
    assert cost.as_json()["eur_per_day"] == pytest.approx(13.9627, abs=1e-4)


def test_the_design_claim_about_l4_prices(dev_platform: dict[str, Any]) -> None:
    """The design brief says the L4 is ~60 % cheaper; the catalogue says 46.4 % per node-hour (73.2 % per job slot)."""
    rows = {r.pool: r for r in price_rows(load_platform(dev_platform))}
    l4 = rows["ci-compile"]
    assert (l4.reference, l4.node_ratio) == ("L40S-1-48G", L4 / L40S)
    assert f"{float(1 - l4.node_ratio):.3f}" == "0.464"
    assert l4.eur_per_job_hour == L4 / 2
    assert rows["ci-training"].job_ratio == Fraction(1, 4)
    report = render_report(load_platform(dev_platform))
    assert "53.6 % (46.4 % cheaper)" in report
    assert "0.3938" in report  # 0.39375 rounded half up


def test_report_shows_new_against_old(dev_platform: dict[str, Any]) -> None:
    report = render_report(load_platform(dev_platform))
    assert "new setup                                                      13.9627" in report
    assert "old: L40S-1-48G, one job at a time, always on + idle L4-1-24G  54.1780" in report
    assert "New setup: 25.8 % of the old daily cost" in report
    assert "drains in 123.8 min instead of 440" in report


def test_report_flags_what_the_model_cannot_hold(dev_platform: dict[str, Any]) -> None:
    dev_platform["workload"]["batches_per_day"] = 12  # bursts 2 h apart, ci-training busy ~1.5 h each
    dev_platform["workload"]["profiles"]["supervised"].update(jobs_per_day=96, minutes_per_job=45)
    spec = load_platform(dev_platform)
    cost = cost_report(spec)
    assert cost is not None and not cost.baseline.keeps_up  # 96 x 45 min = 72 h of serial work a day
    assert {p.pool for p in cost.pools if p.bursts_overlap} == {"ci-training"}
    report = render_report(spec)
    assert "ci-training: bursts overlap" in report
    assert "do not fit in 24 h on one node" in report


def test_no_workload_no_cost_section(dev_platform: dict[str, Any]) -> None:
    del dev_platform["workload"]
    spec = load_platform(dev_platform)
    assert cost_report(spec) is None
    report = render_report(spec)
    assert "A day, new setup against old" not in report
    assert "against one job at a time on L40S-1-48G" in report  # the dearest GPU pool is the reference
