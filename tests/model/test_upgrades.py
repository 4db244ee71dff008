"""infra.model.upgrades: what an upgrade takes away at once, and when Scaleway runs it, as `plan` warns."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config.errors import SpecError
from infra.model.platform import load_platform


def _warnings(platform: dict[str, Any]) -> list[str]:
    """The warnings at the upgrade keys (the chart's missing job PodDisruptionBudget: test_render_runner.py)."""
    return [str(w) for w in load_platform(platform).warnings if "upgrade" in w.path]


def test_the_dev_stack_upgrades_safely_out_of_its_hours(dev_platform: dict[str, Any]) -> None:
    """Sunday 03:00-05:00 UTC is 04:00-07:00 in Paris, far from Mon-Fri's jobs; the system pool surges."""
    assert _warnings(dev_platform) == []


def test_a_manager_pool_upgraded_without_surge_is_a_warning(dev_platform: dict[str, Any]) -> None:
    dev_platform["pools"]["system"]["upgrade_policy"] = {"max_surge": 0, "max_unavailable": 1}
    assert _warnings(dev_platform) == [
        "platform.pools.system.upgrade_policy.max_surge=0: an upgrade drains a node of the manager pool before its "
        "replacement is up: the runner managers on it are evicted with nowhere to go, and their running jobs lose "
        "them (set max_surge: 1, max_unavailable: 0)"
    ]


def test_an_upgrade_policy_that_moves_no_node_is_refused(dev_platform: dict[str, Any]) -> None:
    dev_platform["pools"]["system"]["upgrade_policy"] = {"max_surge": 0, "max_unavailable": 0}
    with pytest.raises(SpecError, match=r"^platform\.pools\.system\.upgrade_policy=.*could replace no node"):
        load_platform(dev_platform)


@pytest.mark.parametrize(
    ("day", "hour", "kind"),
    [
        ("wednesday", 8, "workload.profiles.rl.kinds.train-validate"),  # 09:00/10:00 in Paris: merge requests
        ("wednesday", 12, "workload.profiles.rl.kinds.hyperopt"),  # 13:00/14:00 in Paris: the RL trials start
        ("any", 3, None),  # 04:00/05:00 in Paris every day: after the last run (22:30 + 122 min), before 09:00
        ("any", 21, "workload.profiles.supervised.kinds.hyperopt"),  # 22:00/23:00 in Paris: the nightly hyperopt
        ("friday", 22, "workload.profiles.supervised.kinds.hyperopt"),  # still running at 23:00-01:00 Paris
        ("saturday", 1, None),  # 02:00/03:00 in Paris: the Friday night runs are over (00:33 at the latest)
    ],
)
def test_a_maintenance_window_in_the_workloads_hours_is_a_warning(
    dev_platform: dict[str, Any], day: str, hour: int, kind: str | None
) -> None:
    dev_platform["cluster"]["auto_upgrade"].update(maintenance_window_day=day, maintenance_window_start_hour=hour)
    found = _warnings(dev_platform)
    if kind is None:
        assert found == []
    else:
        (warning,) = found
        assert warning.startswith(
            f"platform.cluster.auto_upgrade.maintenance_window_start_hour={hour}: the 2-hour upgrade window ({day}, "
            f"UTC) falls in the hours of platform.{kind} (Europe/Paris, with its longest run on a full node)"
        ), warning


def test_summer_time_moves_the_window_into_the_hours(dev_platform: dict[str, Any]) -> None:
    """07:00 UTC is 08:00-10:00 in Paris in winter and 09:00-11:00 in summer: only summer reaches 09:00."""
    dev_platform["cluster"]["auto_upgrade"].update(maintenance_window_day="monday", maintenance_window_start_hour=6)
    assert len(_warnings(dev_platform)) == 1  # 07:00-09:00 / 08:00-10:00: summer overlaps 09:00
    dev_platform["cluster"]["auto_upgrade"].update(maintenance_window_start_hour=5)
    assert _warnings(dev_platform) == []  # 06:00-08:00 / 07:00-09:00: ends as the first job may come
