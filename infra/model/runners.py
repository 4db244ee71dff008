"""A GitLab runner as the platform deploys it (pure): one per GPU pool that a profile targets.

Its `concurrent` is its pool's job slots, so a job that finds the pool full waits in GitLab's queue (safe:
GitLab drops a pending job only after 24 h) instead of as a Pending pod that fails after `poll_timeout`. Its
node selector is fixed to its pool, and **its anchored node-selector regex** (`node_selector_overwrite_allowed`)
admits that pool only. Tags route jobs to runners: GitLab gives a job to a runner that holds **all** of the
job's tags, so only the default pool's runner holds the default tags (`runner.tags`), and every other runner
holds `[*runner.pool_tags, <pool>]`. Its `*_overwrite_max_allowed` are the largest its profiles ask for.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from infra.config.platform import PlatformSpec
from infra.config.pools import POOL_NAME_LABEL
from infra.config.profiles import ProfileSpec
from infra.job_overrides import JOB_RESOURCES
from infra.model.attempts import poll_timeout_minutes, survived_outage_minutes
from infra.model.pools import Pool
from infra.model.routes import held_runner_tags, shared_runner_tags
from infra.model.timeouts import template_timeout_seconds
from infra.quantity import Quantity, magnitude

RELEASE_NAME = "gitlab-runner"
"""Helm release of the default pool's runner (the single runner's name before runners were per pool)."""
MAX_RELEASE_NAME = 53
"""Helm refuses longer release names."""
HELD_SUFFIX = "-mr"
"""Name suffix of the runner of a pool's held merge-request slots."""
REGISTRY_PULL_SECRET_NAME = "registry-pull"
"""The runners' image-pull Secret (a private registry): config.toml names it, the runner fleet creates it."""
CACHE_SECRET_NAME = "runner-cache-s3"
"""Secret with `accesskey` and `secretkey`: the chart exports them as CACHE_S3_ACCESS_KEY / _SECRET_KEY."""
ROLE_LABEL = "gpu-ci/role"
"""Label of the runners' pods (`job`, `manager`) and the operator-wait Job's: the NetworkPolicies select it."""

_GO_META = re.compile(r"([\\.+*?()|\[\]{}^$])")


def go_quote_meta(text: str) -> str:
    """Go's `regexp.QuoteMeta`: the text as a literal in an RE2 pattern."""
    return _GO_META.sub(r"\\\1", text)


@dataclass(frozen=True)
class Runner:
    """One GitLab runner (registration, token Secret, Helm release) serving one GPU pool."""

    name: str
    """The pool's name for its shared runner, `<pool>-mr` for the runner of its held merge-request slots."""
    pool: str
    tags: tuple[str, ...]
    is_default: bool
    concurrent: int
    """Its pool's job slots at max_size (less the held slots, or only those): a job beyond them waits in
    GitLab, not as a Pending pod."""
    poll_timeout_seconds: int
    """How long one attempt's pod may wait for a node (`infra.model.attempts`)."""
    survives_outage_minutes: int
    """The longest outage of the pool's nodes its jobs survive, over their attempts."""
    job_timeout_seconds: int
    """Its `maximum_timeout` on GitLab (`runner.job_timeout`): a cap on a job's timeout, never a raise."""
    template_timeout_seconds: int
    """The `timeout:` of its pool's templates, what its jobs really get (`infra.model.timeouts`): one attempt's
    poll_timeout plus the pool's longest job on a full node, within `job_timeout_seconds`."""
    profiles: tuple[str, ...]
    maxima: Mapping[str, Quantity]
    """The runner's `*_overwrite_max_allowed`: the largest any of its profiles asks for, by field."""
    description: str
    release_name: str
    token_secret_name: str
    resource_prefix: str
    """Prefix of its Pulumi child names: "" for the default pool's runner (names kept from the single-runner
    layout, so an existing stack keeps its registration and release), `<name>-` for the others."""
    merge_requests_only: bool = False
    """The runner of a pool's held slots: it holds only the pool's merge-request tag."""

    @property
    def defaults(self) -> Mapping[str, Quantity]:
        """Requests and limits of a job that sets none: the largest of its profiles', by field (its maxima)."""
        return self.maxima

    @property
    def node_selector(self) -> dict[str, str]:
        return {POOL_NAME_LABEL: self.pool}

    @property
    def node_selector_regex(self) -> str:
        """Anchored RE2 pattern for `node_selector_overwrite_allowed`: its own pool only.

        The runner matches it unanchored (Go's `regexp.MatchString`) against the whole `key=value`, so without
        `^...$` `x=k8s.scaleway.com/pool-name=ci-training` would pass."""
        return f"^{go_quote_meta(POOL_NAME_LABEL)}=({go_quote_meta(self.pool)})$"

    def admits_node_selector(self, value: str) -> bool:
        """Whether the runner accepts `value` in a `KUBERNETES_NODE_SELECTOR_*` variable (Go's `$`, not Python's,
        which also matches before a final newline: hence `\\Z`)."""
        return re.search(self.node_selector_regex.removesuffix("$") + r"\Z", value) is not None

    def takes(self, tags: Iterable[str]) -> bool:
        """GitLab hands a job to a runner that holds all of its tags; these runners take no untagged job."""
        wanted = set(tags)
        return bool(wanted) and wanted <= set(self.tags)


def _largest(profiles: list[ProfileSpec], name: str) -> Quantity:
    return max((getattr(p, name) for p in profiles), key=magnitude)


def derive_runners(spec: PlatformSpec, pool: Pool, default: str) -> list[Runner]:
    """The runners of `pool`: its shared runner, and the runner of its held slots when it has some;
    `default` is the default pool (its shared runner holds the default tags)."""
    held = min(pool.spec.merge_request_slots, pool.slots)
    shared = shared_runner_tags(spec, pool.name, default)
    runners = [_runner(spec, pool, default, name=pool.name, concurrent=pool.slots - held, tags=shared)]
    if held:
        tags = held_runner_tags(spec, pool.name)
        name = f"{pool.name}{HELD_SUFFIX}"
        runners.append(_runner(spec, pool, default, name=name, concurrent=held, tags=tags, held=True))
    return runners


def _runner(
    spec: PlatformSpec,
    pool: Pool,
    default: str,
    *,
    name: str,
    concurrent: int,
    tags: tuple[str, ...],
    held: bool = False,
) -> Runner:
    is_default = pool.name == default and not held
    own = [spec.profiles[profile] for profile in pool.profiles]
    sizes: dict[str, Quantity] = {r.field: _largest(own, r.field) for r in JOB_RESOURCES}
    release = RELEASE_NAME if is_default else f"{RELEASE_NAME}-{name}"
    margin = spec.runner.poll_timeout_margin_minutes
    worst = pool.worst_cold_start_minutes  # the slowest boot measured, not the median: a late node loses no job
    poll = poll_timeout_minutes(worst, margin, spec.runner.node_wait_tolerance_minutes)
    which = "held merge-request slots of pool" if held else "pool"
    return Runner(
        name=name,
        pool=pool.name,
        tags=tags,
        is_default=is_default,
        concurrent=concurrent,
        poll_timeout_seconds=60 * poll,
        survives_outage_minutes=survived_outage_minutes(poll, worst, margin),
        job_timeout_seconds=spec.runner.job_timeout_seconds,
        template_timeout_seconds=template_timeout_seconds(spec, pool, 60 * poll),
        profiles=pool.profiles,
        maxima=sizes,
        description=f"{spec.runner.description} - {which} {pool.name}",
        release_name=release,
        token_secret_name=f"{release}-token",
        resource_prefix="" if is_default else f"{name}-",
        merge_requests_only=held,
    )
