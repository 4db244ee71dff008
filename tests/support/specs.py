"""Edits of the dev platform object that several tests make."""

from __future__ import annotations

import copy
from typing import Any


def add_h100_pool(platform: dict[str, Any], *, cold_start_minutes: int | None = None) -> None:
    """An H100 pool and the profile that targets it (a pool no profile reaches is refused as dead config)."""
    pool: dict[str, Any] = {"node_type": "H100-1-80G", "zone": "fr-par-2"}
    if cold_start_minutes is not None:
        pool["cold_start_minutes"] = cold_start_minutes
    platform["pools"]["ci-h100"] = pool
    platform["profiles"]["llm"] = {
        "pool": "ci-h100",
        "families": ["llama"],
        "template": ".train-llm-base",
        "cpu_request": "8",
        "cpu_limit": "12",
        "memory_request": "64Gi",
        "memory_limit": "96Gi",
    }


LEGACY_WORKLOAD: dict[str, Any] = {
    "batches_per_day": 3,
    "profiles": {
        "rl": {"jobs_per_day": 12, "minutes_per_job": 30},
        "supervised": {"jobs_per_day": 24, "minutes_per_job": 40, "gpu_utilization": 0.34},
    },
    "baseline": {"node_type": "L40S-1-48G", "idle_node_types": ["L4-1-24G"]},
}
"""The workload of the profile-level form (no kinds), as the dev stack had it before its week: 3 bursts a day,
each training every family once, with an RL hyperopt; the old setup billed an idle L4 too. Tests that check
figures by hand use it: every job of a burst is queued at once and runs as long as stated."""


def with_legacy_workload(platform: dict[str, Any]) -> dict[str, Any]:
    """The platform object with `LEGACY_WORKLOAD` (and the 3-h job timeout that held its longest job)."""
    platform["workload"] = copy.deepcopy(LEGACY_WORKLOAD)
    platform["slo"] = {}
    platform["runner"]["job_timeout"] = "3h"
    return platform
