"""Building blocks shared by the spec sections: a strict frozen model, typed fields and the stated bounds.

Every pattern here is matched against the whole value (`fullmatch`: Python's `$` also matches before a
final newline, so `"gpu\\n"` would pass a `^...$` check), every number has a documented upper bound
(docs/config-limits.md) and every string a length cap, so no config can make the program hang, crash
or hand the cloud an absurd value.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, PlainSerializer, Strict

from infra.quantity import MAX_MILLI_UNITS, Cpu, Memory

MAX_STRING = 1024
"""Longest string anywhere in the spec (descriptions, images): nothing real comes near it."""


class SpecModel(BaseModel):
    """Frozen, and unknown keys are errors: a typo in the stack config must not be ignored.

    No inf/NaN floats (they break every sum), no string longer than MAX_STRING characters, and no number where
    text belongs: YAML and Pulumi read an unquoted `version: 1.30` as the number 1.3 and `0755` as 493, so a
    number in a text field is refused at its key (`errors.py` says "quote it"), never turned into text."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        arbitrary_types_allowed=True,
        allow_inf_nan=False,
        str_max_length=MAX_STRING,
    )


# --- numbers: strict (YAML `yes` is a bool, not 1; 1.5 is not an int), each with a stated upper bound ---

StrictInt = Annotated[int, Strict()]
"""An integer as written: `yes`/`true`, `1.0` and `"1"` are refused (pydantic would take them as 1)."""
StrictFloat = Annotated[float, Strict()]
"""A finite number (ints are fine); `"0.5"` and booleans are refused."""

MAX_POOL_NODES = 100
"""Nodes of one pool at max_size, and of all pools together: gpu-ci's own quota, far above what a CI platform
needs or a Scaleway project's GPU quota allows, so a slip of a few zeros is caught; raise it here on purpose."""
MAX_COLD_START_MINUTES = 240
MAX_WAIT_SECONDS = 7 * 24 * 3600
"""Longest duration of any setting (timeouts, scale-down delays): one week."""
MAX_ROOT_VOLUME_GB = 10_000
"""Far above any node's root volume (CUDA images need ~100 GB)."""
MAX_JOBS_PER_DAY = 2000
"""Jobs a day, per workload profile and for all together: the cost model simulates each one (2000: under a
second; the dev stack has 36)."""
MAX_BATCHES_PER_DAY = 1440
"""One burst a minute: the cost model simulates every burst."""
MAX_MINUTES_PER_JOB = 7 * 24 * 60

# --- counts: dict and list sizes ---

MAX_POOLS = 32
MAX_PROFILES = 32
MAX_NODE_TYPES = 64
MAX_VARIABLES = 200
MAX_LIST = 64
"""Families of a profile, tags, labels, zones."""

# --- names ---

DNS_LABEL = re.compile(r"\A[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
"""RFC 1123 label: safe as a pool name, a label value, a Kubernetes name and inside a regex (anchored with
\\A...\\Z, so `.match` is a whole-value match too)."""
DNS_SUBDOMAIN = re.compile(r"\A[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
CI_VARIABLE = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
"""What GitLab accepts as a CI/CD variable key."""
MAX_CI_VARIABLE_NAME = 255


def is_dns_label(value: str, max_length: int = 63) -> bool:
    """An RFC 1123 label of at most `max_length` characters (a pool, profile or namespace name)."""
    return len(value) <= max_length and DNS_LABEL.fullmatch(value) is not None


def is_ci_variable_name(value: str) -> bool:
    """A GitLab CI/CD variable name: letters, digits and '_', not starting with a digit, at most 255."""
    return len(value) <= MAX_CI_VARIABLE_NAME and CI_VARIABLE.fullmatch(value) is not None


def pattern(regex: str, hint: str, max_length: int = 255) -> AfterValidator:
    """A validator matching the whole string (fullmatch) and at most `max_length` characters."""
    compiled = re.compile(regex)

    def check(value: str) -> str:
        if len(value) > max_length or compiled.fullmatch(value) is None:
            raise ValueError(hint)
        return value

    return AfterValidator(check)


KubernetesNamespace = Annotated[
    str, pattern(DNS_LABEL.pattern, "not a Kubernetes namespace name (1-63 of a-z, 0-9 and '-')", 63)
]
"""A namespace: an RFC 1123 label of at most 63 characters."""
DnsSubdomain = Annotated[
    str, pattern(DNS_SUBDOMAIN.pattern, "not a Kubernetes object name (a DNS subdomain: a-z, 0-9, '-' and '.')", 253)
]
ImagePattern = Annotated[
    str,
    pattern(
        r"[^\s{}]{1,255}",
        "not an image reference or glob (1-255 characters, no spaces, no braces: Helm's tpl would run a {{ }})",
    ),
]
"""An image reference or a gitlab-runner image glob (`docker.io/library/python:*`)."""
_IMAGE_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE_HOST = (
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]{1,5})?/)?"
)
IMAGE_REFERENCE = (
    rf"{_IMAGE_HOST}{_IMAGE_COMPONENT}(?:/{_IMAGE_COMPONENT})*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?"
)
"""The distribution reference grammar: `[host[:port]/]path[:tag][@sha256:digest]`; no scheme, no
`user:password@`, no glob, no upper-case path."""
ImageReference = Annotated[
    str,
    pattern(
        IMAGE_REFERENCE,
        "not an image reference like registry.k8s.io/pause:3.10 (host/path:tag or @sha256:digest; no scheme, no "
        "user:password@, no glob)",
    ),
]
"""An image a pod runs, as the kubelet pulls it (a bad one would leave the pod in InvalidImageName)."""
CiVariableName = Annotated[
    str, pattern(CI_VARIABLE.pattern, "not a valid CI variable name (letters, digits, '_')", MAX_CI_VARIABLE_NAME)
]


def _private_network(value: Any) -> ipaddress.IPv4Network:
    if isinstance(value, ipaddress.IPv4Network):
        return value
    if not isinstance(value, str) or len(value) > 18:
        raise ValueError("not an IPv4 CIDR like 172.16.0.0/22")
    try:
        net = ipaddress.IPv4Network(value)
    except ValueError as err:
        raise ValueError(f"not an IPv4 CIDR ({err})") from None
    if not net.is_private:
        raise ValueError("must be a private (RFC 1918) range")
    return net


PrivateCidr = Annotated[ipaddress.IPv4Network, BeforeValidator(_private_network), PlainSerializer(str)]
"""A private IPv4 network as a CIDR (`172.16.0.0/22`); kept as `ipaddress.IPv4Network`."""

# --- quantities ---

MIN_MEMORY_BYTES = 2**20
"""Smallest memory quantity of the spec (1Mi): a number without a unit is bytes, so `"3000"` is 3000 bytes,
almost surely a slip for 3000Mi; nothing in a node or a job is that small."""


_TOO_LARGE = "is more than Kubernetes can represent (int64 milli-units)"


def _cpu(value: Any) -> Cpu:
    cpu = value if isinstance(value, Cpu) else Cpu.parse(value)
    if cpu.cores * 1000 > MAX_MILLI_UNITS:
        raise ValueError(_TOO_LARGE)
    return cpu


def _memory(value: Any) -> Memory:
    memory = value if isinstance(value, Memory) else Memory.parse(value)
    if memory.bytes * 1000 > MAX_MILLI_UNITS:
        raise ValueError(_TOO_LARGE)
    if memory.bytes < MIN_MEMORY_BYTES:
        raise ValueError(f"is below 1Mi: a quantity without a unit is bytes (did you mean {memory.text}Mi?)")
    return memory


CpuQuantity = Annotated[Cpu, BeforeValidator(_cpu), PlainSerializer(str)]
MemoryQuantity = Annotated[Memory, BeforeValidator(_memory), PlainSerializer(str)]

# --- durations ---

_DURATION = re.compile(r"(?=[0-9])(?:(?P<h>[0-9]{1,7})h)?(?:(?P<m>[0-9]{1,7})m)?(?:(?P<s>[0-9]{1,7})s)?")
"""ASCII digits only, as Go's time.ParseDuration reads them (`\\d` takes `５m`, a full-width 5, which `int()` reads)."""
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600}


def _duration(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise ValueError(f"is a number, and a duration has its unit: write {value}s, or 5m, 1h, 3h30m")
    match = _DURATION.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError("not a duration like 5m, 300s, 1h or 3h30m")
    if duration_seconds(value) > MAX_WAIT_SECONDS:
        raise ValueError("is longer than a week (168h), the longest wait gpu-ci accepts")
    return value


Duration = Annotated[str, BeforeValidator(_duration)]


def duration_seconds(value: str) -> int:
    """Seconds in a Duration string ("5m" -> 300, "3h30m" -> 12600)."""
    match = _DURATION.fullmatch(value)
    assert match is not None, value
    return sum(int(match[unit]) * seconds for unit, seconds in _UNIT_SECONDS.items() if match[unit])


# --- Kubernetes labels ---

_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")


def label_key_problem(key: str) -> str | None:
    """Why `key` is not a valid Kubernetes label key, or None."""
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not DNS_SUBDOMAIN.fullmatch(prefix)):
        return "label key prefix must be a DNS subdomain"
    if not name or len(name) > 63 or not _LABEL_NAME.fullmatch(name):
        return "label name must be 1-63 alphanumerics, '-', '_' or '.'"
    return None


def label_value_problem(value: str) -> str | None:
    """Why `value` is not a valid Kubernetes label value, or None."""
    if value and (len(value) > 63 or not _LABEL_NAME.fullmatch(value)):
        return "label value must be at most 63 alphanumerics, '-', '_' or '.'"
    return None
