"""`platform.slo`: the feedback time the platform is built to meet, judged on the simulated week."""

from __future__ import annotations

from pydantic import Field

from infra.config.base import SpecModel, StrictFloat, StrictInt

MAX_WEEKS = 100
"""Simulated weeks at most: each is a whole week of the workload dispatched (about 20 ms on the dev stack)."""


class SloSpec(SpecModel):
    """Targets for the people who wait on CI jobs."""

    merge_request_wait_minutes: StrictFloat | None = Field(None, gt=0, le=24 * 60)
    """The 95th percentile of merge-request jobs' waits (queued to running: for a runner slot, then for a
    node) over the simulated week of `platform.workload`. `plan` says met or missed (a miss is a warning);
    the levers are a pool's `max_size`, `merge_request_slots` and `warm` windows. None: no target."""
    weeks: StrictInt = Field(20, ge=1, le=MAX_WEEKS)
    """How many independent weeks the target is judged on (arrivals, run times and boots drawn for each, the
    same weeks for every spec): `plan` and the MR note say in how many of them it is met, with the p95 over all
    their merge-request jobs and the spread of the weekly p95s."""
    confidence: StrictFloat = Field(0.9, gt=0, le=1)
    """The share of those weeks the target must be met in: below it, `plan` warns at the target, and `recommend`
    looks for the cheapest spec that reaches it (`--confidence` overrides it)."""
