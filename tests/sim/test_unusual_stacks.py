"""Valid but unusual stacks: a kind in the week's last minute, merge-request jobs that fail for good, a target
below a tenth of a minute."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from test_recommend import _one_pool, _stack_dir

from infra.__main__ import main
from infra.config.schedule import MINUTES_PER_WEEK
from infra.model.platform import load_platform
from infra.render.report import render_report
from infra.sim.arrivals import week_jobs
from infra.sim.verdict import Waits
from infra.sim.week import simulate_week


def test_a_kind_of_one_minute_is_queued_within_its_minute_also_at_the_end_of_the_week(
    dev_platform: dict[str, Any],
) -> None:
    kinds = dev_platform["workload"]["profiles"]["supervised"]["kinds"]
    kinds["train-validate"].update({"days": "Sun", "from": "23:59", "to": "24:00"})
    kinds["hyperopt"].update({"days": "Tue", "from": "10:00", "to": "10:01"})
    jobs = week_jobs(load_platform(dev_platform))
    queued = {
        kind: {job.created_minute for job in jobs if job.profile == "supervised" and job.kind == kind}
        for kind in ("train-validate", "hyperopt")
    }
    assert queued == {"train-validate": {MINUTES_PER_WEEK - 1}, "hyperopt": {1440 + 600}}
    assert all(0 <= job.created_minute < MINUTES_PER_WEEK for job in jobs)


def _one_lost_merge_request(dev_platform: dict[str, Any]) -> dict[str, Any]:
    """The dev stack with a Monday of 20 ten-hour RL trials ahead of one RL merge-request job."""
    dev_platform["slo"]["merge_request_wait_minutes"] = 1440
    dev_platform["runner"]["job_timeout"] = "12h"
    dev_platform["pools"]["ci-training"]["max_size"] = 3
    rl = dev_platform["workload"]["profiles"]["rl"]["kinds"]
    # 20 ten-hour trials on Monday morning hold the L4's 2 slots for 100 h: the merge-request job behind them
    # is dropped by GitLab after 24 h pending, three times
    rl["hyperopt"] = {
        "class": "batch",
        "jobs_per_day": 20,
        "minutes_per_job": 600,
        "days": "Mon",
        "from": "00:00",
        "to": "00:30",
    }
    rl["train-validate"] = {
        "class": "merge_request",
        "jobs_per_day": 1,
        "minutes_per_job": 30,
        "days": "Mon",
        "from": "01:00",
        "to": "02:00",
    }
    return dev_platform


def test_a_merge_request_job_lost_for_good_counts_as_over_the_target(dev_platform: dict[str, Any]) -> None:
    """The one rule of `plan` and `recommend` (`infra.sim.verdict`): a job that never ran waited longer than any
    target, ranked after every wait; 1 lost of 121 is within the 6 the p95 allows over, 7 would not be."""
    platform = load_platform(_one_lost_merge_request(dev_platform))
    week = simulate_week(platform)
    assert week is not None
    waits = week.waits("merge_request")
    assert waits.failed == 1 and waits.jobs == 121 and waits.waits.over(Fraction(1440)) == 1
    assert waits.p95 is not None and waits.p95 <= 1440
    assert week.target_met is True and week.as_json()["slo"] == {"merge_request_wait_minutes": 1440, "met": True}
    assert "; 1 merge-request job(s) failed." in " ".join(render_report(platform, week).split())  # as wrapped
    lost = Waits.of([Fraction(1)] * 114, lost=7)
    assert (lost.met(Fraction(1440)), lost.p95_lost, lost.percentile()) == (False, True, None)
    assert Waits.of([Fraction(1)] * 115, lost=6).met(Fraction(1440)) is True


def test_recommend_states_a_small_target_as_given(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A target of 0.04 min was shown as "0.0 min", a target nothing but no wait at all could meet."""
    raw = _one_pool(jobs_per_day=20, window=("10:00", "10:01"))
    raw["slo"]["merge_request_wait_minutes"] = 0.04
    assert main(["recommend", "--config", str(_stack_dir(raw, tmp_path))]) == 1
    assert "platform.slo.merge_request_wait_minutes = 0.04 min in at least 90% of 20 simulated weeks" in (
        capsys.readouterr().out
    )
