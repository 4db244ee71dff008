"""The job-side vocabulary of routing (pure): the `KUBERNETES_*` variables a job may override, quantities,
the words of a job name.

A job overrides its build container's requests and limits with `KUBERNETES_CPU_REQUEST` & co., up to its
runner's `*_overwrite_max_allowed` (above it the job fails in the runner's prepare stage: it is not clamped),
and selects a node with `KUBERNETES_NODE_SELECTOR_*`, which its runner checks against an anchored regex.
The runners themselves are derived in `infra.model`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from infra.config.pools import POOL_NAME_LABEL
from infra.quantity import Cpu, Memory

NODE_SELECTOR_PREFIX = "KUBERNETES_NODE_SELECTOR_"
POOL_VARIABLE = "KUBERNETES_NODE_SELECTOR_POOL"
"""The variable the templates route with (any `KUBERNETES_NODE_SELECTOR_*` name works for the runner)."""

_GO_META = re.compile(r"([\\.+*?()|\[\]{}^$])")
_NAME_SPLIT = re.compile(r"[^a-z0-9_]+")


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


def name_tokens(name: str) -> frozenset[str]:
    """Words of a job name: `train-validate-dqn` -> train, validate, dqn; `hyperopt_ppo: [1]` -> hyperopt_ppo,
    hyperopt, ppo, 1 (families may hold `_`, so both the whole word and its parts count)."""
    words = [word for word in _NAME_SPLIT.split(name.lower()) if word]
    return frozenset(words) | {part for word in words for part in word.split("_") if part}
