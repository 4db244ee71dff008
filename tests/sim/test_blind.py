"""A lone merge request's readiness (`infra.sim.blind`): the nodes it needs, the hours they are held, and the engine
agreeing that with nodes late (a boot past the target) fewer warm nodes leave its jobs past the target."""

from __future__ import annotations

import copy
from dataclasses import replace
from fractions import Fraction
from typing import Any

import pytest

from infra.model.platform import load_platform
from infra.offline.stack_config import load_stack_config
from infra.sim.arrivals import week_jobs
from infra.sim.blind import BlindPool, blind_pools, window_minutes
from infra.sim.engine import simulate
from infra.sim.levers import apply
from infra.sim.platform_scenario import scenario
from infra.sim.target_cost import bound_pools

LATE = Fraction(5)


def _dev() -> dict[str, Any]:
    return copy.deepcopy(load_stack_config("dev").get("platform"))


def test_windows_are_counted_once_where_they_overlap() -> None:
    assert window_minutes([(30, 90), (0, 60), (120, 150), (125, 130)]) == 90 + 30
    assert window_minutes([]) == 0


def test_the_dev_pools_need_a_pipelines_jobs_over_a_nodes_most_slots_through_the_kinds_hours() -> None:
    """Per GPU pool: its profiles' families (one merge-request job each per pipeline) over the bound's slots, held
    through the merge-request kinds' windows (Mon-Fri 09:00-18:00: 45 h)."""
    raw = _dev()
    platform = load_platform(raw)
    pools = bound_pools(platform)
    found = {b.pool.name: b for b in blind_pools(platform, pools, week_jobs(platform))}
    assert set(found) == {"ci-compile", "ci-training"}
    for name, blind in found.items():
        families = sum(len(raw["profiles"][p]["families"]) for p in platform.pools[name].profiles)
        assert blind.pipeline_jobs == families
        assert blind.nodes == -(-families // blind.pool.slots)
        assert blind.window_minutes == 5 * 9 * 60
        assert blind.eur == blind.nodes * 45 * blind.pool.eur_per_hour


def _lone_pipeline(raw: dict[str, Any], warm: int) -> tuple[BlindPool, list[Fraction]]:
    """One merge-request pipeline of the first week on ci-training alone, queued at 11:00 on Monday with
    `warm` of its nodes kept warm from 09:00 and every node 5 min late: its jobs' waits."""
    changed = apply(
        raw,
        [
            (("pools", "ci-training", "max_size"), 3),
            (("pools", "ci-training", "gpu_sharing", "replicas"), 5),
            (("pools", "ci-training", "warm"), [{"days": "Mon", "from": "09:00", "to": "18:00", "nodes": warm}]),
        ],
    )
    platform = load_platform(changed)
    jobs = week_jobs(platform)
    first = next(j for j in jobs if j.pool in (None, "ci-training") and j.job_class == "merge_request")
    pipeline = [j for j in jobs if j.pipeline == first.pipeline and platform.profiles[j.profile].pool == "ci-training"]
    moved = [replace(j, created_minute=Fraction(11 * 60)) for j in pipeline]
    (blind,) = (b for b in blind_pools(platform, bound_pools(platform, late_boot=LATE), moved))
    result = simulate(scenario(platform, moved, late_boot=LATE))
    waits = [j.started - j.created for j in result.jobs if j.started is not None]
    assert len(waits) == len(moved)
    return blind, waits


@pytest.mark.parametrize("short", [0, 1])
def test_with_nodes_late_fewer_warm_nodes_than_it_says_leave_jobs_past_the_target(short: int) -> None:
    """A boot of 20 min against a 15-min target: the pipeline's 8 jobs start in time with the nodes it names warm,
    and with one fewer some wait a boot (the engine, not the arithmetic, says so)."""
    raw = _dev()
    target = Fraction(raw["slo"]["merge_request_wait_minutes"])
    blind, _ = _lone_pipeline(raw, 1)
    _, waits = _lone_pipeline(raw, blind.nodes - short)
    late = sum(1 for wait in waits if wait > target)
    if short:
        assert late >= len(waits) - (blind.nodes - 1) * blind.pool.slots > 0
    else:
        assert late == 0
