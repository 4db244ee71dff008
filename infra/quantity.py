"""Strict Kubernetes resource quantities (CPU and memory), without Pulumi.

The runner compares job overrides with its maxima as Kubernetes quantities, and the
capacity checks add requests up per node, so quantities are parsed into exact numbers
once, here, with the grammar of k8s.io/apimachinery `resource.ParseQuantity`, and
kept together with the text the user wrote (which is what gets rendered).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
_QUANTITY = re.compile(rf"(?P<number>{_NUMBER})(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?", re.ASCII)
"""ASCII digits only, as Kubernetes parses them: `\\d` alone takes `１００m` (full-width) or Arabic-Indic digits."""

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_SUB_UNIT = ("n", "u", "m")


class QuantityError(ValueError):
    """A string that is not a quantity of the expected kind; the message says why."""


MAX_QUANTITY_TEXT = 64
"""Longest quantity string taken: far beyond any real one, short enough that parsing stays instant."""
MAX_MILLI_UNITS = 2**63 - 1
"""Kubernetes keeps a quantity as int64 milli-units (cores or bytes x 1000); larger ones it cannot represent."""
_MAX_EXPONENT = 40
"""|exponent| of a `1e<n>` suffix worth computing (checked before computing 10**n, so `1e999999999` is refused
at once): 10**40 is far past int64 milli-units, 10**-40 far below one milli-unit."""


def _parse(text: object, kind: str) -> tuple[Fraction, str]:
    if not isinstance(text, (str, int)) or isinstance(text, bool):
        raise QuantityError(f"must be a {kind} quantity string, not {type(text).__name__}")
    raw = str(text) if isinstance(text, str) or text.bit_length() < 256 else "9" * (MAX_QUANTITY_TEXT + 1)
    if len(raw) > MAX_QUANTITY_TEXT:
        raise QuantityError(f"not a Kubernetes {kind} quantity (longer than {MAX_QUANTITY_TEXT} characters)")
    match = _QUANTITY.fullmatch(raw)
    if match is None:
        hint = " (negative values are not allowed)" if raw.startswith("-") else ""
        raise QuantityError(f"not a Kubernetes {kind} quantity{hint}")
    suffix = match["suffix"] or ""
    number = Fraction(match["number"])
    if len(suffix) > 1 and suffix[0] in "eE" and suffix not in _BINARY:  # an exponent; "E" is exa, "Ei" exbi
        exponent = int(suffix[1:])  # at most 64 digits: cheap; 10**exponent is only computed once bounded
        if exponent > _MAX_EXPONENT:
            raise QuantityError(f"exponent {exponent} is too large: Kubernetes keeps quantities as int64 milli-units")
        if exponent < -_MAX_EXPONENT:
            return Fraction(0), suffix  # below any unit: refused as zero by the callers
        value = number * Fraction(10) ** exponent
    else:
        value = number * (_BINARY.get(suffix) or _DECIMAL[suffix])
    return value, suffix


@dataclass(frozen=True, order=False)
class Cpu:
    """A CPU quantity: `text` as written ("3000m", "3", "0.5"), `cores` as an exact number."""

    text: str
    cores: Fraction

    @classmethod
    def parse(cls, text: object) -> Cpu:
        cores, suffix = _parse(text, "CPU")
        if suffix in _BINARY:
            raise QuantityError(f"binary suffix {suffix!r} is for memory; write CPU as cores or millicores (3, 3000m)")
        if cores <= 0:
            raise QuantityError("must be greater than zero")
        if (cores * 1000).denominator != 1:
            raise QuantityError("finer than 1m, the smallest CPU unit Kubernetes keeps")
        return cls(str(text), cores)

    @classmethod
    def from_millicores(cls, millicores: int) -> Cpu:
        text = f"{millicores // 1000}" if millicores % 1000 == 0 else f"{millicores}m"
        return cls(text, Fraction(millicores, 1000))

    @property
    def millicores(self) -> int:
        return int(self.cores * 1000)

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, order=False)
class Memory:
    """A memory quantity: `text` as written ("16Gi"), `bytes` as an exact integer."""

    text: str
    bytes: int

    @classmethod
    def parse(cls, text: object) -> Memory:
        amount, suffix = _parse(text, "memory")
        if suffix in _SUB_UNIT:
            raise QuantityError(
                f"suffix {suffix!r} means 1/1000 of a byte here; did you mean {suffix.upper()}i or {suffix.upper()}?"
            )
        if amount <= 0:
            raise QuantityError("must be greater than zero")
        whole = -(-amount.numerator // amount.denominator)  # Kubernetes rounds memory up to whole bytes
        return cls(str(text), whole)

    @classmethod
    def from_bytes(cls, amount: int) -> Memory:
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            if amount % _BINARY[suffix] == 0:
                return cls(f"{amount // _BINARY[suffix]}{suffix}", amount)
        return cls(str(amount), amount)

    @property
    def gib(self) -> Fraction:
        return Fraction(self.bytes, 2**30)

    def __str__(self) -> str:
        return self.text


def format_gib(amount: Fraction | int | float) -> str:
    """Human-readable GiB for reports: whole numbers without decimals."""
    value = float(amount)
    return f"{value:.0f} GiB" if value == int(value) else f"{value:.1f} GiB"


def exact_decimal(value: float | Fraction) -> Fraction:
    """A config number as the exact decimal the user wrote (0.34, not the nearest binary float)."""
    return Fraction(str(value)) if isinstance(value, float) else Fraction(value)


Quantity = Cpu | Memory


def magnitude(quantity: Quantity) -> Fraction | int:
    """A comparable number: cores for CPU, bytes for memory."""
    return quantity.cores if isinstance(quantity, Cpu) else quantity.bytes


def parse_quantity(kind: Literal["cpu", "memory"], text: object) -> Quantity:
    """A CPU or memory quantity, parsed strictly (QuantityError says why not)."""
    return Cpu.parse(text) if kind == "cpu" else Memory.parse(text)
