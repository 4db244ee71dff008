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
from infra.model.pools import Pool
from infra.quantity import Quantity, magnitude

RELEASE_NAME = "gitlab-runner"
"""Helm release of the default pool's runner (the single runner's name before runners were per pool)."""
MAX_RELEASE_NAME = 53
"""Helm refuses longer release names."""

_GO_META = re.compile(r"([\\.+*?()|\[\]{}^$])")


def go_quote_meta(text: str) -> str:
    """Go's `regexp.QuoteMeta`: the text as a literal in an RE2 pattern."""
    return _GO_META.sub(r"\\\1", text)


@dataclass(frozen=True)
class Runner:
    """One GitLab runner (registration, token Secret, Helm release) serving one GPU pool."""

    pool: str
    tags: tuple[str, ...]
    is_default: bool
    concurrent: int
    """Its pool's job slots at max_size: a job beyond them waits in GitLab, not as a Pending pod."""
    poll_timeout_seconds: int
    """How long a job's pod may wait for a node: the pool's cold start plus the spec's margin."""
    job_timeout_seconds: int
    profiles: tuple[str, ...]
    maxima: Mapping[str, Quantity]
    """The runner's `*_overwrite_max_allowed`: the largest any of its profiles asks for, by field."""
    description: str
    release_name: str
    token_secret_name: str
    resource_prefix: str
    """Prefix of its Pulumi child names: "" for the default pool's runner (names kept from the single-runner
    layout, so an existing stack keeps its registration and release), `<pool>-` for the others."""

    @property
    def name(self) -> str:
        return self.pool

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


def derive_runner(spec: PlatformSpec, pool: Pool, default: str) -> Runner:
    """The runner of `pool`; `default` is the default pool (its runner holds the default tags)."""
    is_default = pool.name == default
    tags = spec.runner.tags if is_default else spec.runner.pool_tags
    own = [spec.profiles[name] for name in pool.profiles]
    sizes: dict[str, Quantity] = {r.field: _largest(own, r.field) for r in JOB_RESOURCES}
    release = RELEASE_NAME if is_default else f"{RELEASE_NAME}-{pool.name}"
    return Runner(
        pool=pool.name,
        tags=tuple(dict.fromkeys((*tags, pool.name))),
        is_default=is_default,
        concurrent=pool.slots,
        poll_timeout_seconds=60 * (pool.cold_start_minutes + spec.runner.poll_timeout_margin_minutes),
        job_timeout_seconds=spec.runner.job_timeout_seconds,
        profiles=pool.profiles,
        maxima=sizes,
        description=f"{spec.runner.description} - pool {pool.name}",
        release_name=release,
        token_secret_name=f"{release}-token",
        resource_prefix="" if is_default else f"{pool.name}-",
    )
