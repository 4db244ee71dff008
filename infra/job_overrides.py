"""What a CI job may override of its pod (pure): the `KUBERNETES_*` variables and the pool it selects.

A job overrides its build container's requests and limits with `KUBERNETES_CPU_REQUEST` & co., up to its
runner's `*_overwrite_max_allowed` (above it the job fails in the runner's prepare stage: it is not clamped),
and selects a node with `KUBERNETES_NODE_SELECTOR_*`, which its runner checks against an anchored regex
(`infra.model.runners.Runner.node_selector_regex`). The templates (`infra.model.profiles`) set these variables;
check-ci reads them back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from infra.config.pools import POOL_NAME_LABEL

NODE_SELECTOR_PREFIX = "KUBERNETES_NODE_SELECTOR_"
POOL_VARIABLE = "KUBERNETES_NODE_SELECTOR_POOL"
"""The variable the templates route with (any `KUBERNETES_NODE_SELECTOR_*` name works for the runner)."""


@dataclass(frozen=True)
class JobResource:
    """A build-container resource a job may override with a CI variable, up to the runner's maximum."""

    field: Literal["cpu_request", "cpu_limit", "memory_request", "memory_limit"]
    """The profile field, and the runner's default key of the same name."""
    kind: Literal["cpu", "memory"]

    @property
    def variable(self) -> str:
        return f"KUBERNETES_{self.field.upper()}"

    @property
    def max_key(self) -> str:
        return f"{self.field}_overwrite_max_allowed"


JOB_RESOURCES = (
    JobResource("cpu_request", "cpu"),
    JobResource("cpu_limit", "cpu"),
    JobResource("memory_request", "memory"),
    JobResource("memory_limit", "memory"),
)


def pool_selector(pool: str) -> str:
    """The `key=value` a job sets in KUBERNETES_NODE_SELECTOR_POOL to run on `pool`."""
    return f"{POOL_NAME_LABEL}={pool}"
