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
            ["50 0 * * 1 -> 2", "0 2 * * 1 -> 0", "50 23 * * 0 -> 1"],  # 1 over midnight, 2 a cold start early
        ),
        (
            [
                {"days": "Mon-Fri", "from": "08:00", "to": "10:00"},
                {"days": "Mon-Fri", "from": "10:00", "to": "12:00", "nodes": 2},
                {"days": "Mon-Fri", "from": "12:00", "to": "13:30"},
                {"days": "Mon-Fri", "from": "13:30", "to": "18:00", "nodes": 2},
            ],
            # a ramp a cold start before 10:00, fewer at lunch from 12:00, more again at 13:15
            [
                "45 7 * * 1,2,3,4,5 -> 1",
                "45 9 * * 1,2,3,4,5 -> 2",
                "0 12 * * 1,2,3,4,5 -> 1",
                "15 13 * * 1,2,3,4,5 -> 2",
                "0 18 * * 1,2,3,4,5 -> 0",
            ],
        ),
        ([{"days": "Mon", "from": "00:05", "to": "01:00"}], ["0 1 * * 1 -> 0", "50 23 * * 0 -> 1"]),
    ],
    ids=[
        "all-week",
        "across-sunday-midnight-to-more-nodes",
        "a-count-that-changes-through-the-day",
        "across-sunday-midnight",
    ],
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
    # Pulumi waits for no placeholder (a Pending one waits for a boot or for a job to end), and a new template
    # replaces them one by one, never one more beside them (tests/engine/test_engine_safe_updates.py).
    assert deployment.inputs["metadata"]["annotations"] == {"pulumi.com/skipAwait": "true"}
    assert deployment.inputs["spec"]["strategy"] == {
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}
    }  # fmt: skip


def _frozen_program(moment: datetime, folder: Path) -> Path:
    """The real program, its clock fixed at `moment` (it reads it once: `datetime.now(UTC)`)."""
    text = (ROOT / "__main__.py").read_text(encoding="utf-8")
    assert text.count("datetime.now(UTC)") == 1
    frozen = text.replace("datetime.now(UTC)", f"datetime.fromisoformat({moment.isoformat()!r})")
    path = folder / "__main__.py"
    path.write_text(frozen, encoding="utf-8")
    return path


def test_a_count_that_changes_through_the_day_is_deployed_by_one_cronjob_per_change(
    dev_platform: dict[str, Any], dev_stack: StackConfig, tmp_path: Path
) -> None:
    """The CronJobs the program registers (under the mocks) for a ramp and a lunch dip: each scales the
    placeholders to the count from its minute on, in the workload's time zone; the Deployment starts at the count
    open at the `up` (Monday 10:30: 3)."""
    dev_platform["pools"]["ci-training"].update(
        max_size=3,
        cold_start_minutes=15,
        warm=[
            {"days": "Mon-Fri", "from": "08:30", "to": "10:00", "nodes": 2},
            {"days": "Mon-Fri", "from": "10:00", "to": "12:00", "nodes": 3},
            {"days": "Mon-Fri", "from": "12:00", "to": "13:30", "nodes": 1},
            {"days": "Mon-Fri", "from": "13:30", "to": "18:00", "nodes": 3},
        ],
    )
    moment = datetime(2026, 12, 7, 10, 30, tzinfo=ZoneInfo("Europe/Paris"))
    run = run_program(dev_stack.with_values({"platform": dev_platform}), _frozen_program(moment, tmp_path))
    scales = {}
    for cron in run.by_type(T.CRON_JOB):
        spec = cron.inputs["spec"]
        (container,) = spec["jobTemplate"]["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e["value"] for e in container["env"]}
        assert spec["timeZone"] == "Europe/Paris" and env["DEPLOYMENT"] == "placeholder-ci-training"
        scales[spec["schedule"]] = int(env["REPLICAS"])
    weekdays = "1,2,3,4,5"
    assert scales == {
        f"15 8 * * {weekdays}": 2,  # a boot before 08:30
        f"45 9 * * {weekdays}": 3,  # the ramp: a boot before 10:00
        f"0 12 * * {weekdays}": 1,  # lunch: down at its time
        f"15 13 * * {weekdays}": 3,  # up again a boot early
        f"0 18 * * {weekdays}": 0,
    }
    assert run.one(T.DEPLOYMENT, "warm-placeholders-ci-training").inputs["spec"]["replicas"] == 3
