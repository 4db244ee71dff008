"""What an upgrade does to the platform (pure): the nodes it takes away at once, and when Scaleway runs it.

Kapsule upgrades a pool node by node under its upgrade policy (`pools.<p>.upgrade_policy`): with no surge it
drains a node before its replacement is up, which on the manager pool evicts the runner managers with nowhere
to go. It cannot resize a pool while the pool upgrades, so no GPU node scales up from zero meanwhile. Patch
upgrades run in the cluster's weekly 2-hour maintenance window (`cluster.auto_upgrade`, in UTC). Warned here:
- the manager pool upgrades without surge;
- the pinned runner chart gives job pods no PodDisruptionBudget (before chart 0.88.0): a drain evicts them;
- the maintenance window overlaps the workload's hours: when its kinds' jobs arrive, and as long after as the
  pool's longest job runs on a full node (`infra.model.timeouts`), in either of the zone's UTC offsets (winter
  and summer time).
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Iterator, Mapping
from datetime import datetime

from infra.config.errors import Problem, key_path
from infra.config.platform import PlatformSpec
from infra.config.runner import JOB_PDB_CHART
from infra.config.schedule import MINUTES_PER_DAY, MINUTES_PER_WEEK, WEEKDAYS
from infra.model.pools import Pool
from infra.model.timeouts import longest_job

MAINTENANCE_WINDOW_MINUTES = 120
"""Scaleway's auto-upgrade window: two hours from its start hour (the Kapsule API's `maintenance_window`)."""
OFFSET_DATES = (datetime(2026, 1, 15, 12), datetime(2026, 7, 15, 12))
"""A winter and a summer day: the zone's two UTC offsets (one where it keeps no summer time)."""


def upgrade_warnings(spec: PlatformSpec, pools: Mapping[str, Pool]) -> list[Problem]:
    """The manager pool's upgrade without surge, job pods a drain evicts, a maintenance window in the workload's
    hours."""
    return [*_manager_pool_warnings(spec), *_job_pod_warnings(spec), *_window_warnings(spec, pools)]


def _job_pod_warnings(spec: PlatformSpec) -> list[Problem]:
    if spec.runner.protects_job_pods or not spec.targeted_pools():
        return []
    first = ".".join(map(str, JOB_PDB_CHART))
    return [
        Problem(
            key_path("runner", "chart_version"),
            spec.runner.chart_version,
            "its runner gives job pods no PodDisruptionBudget: an upgrade that drains a GPU node evicts the jobs "
            f"on it (from chart {first}, runner 18.11, gpu-ci turns pod_disruption_budget on); until then, upgrade "
            "with the GPU pools at zero (docs/operations.md)",
            "warning",
        )
    ]


def _manager_pool_warnings(spec: PlatformSpec) -> list[Problem]:
    manager = spec.manager_pool()
    if manager is None or manager not in spec.pools:
        return []
    policy = spec.pools[manager].effective_upgrade_policy
    if policy.max_surge >= 1:
        return []
    return [
        Problem(
            key_path("pools", manager, "upgrade_policy", "max_surge"),
            policy.max_surge,
            "an upgrade drains a node of the manager pool before its replacement is up: the runner managers on it "
            "are evicted with nowhere to go, and their running jobs lose them (set max_surge: 1, max_unavailable: 0)",
            "warning",
        )
    ]


def _window_warnings(spec: PlatformSpec, pools: Mapping[str, Pool]) -> list[Problem]:
    upgrade, workload = spec.cluster.auto_upgrade, spec.workload
    if upgrade is None or not upgrade.enable or workload is None or spec.cluster.existing_id:
        return []
    busy = list(_busy(spec, pools))
    zone = zoneinfo.ZoneInfo(workload.time_zone)
    for moment in OFFSET_DATES:
        offset = zone.utcoffset(moment)
        shift = int(offset.total_seconds() // 60) if offset is not None else 0
        for start in _window_starts(upgrade.maintenance_window_day, upgrade.maintenance_window_start_hour):
            window = (start + shift, start + shift + MAINTENANCE_WINDOW_MINUTES)
            for key, interval in busy:
                if _overlap(window, interval):
                    return [
                        Problem(
                            key_path("cluster", "auto_upgrade", "maintenance_window_start_hour"),
                            upgrade.maintenance_window_start_hour,
                            f"the 2-hour upgrade window ({upgrade.maintenance_window_day}, UTC) falls in the hours "
                            f"of platform.{key} ({workload.time_zone}, with its longest run on a full node): an "
                            "upgrade drains nodes under running jobs and stops scale-from-zero while it runs; move "
                            "the window (maintenance_window_day, maintenance_window_start_hour) out of them",
                            "warning",
                        )
                    ]
    return []


def _busy(spec: PlatformSpec, pools: Mapping[str, Pool]) -> Iterator[tuple[str, tuple[int, int]]]:
    """(workload key, [start, end) minutes of the local week) in which the kinds' jobs arrive or still run."""
    workload = spec.workload
    assert workload is not None
    for name, load in sorted(workload.profiles.items()):
        profile = spec.profiles.get(name)
        pool = pools.get(profile.pool) if profile is not None else None
        run = longest_job(spec, pool).minutes if pool is not None else 0.0
        if not load.kinds:  # bursts spread over every day
            yield f"workload.profiles.{name}", (0, MINUTES_PER_WEEK)
        for kind_name, kind in sorted(load.kinds.items()):
            for start, end in kind.intervals():
                yield f"workload.profiles.{name}.kinds.{kind_name}", (start, end + int(run) + 1)


def _window_starts(day: str, hour: int) -> list[int]:
    """Minutes from Monday 00:00 UTC at which the window opens (`any`: every day)."""
    days = range(7) if day == "any" else [WEEKDAYS.index(day[:3])]
    return [d * MINUTES_PER_DAY + 60 * hour for d in days]


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two intervals of the week overlap, either of them wrapping past Sunday midnight."""
    return any(a[0] + shift < b[1] and b[0] < a[1] + shift for shift in (-MINUTES_PER_WEEK, 0, MINUTES_PER_WEEK))
