"""The CronJobs of warm windows scale the placeholders as the simulation assumes: at most one CronJob per minute
of the week (two at the same minute, one to 0 and one to N, would race and leave either count)."""

from __future__ import annotations

from typing import Any

import pytest

from infra.model.platform import load_platform


@pytest.mark.parametrize(
    ("windows", "expected"),
    [
        ([{"days": "Mon-Sun", "from": "00:00", "to": "24:00"}], ["0 0 * * 1 -> 1"]),
        (
            [
                {"days": "Mon", "from": "00:05", "to": "01:00"},
                {"days": "Mon", "from": "01:05", "to": "02:00", "nodes": 2},
            ],
            ["0 0 * * 1 -> 2", "0 2 * * 1 -> 0", "50 23 * * 0 -> 1"],
        ),
        ([{"days": "Mon", "from": "00:05", "to": "01:00"}], ["0 1 * * 1 -> 0", "50 23 * * 0 -> 1"]),
    ],
    ids=["all-week", "across-sunday-midnight-to-more-nodes", "across-sunday-midnight"],
)
def test_one_cronjob_a_minute_and_the_week_wraps_to_the_simulated_count(
    dev_platform: dict[str, Any], windows: list[dict[str, Any]], expected: list[str]
) -> None:
    dev_platform["pools"]["ci-training"].update(max_size=2, cold_start_minutes=15, warm=windows)
    (warm,) = load_platform(dev_platform).warm
    scales = [f"{scale.schedule} -> {scale.replicas}" for scale in warm.scales]
    assert scales == expected
    minutes = [(scale.minute, scale.hour, day) for scale in warm.scales for day in scale.days]
    assert len(minutes) == len(set(minutes))
    monday = next((s.replicas for s in warm.scales if (s.minute, s.hour) == (0, 0) and 1 in s.days), None)
    at_start = next((nodes for start, end, nodes in warm.spans if start == 0), 0)
    assert monday in (None, at_start)
