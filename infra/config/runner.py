"""`platform.runner`: the GitLab runners, one per GPU pool that a profile targets (a Helm release and a
`glrt-` token each).

Each runner's limits (its pool, node-selector allow-list, job slots, resource maxima, poll timeout) are not
configured here: they are derived from the pools and profiles (`infra.model`), so they can never disagree
with the CI templates. This section holds what the runners share: where they live, which chart, their
timeouts, the tags that route jobs to them and the optional cache.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from infra.config.base import (
    MAX_LIST,
    Duration,
    ImagePattern,
    ImageReference,
    SpecModel,
    StrictInt,
    duration_seconds,
    is_dns_label,
)

CHART_REPOSITORY = "https://charts.gitlab.io"
CHART_NAME = "gitlab-runner"
CACHE_ACCESS_KEY_CONFIG = "runner_cache_access_key"
CACHE_SECRET_KEY_CONFIG = "runner_cache_secret_key"
"""Stack secrets (`gpu-ci:<key>`) holding the Object Storage key of the runner cache."""

JOB_PDB_CHART = (0, 88, 0)
"""The first chart whose runner (18.11.0) can create a PodDisruptionBudget per job pod (`pod_disruption_budget`,
gitlab-runner !6331): a drain (an upgrade) then waits for the job instead of evicting it."""
MAX_NODE_WAIT_TOLERANCE_SECONDS = 24 * 3600
MIN_JOB_TIMEOUT_SECONDS = 600
"""GitLab refuses a runner maximum timeout below 10 minutes."""

_CHART_REPOSITORY = re.compile(
    r"(https://[A-Za-z0-9.-]{1,253}|http://(127\.0\.0\.1|localhost))(:[0-9]{1,5})?(/[A-Za-z0-9._~-]+)*/?"
)
"""An https chart repository, or an http one on this machine's loopback (a local mirror, the engine tests')."""
_CHART_VERSION = re.compile(r"[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}")
"""ASCII digits only, as Helm reads a version (`\\d` takes `０.８６.０`, full-width digits)."""
_TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,254}")
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_CACHE_PATH = re.compile(r"[A-Za-z0-9][A-Za-z0-9_./-]{0,254}")


class RunnerCacheSpec(SpecModel):
    """The distributed cache on a Scaleway Object Storage bucket (every job is a fresh pod)."""

    bucket: str
    """Bucket name: 3-63 of a-z, 0-9, '.' and '-'."""
    create: bool = True
    """Create the bucket (with an expiry rule); False uses an existing bucket of that name."""
    expire_days: StrictInt | None = Field(30, ge=1, le=3650)
    """Cache objects older than this are deleted by a lifecycle rule (created buckets only)."""
    path: str = "gpu-ci"
    """Prefix of the cache objects in the bucket."""
    shared: bool = True
    """One cache for all runner managers (a manager pod replaced by an upgrade keeps the cache)."""

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, value: str) -> str:
        if not _BUCKET.fullmatch(value) or ".." in value:
            raise ValueError("not a bucket name: 3-63 of a-z, 0-9, '.' and '-', starting and ending alphanumeric")
        return value

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        if not _CACHE_PATH.fullmatch(value) or ".." in value:
            raise ValueError("not an object prefix like gpu-ci or ci/cache")
        return value


class RunnerSpec(SpecModel):
    """The GitLab runner manager and the job pods it creates."""

    namespace: str = "gitlab-runner"
    """Kubernetes namespace of the manager and of the job pods (its RBAC stops there)."""
    chart_version: str = "0.86.0"
    """Exact version of the `gitlab-runner` chart (from `chart_repository`); upgrades are explicit."""
    chart_repository: str = CHART_REPOSITORY
    """The Helm chart repository the `gitlab-runner` chart is installed from: GitLab's, or a mirror of it (an
    https URL; http only on loopback, `http://127.0.0.1:<port>`)."""
    default_pool: str | None = None
    """Where a job that names no pool runs; None: the cheapest pool a profile targets."""
    manager_pool: str | None = None
    """Where the manager pod runs; None: the first always-on pool without a GPU."""
    job_timeout: Duration = "3h"
    """Longest job the runners accept (their `maximum_timeout` on GitLab: it caps a job's timeout, never raises
    it); a manager upgrade waits this long to drain. The CI templates set their own `timeout:` within it."""
    poll_timeout_margin_minutes: int = Field(10, ge=1, le=120, strict=True)
    """Slack over a pool's slowest cold start (`cold_start_max_minutes`, else `cold_start_p90_minutes`, else
    `cold_start_minutes`; image pull, scheduling) that every wait for a node keeps: never zero, a node that takes
    exactly the cold start would fail the job."""
    node_wait_tolerance: Duration = "2h"
    """The longest outage of a pool's nodes (a stock-out, a slow boot) that loses no job. The CI templates
    retry a job whose pod found no node (`retry: max: 2`, a new job each time), and each attempt's
    `poll_timeout` is derived so that the three attempts outlast this plus the pool's slowest cold start and the
    margin;
    every attempt's job timeout must still hold that wait plus the pool's longest job."""
    tags: tuple[str, ...] = Field(("kapsule", "gpu"), max_length=MAX_LIST)
    """The default pool's tags: a job carrying these (and no other) runs on `default_pool`. Only the default
    pool's runner holds all of them (plus its pool's name). No runner takes untagged jobs."""
    pool_tags: tuple[str, ...] = Field(("kapsule",), max_length=MAX_LIST)
    """Tags every runner holds besides its pool's name: the other pools' runners hold `[*pool_tags, <pool>]`
    and their profiles' templates carry exactly that. They must not hold all of `tags`."""
    allowed_images: tuple[ImagePattern, ...] = Field((), max_length=MAX_LIST)
    """Images (and services) jobs may use besides the registry's (`rg.<region>.scw.cloud/<namespace>/*`) and
    `default_image`; gitlab-runner's `allowed_images` globs (`docker.io/library/python:*`)."""
    description: str = Field("gpu-ci: Kapsule GPU runner (managed by Pulumi)", max_length=255)
    """The runner's description on GitLab."""
    access_level: Literal["not_protected", "ref_protected"] = "not_protected"
    """`ref_protected` runs jobs of protected branches and tags only."""
    default_image: ImageReference = "alpine:3.22"
    """Image of a job that sets none (the CI templates set the training image)."""
    cache: RunnerCacheSpec | None = None
    """S3 cache on Scaleway Object Storage (its key: two stack secrets); None: no cache."""

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        if not is_dns_label(value):
            raise ValueError("not a Kubernetes namespace name (1-63 of a-z, 0-9 and '-')")
        return value

    @field_validator("chart_repository")
    @classmethod
    def _chart_repository(cls, value: str) -> str:
        if not _CHART_REPOSITORY.fullmatch(value):
            raise ValueError("not a chart repository URL like https://charts.gitlab.io (http only on 127.0.0.1)")
        return value

    @field_validator("chart_version")
    @classmethod
    def _chart_version(cls, value: str) -> str:
        if not _CHART_VERSION.fullmatch(value):
            raise ValueError("not a chart version like 0.86.0 (pin an exact version)")
        return value

    @field_validator("job_timeout")
    @classmethod
    def _job_timeout(cls, value: str) -> str:
        if duration_seconds(value) < MIN_JOB_TIMEOUT_SECONDS:
            raise ValueError("must be at least 10m (GitLab's minimum runner timeout)")
        return value

    @field_validator("tags", "pool_tags")
    @classmethod
    def _tags(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("needs at least one tag: the runner takes no untagged jobs")
        for tag in value:
            if not _TAG.fullmatch(tag):
                raise ValueError(f"tag {tag!r} must be letters, digits, '_', '.' or '-'")
        if len(set(value)) != len(value):
            raise ValueError("lists a tag twice")
        return value

    @field_validator("description")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("node_wait_tolerance")
    @classmethod
    def _node_wait_tolerance(cls, value: str) -> str:
        if duration_seconds(value) > MAX_NODE_WAIT_TOLERANCE_SECONDS:
            raise ValueError("must be at most 24h: past a day, GitLab drops the pending jobs anyway")
        return value

    @property
    def protects_job_pods(self) -> bool:
        """Whether the pinned chart's runner creates a PodDisruptionBudget for each job pod."""
        return tuple(int(part) for part in self.chart_version.split(".")) >= JOB_PDB_CHART

    @property
    def job_timeout_seconds(self) -> int:
        return duration_seconds(self.job_timeout)

    @property
    def node_wait_tolerance_minutes(self) -> int:
        return -(-duration_seconds(self.node_wait_tolerance) // 60)
