"""The CronJobs of warm windows scale the placeholders as the simulation assumes: at most one CronJob per minute
of the week (two at the same minute, one to 0 and one to N, would race and leave either count)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from support.paths import ROOT

from infra.cloud.names import T
from infra.model.platform import load_platform
from infra.model.warm import minute_of_week, replicas_at
from infra.offline.harness import run_program
from infra.offline.stack_config import StackConfig


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


@pytest.mark.parametrize(
    ("moment", "replicas"),
    [
        (datetime(2026, 12, 7, 8, 44, tzinfo=ZoneInfo("Europe/Paris")), 0),  # Monday, before the 08:45 scale-up
        (datetime(2026, 12, 7, 8, 45, tzinfo=ZoneInfo("Europe/Paris")), 2),  # at it: the window (a cold start early)
        (datetime(2026, 12, 7, 11, 0, tzinfo=UTC), 2),  # 12:00 in Paris: the window is open
        (datetime(2026, 12, 7, 17, 0, tzinfo=UTC), 0),  # 18:00 in Paris: closed at `to`
        (datetime(2026, 12, 12, 10, 0, tzinfo=ZoneInfo("Europe/Paris")), 0),  # Saturday
        (datetime(2026, 7, 6, 7, 0, tzinfo=UTC), 2),  # 09:00 in Paris in summer time (UTC+2)
    ],
    ids=["before", "at-the-scale-up", "open-utc", "closed-at-to", "saturday", "summer-time"],
)
def test_placeholders_start_at_the_size_of_the_window_open_at_the_up(
    dev_platform: dict[str, Any], dev_stack: StackConfig, moment: datetime, replicas: int, tmp_path: Path
) -> None:
    """A window already open when `pulumi up` creates the placeholders warms at once, not at its next scale-up
    (its CronJob fires only at its own minute); the clock is read in the workload's time zone."""
    dev_platform["pools"]["ci-training"].update(
        max_size=2, warm=[{"days": "Mon-Fri", "from": "09:00", "to": "18:00", "nodes": 2}]
    )
    platform = load_platform(dev_platform)
    (warm,) = platform.warm
    assert replicas_at(warm, minute_of_week(moment, warm.time_zone)) == replicas
    run = run_program(dev_stack.with_values({"platform": dev_platform}), _frozen_program(moment, tmp_path))
    deployment = run.one(T.DEPLOYMENT, "warm-placeholders-ci-training")
    assert deployment.inputs["spec"]["replicas"] == replicas
    assert deployment.options["ignore_changes"] == ["spec.replicas"]  # afterwards, the CronJobs own the count


def _frozen_program(moment: datetime, folder: Path) -> Path:
    """The real program, its clock fixed at `moment` (it reads it once: `datetime.now(UTC)`)."""
    text = (ROOT / "__main__.py").read_text(encoding="utf-8")
    assert text.count("datetime.now(UTC)") == 1
    frozen = text.replace("datetime.now(UTC)", f"datetime.fromisoformat({moment.isoformat()!r})")
    path = folder / "__main__.py"
    path.write_text(frozen, encoding="utf-8")
    return path
