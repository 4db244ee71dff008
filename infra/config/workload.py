"""`platform.workload`: how many CI jobs a day, and how long they run, for the cost and drain-time report.

These figures feed nothing but the report (`infra/sim/day.py`): they are estimates to compare the new
setup with the old one (`baseline`: every job on one node, one at a time, billed around the clock).
"""

from __future__ import annotations

from pydantic import Field

from infra.config.base import (
    MAX_BATCHES_PER_DAY,
    MAX_JOBS_PER_DAY,
    MAX_LIST,
    MAX_MINUTES_PER_JOB,
    MAX_PROFILES,
    SpecModel,
    StrictFloat,
    StrictInt,
)


class ProfileLoadSpec(SpecModel):
    """One profile's daily load."""

    jobs_per_day: StrictInt = Field(ge=0, le=MAX_JOBS_PER_DAY)
    """At most MAX_JOBS_PER_DAY: the cost model simulates every job."""
    minutes_per_job: StrictFloat = Field(gt=0, le=MAX_MINUTES_PER_JOB)
    """Run time of one job when it has its node's GPU to itself (what GitLab shows for the old setup)."""
    gpu_utilization: StrictFloat | None = Field(None, gt=0, le=1)
    """Share of the GPU's time one job keeps busy when alone (nvidia-smi `utilization.gpu`, 0.34 for 34 %).
    Given, jobs sharing a GPU slow down once their sum passes 100 %; absent, sharing is assumed free."""


class BaselineSpec(SpecModel):
    """The old setup the report compares with: every job on one node of `node_type`, one at a time."""

    node_type: str = "L40S-1-48G"
    """The GPU node type every job ran on, one at a time, billed around the clock."""
    idle_node_types: tuple[str, ...] = Field((), max_length=MAX_LIST)
    """Other nodes the old setup billed around the clock without running jobs (e.g. the idle L4)."""


class WorkloadSpec(SpecModel):
    """A day of CI jobs: per profile, how many and how long; they arrive in `batches_per_day` bursts."""

    batches_per_day: StrictInt = Field(1, ge=1, le=MAX_BATCHES_PER_DAY)
    """Bursts (pipelines) the day's jobs arrive in; each finds the GPU pools scaled to zero."""
    profiles: dict[str, ProfileLoadSpec] = Field(max_length=MAX_PROFILES)
    """Daily load by profile name."""
    baseline: BaselineSpec = BaselineSpec()
    """The old setup the report compares with."""
