"""`platform.slo`: the feedback time the platform is built to meet, judged on the simulated week."""

from __future__ import annotations

from pydantic import Field

from infra.config.base import SpecModel, StrictFloat


class SloSpec(SpecModel):
    """Targets for the people who wait on CI jobs."""

    merge_request_wait_minutes: StrictFloat | None = Field(None, gt=0, le=24 * 60)
    """The 95th percentile of merge-request jobs' waits (queued to running: for a runner slot, then for a
    node) over the simulated week of `platform.workload`. `plan` says met or missed (a miss is a warning);
    the levers are a pool's `max_size`, `merge_request_slots` and `warm` windows. None: no target."""
