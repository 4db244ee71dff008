"""Valid but unusual stacks: a kind in the week's last minute, merge-request jobs that fail for good."""

from __future__ import annotations

from typing import Any

from infra.config.schedule import MINUTES_PER_WEEK
from infra.model.platform import load_platform
from infra.sim.arrivals import week_jobs


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

