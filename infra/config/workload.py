"""`platform.workload`: the CI jobs of a week, per profile and kind, for the simulated cost and waits.

A profile's jobs come in **kinds**, named by the job-name prefix (`train-validate`, `hyperopt`), each with a
class: `merge_request` jobs are what an ML engineer waits for (their wait has a target: `platform.slo`),
`batch` jobs (schedules, web, API, triggers) are not. A kind says how many jobs a day, how long they run
(the median and, if known, the 90th percentile), and the hours and days they arrive in `time_zone`. The
profile-level `jobs_per_day`/`minutes_per_job` of before stay valid: one merge-request kind arriving in
`batches_per_day` bursts spread over every day.

These figures feed the simulation (`infra/sim/`): the week's cost, the waits per class, and the old setup
(`baseline`: every job on one node, one at a time, billed around the clock) to compare with.
"""

from __future__ import annotations

import math
import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

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
from infra.config.schedule import TimeZone, WindowSpec

MAX_KINDS = 16
"""Kinds of one profile."""
LEGACY_KIND = "train-validate"
"""The one merge-request kind of a profile given with the profile-level keys."""
JobClass = Literal["merge_request", "batch"]
_KIND = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
Z90 = 1.2815515655446004
Z99 = 2.3263478740408408
"""Standard normal quantiles of 0.90 and 0.99: a log-normal run time through the median and the p90."""


class KindLoadSpec(WindowSpec):
    """One kind of a profile's jobs (the job-name prefix): its class, how many a day, how long, and when."""

    job_class: JobClass = Field(alias="class")
    """`merge_request`: jobs of merge-request pipelines (their wait has a target); `batch`: the others
    (schedules, web, API, triggers)."""
    jobs_per_day: StrictInt = Field(ge=0, le=MAX_JOBS_PER_DAY)
    """Jobs on each day of `days`; they come in pipelines of one job per family of the profile, at times
    drawn within `from`-`to` (the same draw for the same kind in every profile: one pipeline, all families)."""
    minutes_per_job: StrictFloat = Field(gt=0, le=MAX_MINUTES_PER_JOB)
    """Median run time of one job with its node's GPU to itself."""
    minutes_p90: StrictFloat | None = Field(None, gt=0, le=MAX_MINUTES_PER_JOB)
    """90th percentile of the run time; given, run times spread log-normally between; absent, all jobs take
    `minutes_per_job`."""

    @property
    def sigma(self) -> float:
        """The log-normal's shape through the median and the p90 (0: every job takes the median)."""
        return math.log(self.minutes_p90 / self.minutes_per_job) / Z90 if self.minutes_p90 else 0.0

    @property
    def max_minutes(self) -> float:
        """The longest run time drawn: the log-normal's p99 (the simulation cuts its tail there)."""
        return self.minutes_per_job * math.exp(Z99 * self.sigma)

    @model_validator(mode="after")
    def _p90(self) -> KindLoadSpec:
        if self.minutes_p90 is not None and self.minutes_p90 < self.minutes_per_job:
            raise ValueError(f"minutes_p90={self.minutes_p90:g} is below minutes_per_job={self.minutes_per_job:g}")
        # The p99 in log space: a median of 1e-300 under a p90 of 40 would overflow exp() (and mean nothing).
        if math.log(self.minutes_per_job) + Z99 * self.sigma > math.log(MAX_MINUTES_PER_JOB):
            raise ValueError(
                f"minutes_p90={self.minutes_p90:g} over minutes_per_job={self.minutes_per_job:g} spreads the run "
                f"times past a week ({MAX_MINUTES_PER_JOB} min) at their p99, the longest run the simulation "
                "draws: bring the two closer"
            )
        return self


class ProfileLoadSpec(SpecModel):
    """One profile's load: its kinds, or (as before) one merge-request kind by `jobs_per_day`/`minutes_per_job`."""

    jobs_per_day: StrictInt | None = Field(None, ge=0, le=MAX_JOBS_PER_DAY)
    """Without `kinds`: jobs a day of one merge-request kind, in `workload.batches_per_day` bursts."""
    minutes_per_job: StrictFloat | None = Field(None, gt=0, le=MAX_MINUTES_PER_JOB)
    """Without `kinds`: run time of one job when it has its node's GPU to itself."""
    gpu_utilization: StrictFloat | None = Field(None, gt=0, le=1)
    """Share of the GPU's time one job keeps busy when alone (nvidia-smi `utilization.gpu`, 0.34 for 34 %).
    Given, jobs sharing a GPU slow down once their sum passes 100 %; absent, sharing is assumed free."""
    kinds: dict[str, KindLoadSpec] = Field(default_factory=dict, max_length=MAX_KINDS)
    """Kinds of jobs by job-name prefix (`train-validate`, `hyperopt`)."""

    @field_validator("kinds")
    @classmethod
    def _kind_names(cls, value: dict[str, KindLoadSpec]) -> dict[str, KindLoadSpec]:
        for name in value:
            if not _KIND.fullmatch(name):
                raise ValueError(f"kind {name[:64]!r} is not a job-name prefix like train-validate or hyperopt")
        return value

    @model_validator(mode="after")
    def _one_form(self) -> ProfileLoadSpec:
        legacy = (self.jobs_per_day, self.minutes_per_job)
        if self.kinds and any(v is not None for v in legacy):
            raise ValueError("give kinds, or jobs_per_day and minutes_per_job, not both")
        if not self.kinds and None in legacy:
            missing = "jobs_per_day" if self.jobs_per_day is None else "minutes_per_job"
            raise ValueError(f"give kinds, or both jobs_per_day and minutes_per_job ({missing} is missing)")
        return self

    @property
    def daily_jobs(self) -> int:
        """Jobs on a day when every kind arrives (the most a day can hold)."""
        if self.kinds:
            return sum(kind.jobs_per_day for kind in self.kinds.values())
        return self.jobs_per_day or 0

    @property
    def longest_minutes(self) -> float:
        """The longest run time of a job alone on its GPU: the longest kind's `max_minutes`, or the profile's."""
        if self.kinds:
            return max(kind.max_minutes for kind in self.kinds.values())
        return self.minutes_per_job or 0.0


class BaselineSpec(SpecModel):
    """The old setup the report compares with: every job on one node of `node_type`, one at a time."""

    node_type: str = "L40S-1-48G"
    """The GPU node type every job ran on, one at a time, billed around the clock."""
    idle_node_types: tuple[str, ...] = Field((), max_length=MAX_LIST)
    """Other nodes the old setup billed around the clock without running jobs (none when they scaled to zero)."""


class WorkloadSpec(SpecModel):
    """A week of CI jobs: per profile, their kinds (how many, how long, when)."""

    time_zone: TimeZone = "UTC"
    """IANA time zone of the kinds' hours and the pools' warm windows (`Europe/Paris`); the simulated week
    starts on Monday 00:00 there (daylight-saving shifts are ignored)."""
    batches_per_day: StrictInt = Field(1, ge=1, le=MAX_BATCHES_PER_DAY)
    """For profiles without `kinds`: bursts (pipelines) a day's jobs arrive in, spread over the day."""
    profiles: dict[str, ProfileLoadSpec] = Field(max_length=MAX_PROFILES)
    """Load by profile name."""
    baseline: BaselineSpec = BaselineSpec()
    """The old setup the report compares with."""
