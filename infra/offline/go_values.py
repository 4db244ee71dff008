"""Plain scalars as the Pulumi CLI types them (Go, `gopkg.in/yaml.v3`), and values as it hands them on.

yaml.v3 types an unquoted scalar by YAML 1.2's core schema as it implements it (`resolve.go`), each rule checked
against `pulumi config --json` (tests/engine/test_engine_stack_files.py):
- null: empty, `~`, `null`, `Null`, `NULL`; booleans: `true`/`false` in three cases (`yes`, `on` are text);
- integers: Go's `strconv.ParseInt(s, 0, 64)`: decimal, `0x`/`0o`/`0b` in either case, a leading `0` octal
  (`0755` is 493); floats: `1e3`, `.5`, `1.`; a number is its value (`1.0` arrives as `1`).
Where a form reads otherwise to another YAML reader, or to Go in a way no setting means, it is refused (the
offline tools would describe another platform than the one deployed): a number holding `_` (Go drops every
underscore, `-_0` is 0, but reads `._34` as text), an integer beyond 64 bits, a float beyond float64 (text to
Go), infinities and NaN (no JSON spelling), dates (`2026-1-3` is Go's `2026-01-03 00:00:00 +0000 UTC`), and
times (`8:00`: base 60 to YAML 1.1 readers, text to the CLI).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

Scalar = str | int | float | bool | None

NULLS = frozenset(("", "~", "null", "Null", "NULL"))
BOOLEANS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_SPECIAL_FLOATS = re.compile(r"^(?:[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")
_INT = re.compile(r"^[-+]?(?:0[bB][01]+|0[oO][0-7]+|0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)$")
"""What Go's `strconv.ParseInt(s, 0, 64)` parses (its range aside)."""
_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
"""yaml.v3's `yamlStyleFloat`; a scalar starting with `.` is Go's ParseFloat's, which reads the same there."""
_DATE = re.compile(r"^[0-9]{4}-[0-9]")
"""The start of what yaml.v3 tries as a timestamp (`2026-1-3`, `2026-01-03 10:00:00`)."""
_BASE_60 = re.compile(r"^[-+]?(?:[1-9][0-9_]*(?::[0-5]?[0-9])+|[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*)$")
"""What YAML 1.1 reads as a sexagesimal integer (`8:00`) or float (`1:30.5`): text to the CLI."""
_LONG_NUMBER = re.compile(r"^[-+]?\.?[0-9][0-9_]*(?:[.eE]|\Z)")
"""A long plain scalar that would be a number: its digits up to a dot, an exponent or its end."""
INT64 = (-(2**63), 2**63 - 1)
MAX_NUMBER_TEXT = 100
"""Characters of a number worth converting (a 5,000-digit integer is refused, not parsed)."""
_NUMBER_START = frozenset("-+.0123456789")


class PlainScalarError(ValueError):
    """A plain scalar outside the subset; str() says what it is and what to write instead, after the scalar
    (`1e400 is a number beyond ...`), or alone where `alone` (the scalar is too long to show)."""

    def __init__(self, reason: str, alone: bool = False) -> None:
        super().__init__(reason)
        self.alone = alone


def resolve_plain(text: str) -> Scalar:
    """The value yaml.v3 gives the plain scalar `text`, or PlainScalarError where the subset refuses its form."""
    if text in NULLS:
        return None
    if text in BOOLEANS:
        return BOOLEANS[text]
    if _SPECIAL_FLOATS.match(text):
        raise PlainScalarError("is no number the Pulumi CLI can pass on (JSON has none)")
    if not text or text[0] not in _NUMBER_START:
        return text
    if len(text) > MAX_NUMBER_TEXT and _LONG_NUMBER.match(text):
        raise PlainScalarError(f"a number of {len(text)} characters", alone=True)
    if _DATE.match(text):
        raise PlainScalarError("unquoted is a date to YAML (the Pulumi CLI hands Go's time text): quote it")
    if _BASE_60.match(text):
        raise PlainScalarError("unquoted is a base-60 number to YAML 1.1 readers and text to Pulumi: quote it")
    if "_" in text:
        if _number(text.replace("_", "")) is not None:
            raise PlainScalarError("is a number with `_` in it, which YAML readers read apart: write it without `_`")
        return text
    number = _number(text)
    return text if number is None else number


def _number(text: str) -> int | float | None:
    """`text` as yaml.v3's number (an integer, else a float), None where it is none; PlainScalarError where the
    number is one the subset does not take (beyond 64 bits, beyond float64)."""
    if len(text) > MAX_NUMBER_TEXT:
        return None
    if _INT.match(text):
        value = _go_int(text)
        if not INT64[0] <= value <= INT64[1]:
            raise PlainScalarError("is an integer beyond 64 bits, which YAML readers read apart")
        return value
    if _FLOAT.match(text):
        real = float(text)
        if math.isinf(real):
            raise PlainScalarError("is a number beyond a 64-bit float (text to the Pulumi CLI): quote it or write less")
        if real == 0 and any(c in "123456789" for c in text.lower().split("e")[0]):
            raise PlainScalarError("is a number too small for a 64-bit float: write 0")
        return real
    return None


def _go_int(text: str) -> int:
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-").lower()
    for prefix, base in (("0b", 2), ("0o", 8), ("0x", 16)):
        if digits.startswith(prefix):
            return sign * int(digits[2:], base)
    return sign * int(digits, 8 if len(digits) > 1 and digits.startswith("0") else 10)


def handed(value: int | float) -> int | float:
    """A number as the program gets it through Go's JSON: a whole float under 1e21 is an integer (`1.0` is 1)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(Decimal(repr(value)))
    return value


def go_json_number(value: int | float) -> str:
    """A number as Go's encoding/json writes it (the CLI hands a top-level number as this text): shortest digits,
    positional from 1e-6 to 1e21, else `1e-7` / `1e+21` (no zero-padded exponent, unlike Python's `1e-07`)."""
    value = handed(value)
    if isinstance(value, int):
        return str(value)
    shortest = Decimal(repr(value))
    if 1e-6 <= abs(value) < 1e21:
        return format(shortest, "f")
    sign, digits, exponent = shortest.as_tuple()
    assert isinstance(exponent, int)  # finite: infinities and NaN are refused when read
    mantissa = "".join(map(str, digits)).rstrip("0") or "0"
    power = exponent + len(digits) - 1
    shown = mantissa[0] + (f".{mantissa[1:]}" if len(mantissa) > 1 else "")
    return f"{'-' if sign else ''}{shown}e{'+' if power >= 0 else '-'}{abs(power):d}"


def go_key(value: Scalar) -> str:
    """A plain key as the CLI names it (Go's `%v`): text as written, an integer in decimal (`0x10` is `16`), a
    boolean `true`/`false`; PlainScalarError for null and floats, whose `%v` (`<nil>`, `1e+06`, `+Inf`) no reader
    of the file would guess."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    what = "null" if value is None else "a float"
    raise PlainScalarError(f"is {what} as a key, which the Pulumi CLI names by Go's formatting: quote it")
