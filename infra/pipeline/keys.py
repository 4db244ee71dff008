"""Top-level keys YAML reads as something other than a string, as GitLab names them (pure: no Pulumi import).

Psych, GitLab's YAML reader, makes `5:` an Integer, `3.10:` and `.5:` the Floats 3.1 and 0.5, `yes:` true, `~:` nil
and refuses a date (`Tried to load unspecified class: Date`, GitLab's loader permits no Date). GitLab symbolises
string keys only (`deep_symbolize_keys`), and its job entry validates a job's name as a Symbol (`Entry::Processable`:
`validates :name, type: Symbol`), so such a key is a job GitLab refuses ("name should be a symbol"): the pipeline
does not run. check-ci says so (`misread_key`), and still checks the job under the name Ruby prints for the key
(`job_key_name`: `3.1`, `0.5`, `true`), in case an instance takes it.
"""

from __future__ import annotations

import datetime
import math
from typing import Any


def job_key_name(key: Any) -> Any:
    """A number or a boolean as Ruby prints it (`to_s`): the job's name; any other key as read."""
    if isinstance(key, bool):
        return str(key).lower()
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return ruby_float(key)
    return key


def misread_key(key: Any) -> str | None:
    """What YAML read a top-level key as, when it is no string (GitLab refuses the pipeline); None for a string."""
    if isinstance(key, str):
        return None
    if isinstance(key, bool):
        return f"the boolean {str(key).lower()}"
    if isinstance(key, int | float):
        return f"the number {job_key_name(key)}"
    if isinstance(key, datetime.date):
        return f"the date {key.isoformat()} (GitLab's YAML loader refuses dates)"
    if key is None:
        return "null (no name)"
    return "no name"


def ruby_float(value: float) -> str:
    """Ruby's `Float#to_s`: the shortest digits that read back as `value` (as Python's `repr`), in scientific form
    from 1.0e+15 up and below 0.0001 (`1.0e-05`), always with a digit after the point."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        return f"{mantissa if '.' in mantissa else mantissa + '.0'}e{exponent}"
    sign, whole = ("-", text[1:]) if text.startswith("-") else ("", text)
    digits = whole.split(".")[0]
    if len(digits) <= 15:
        return text
    significant = digits.rstrip("0")
    return f"{sign}{significant[0]}.{significant[1:] or '0'}e+{len(digits) - 1}"
