"""Stack-file YAML read as the Pulumi CLI reads it, not as PyYAML's YAML 1.1 would.

The CLI (Go, `gopkg.in/yaml.v3`) types a plain scalar by YAML 1.2's core rules, then hands each config value to
the program as a string, an object as JSON. Where that differs from PyYAML, the offline loader follows the CLI
(tests/engine/test_engine_stack_files.py runs both on every stack file of the corpus):
- only `true`/`false` (`True`, `TRUE`, ...) are booleans: `yes`, `no`, `on`, `off` are text;
- integers are decimal, `0x`, `0o`, `0b` (either case: `0X1F` is 31) or a leading `0` (octal), underscores
  ignored; floats include
  `1e3` and `.5`; an integer beyond 64 bits becomes a float, a float beyond float64 stays text (`1e999999999`);
- JSON numbers are written as Go writes them: a whole float under 1e21 is an integer (`1.0` arrives as `1`),
  and infinities or NaN are refused (JSON has no spelling for them; the CLI fails the whole file);
- a key with no value arrives as the empty string.
Times (`8:00`, base 60 in YAML 1.1) and dates stay refused by the loader (stack_config.py): the CLI keeps them as
text or turns a date into Go's time string, which no setting takes, so a reader is told to quote them.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any

import yaml

from infra.documents import YAML_LOADER

BOOL_TAG = "tag:yaml.org,2002:bool"
INT_TAG = "tag:yaml.org,2002:int"
FLOAT_TAG = "tag:yaml.org,2002:float"

_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT = re.compile(
    r"^[-+]?(?:0[bB]_*[01][01_]*|0[oO]_*[0-7][0-7_]*|0[xX]_*[0-9a-fA-F][0-9a-fA-F_]*|0[0-7_]*|[1-9][0-9_]*)$"
)
"""Go's `strconv.ParseInt(s, 0, 64)`, which yaml.v3 tries first: any case of prefix (`0X1F` is 31), underscores."""
_FLOAT = re.compile(
    r"^[-+]?(?:\.[0-9_]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?$"
    r"|^[-+]?\.(?:inf|Inf|INF)$|^\.(?:nan|NaN|NAN)$"
)

_INT64 = (-(2**63), 2**63 - 1)
_WHOLE_AS_INTEGER = 1e21
"""Go's encoding/json writes a float64 in exponent form from 1e21 on, else as digits (an integer when whole)."""


class CliNumberError(ValueError):
    """A number the CLI cannot hand to the program (infinity, NaN)."""


def _resolvers() -> dict[Any, list[tuple[str, re.Pattern[str]]]]:
    kept = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag not in (BOOL_TAG, INT_TAG, FLOAT_TAG)]
        for first, resolvers in YAML_LOADER.yaml_implicit_resolvers.items()
    }
    for tag, regexp, firsts in (
        (BOOL_TAG, _BOOL, "tTfF"),
        (INT_TAG, _INT, "-+0123456789"),
        (FLOAT_TAG, _FLOAT, "-+0123456789."),
    ):
        for first in firsts:
            kept.setdefault(first, []).append((tag, regexp))
    return kept


class CliYamlLoader(YAML_LOADER):  # type: ignore[misc,valid-type]
    """The safe loader with YAML 1.2 core typing of plain scalars (booleans, integers, floats), and mapping keys
    built as the text JSON carries them."""

    yaml_implicit_resolvers = _resolvers()

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[str, Any]:
        """Keys as text while the mapping is built (`true` is `"true"`, `1` is `"1"`, as in the CLI's JSON): as
        Python keys, `true`, `1` and `1.0` would be one key and keep only the last value."""
        self.flatten_mapping(node)
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            mapping[key if isinstance(key, str) else json.dumps(key)] = self.construct_object(value_node, deep=deep)
        return mapping


def construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = node.value.replace("_", "")
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-").lower()
    for prefix, base in (("0b", 2), ("0o", 8), ("0x", 16)):
        if digits.startswith(prefix):
            return sign * int(digits[2:], base)
    return sign * int(digits, 8 if len(digits) > 1 and digits.startswith("0") else 10)


_INFINITY = re.compile(r"^[-+]?\.(?:inf|Inf|INF)$")


def construct_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float | str:
    """A float, or the text where it overflows (`1e999999999`): Go's ParseFloat fails there and yaml.v3 keeps it."""
    value = yaml.SafeLoader.construct_yaml_float(loader, node)
    return node.value if math.isinf(value) and not _INFINITY.match(node.value) else value


CliYamlLoader.add_constructor(INT_TAG, construct_int)
CliYamlLoader.add_constructor(FLOAT_TAG, construct_float)


def as_the_cli_hands(value: Any, where: str) -> Any:
    """`value` (read by CliYamlLoader) as the program receives it from the CLI, through Go's JSON."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value if _INT64[0] <= value <= _INT64[1] else as_the_cli_hands(float(value), where)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CliNumberError(f"{where}: {value} is no number the Pulumi CLI can pass on (JSON has none)")
        if value.is_integer() and abs(value) < _WHOLE_AS_INTEGER:
            return int(Decimal(repr(value)))  # Go's shortest digits: 2**65 arrives as 36893488147419103000
        return value
    if isinstance(value, dict):
        return {k: as_the_cli_hands(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [as_the_cli_hands(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return value
