"""What the runner accepts from a job, derived from the pools and profiles (pure: no Pulumi import).

One object, `RunnerLimits`, feeds the runner's config.toml, the CI templates and `check-ci`, so a
template can never ask for more than the runner allows nor for a pool it refuses:

- the default pool (`node_selector`) for jobs that name none, and the default requests and limits of
  such jobs (those of the profiles on the default pool);
- the node-selector allow-list: an anchored regex admitting exactly the pools profiles target. The runner
  matches it unanchored against the whole `key=value` of `KUBERNETES_NODE_SELECTOR_*` (Go's
  `regexp.MatchString`), so without `^...$` `x=k8s.scaleway.com/pool-name=ci-training` would pass;
- the four `*_overwrite_max_allowed`: the largest request and limit any profile asks for. A job above a
  maximum fails in the runner's prepare stage; it is not clamped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Literal

from infra.capacity import pool_reports
from infra.config.pools import POOL_NAME_LABEL
from infra.config.runner import default_pool, targeted_pools
from infra.quantity import Cpu, Memory

if TYPE_CHECKING:
    from infra.config.platform import PlatformSpec

NODE_SELECTOR_PREFIX = "KUBERNETES_NODE_SELECTOR_"
POOL_VARIABLE = "KUBERNETES_NODE_SELECTOR_POOL"
"""The variable the templates route with (any `KUBERNETES_NODE_SELECTOR_*` name works for the runner)."""

_GO_META = re.compile(r"([\\.+*?()|\[\]{}^$])")


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

Quantity = Cpu | Memory


def magnitude(quantity: Quantity) -> Fraction | int:
    """A comparable number: cores for CPU, bytes for memory."""
    return quantity.cores if isinstance(quantity, Cpu) else quantity.bytes


def parse_quantity(kind: Literal["cpu", "memory"], text: object) -> Quantity:
    """A CPU or memory quantity, parsed strictly (QuantityError says why not)."""
    return Cpu.parse(text) if kind == "cpu" else Memory.parse(text)


def go_quote_meta(text: str) -> str:
    """Go's `regexp.QuoteMeta`: the text as a literal in an RE2 pattern."""
    return _GO_META.sub(r"\\\1", text)


def pool_selector(pool: str) -> str:
    """The `key=value` a job sets in KUBERNETES_NODE_SELECTOR_POOL to run on `pool`."""
    return f"{POOL_NAME_LABEL}={pool}"


@dataclass(frozen=True)
class RunnerLimits:
    """The runner's routing and resource limits, as derived from the spec."""

    default_pool: str
    pools: tuple[str, ...]
    """Pools a job may select: exactly those that profiles target, sorted."""
    defaults: dict[str, Quantity]
    """Build-container requests and limits of a job that sets none, by field."""
    maxima: dict[str, Quantity]
    """The largest value any profile asks for, by field: the runner's `*_overwrite_max_allowed`."""

    @property
    def node_selector_regex(self) -> str:
        """Anchored RE2 pattern for the runner's `node_selector_overwrite_allowed`."""
        return f"^{go_quote_meta(POOL_NAME_LABEL)}=({'|'.join(go_quote_meta(p) for p in self.pools)})$"

    def admits_node_selector(self, value: str) -> bool:
        """Whether the runner accepts `value` in a KUBERNETES_NODE_SELECTOR_* variable.

        Go's RE2 `$` matches only at the end of the text (Python's also before a final newline), so
        the pattern is evaluated with `\\Z`, the way the runner's `regexp.MatchString` would.
        """
        return re.search(self.node_selector_regex.removesuffix("$") + r"\Z", value) is not None

    def pool_of(self, selector_value: str) -> str | None:
        """The pool a `k8s.scaleway.com/pool-name=<pool>` value selects (None for another label)."""
        key, _, value = selector_value.partition("=")
        return value if key == POOL_NAME_LABEL else None


def runner_limits(spec: PlatformSpec) -> RunnerLimits:
    """The limits of a valid spec (every profile targets an existing GPU pool)."""
    pools = tuple(targeted_pools(spec))
    default = default_pool(spec)
    if default is None or not pools:
        raise ValueError("runner limits need a spec with profiles (load_spec validates it)")
    on_default = [spec.profiles[name] for name in spec.profiles_on(default)]
    everyone = list(spec.profiles.values())
    return RunnerLimits(
        default_pool=default,
        pools=pools,
        defaults={r.field: max((getattr(p, r.field) for p in on_default), key=magnitude) for r in JOB_RESOURCES},
        maxima={r.field: max((getattr(p, r.field) for p in everyone), key=magnitude) for r in JOB_RESOURCES},
    )


def runner_concurrent(spec: PlatformSpec) -> int:
    """Jobs the manager runs at once: as configured, else every job slot of the profiles' pools at max_size."""
    if spec.runner.concurrent is not None:
        return spec.runner.concurrent
    pools = set(targeted_pools(spec))
    return sum(row.max_concurrent_jobs for row in pool_reports(spec) if row.pool in pools)


def poll_timeout_seconds(spec: PlatformSpec) -> int:
    """How long a job waits for its pod: the slowest cold start (from zero) of the pools jobs can select."""
    return 60 * max(spec.pools[name].cold_start_minutes for name in targeted_pools(spec))
