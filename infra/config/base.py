"""Building blocks shared by the spec sections: a strict frozen model and typed fields."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainSerializer

from infra.quantity import Cpu, Memory


class SpecModel(BaseModel):
    """Frozen, and unknown keys are errors: a typo in the stack config must not be ignored."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        arbitrary_types_allowed=True,
        coerce_numbers_to_str=True,
        use_attribute_docstrings=True,  # field docstrings become descriptions: docs/config-reference.md
    )


def _cpu(value: Any) -> Cpu:
    return value if isinstance(value, Cpu) else Cpu.parse(value)


def _memory(value: Any) -> Memory:
    return value if isinstance(value, Memory) else Memory.parse(value)


CpuQuantity = Annotated[Cpu, BeforeValidator(_cpu), PlainSerializer(str)]
MemoryQuantity = Annotated[Memory, BeforeValidator(_memory), PlainSerializer(str)]

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
"""RFC 1123 label: safe as a pool name, a label value, a Kubernetes name and inside a regex."""

_DURATION = re.compile(r"^\d+(s|m|h)$")


def _duration(value: Any) -> str:
    if not isinstance(value, str) or not _DURATION.match(value):
        raise ValueError("not a duration like 5m, 300s or 1h")
    return value


Duration = Annotated[str, BeforeValidator(_duration)]


def duration_seconds(value: str) -> int:
    """Seconds in a Duration string ("5m" -> 300)."""
    return int(value[:-1]) * {"s": 1, "m": 60, "h": 3600}[value[-1]]


_LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
_LABEL_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def label_key_problem(key: str) -> str | None:
    """Why `key` is not a valid Kubernetes label key, or None."""
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _LABEL_PREFIX.match(prefix)):
        return "label key prefix must be a DNS subdomain"
    if not name or len(name) > 63 or not _LABEL_NAME.match(name):
        return "label name must be 1-63 alphanumerics, '-', '_' or '.'"
    return None


def label_value_problem(value: str) -> str | None:
    """Why `value` is not a valid Kubernetes label value, or None."""
    if value and (len(value) > 63 or not _LABEL_NAME.match(value)):
        return "label value must be at most 63 alphanumerics, '-', '_' or '.'"
    return None
