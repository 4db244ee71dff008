"""Spec problems as one line each: the config key, the value, and what is wrong with it."""

from __future__ import annotations

import datetime
import types
import typing
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ValidationError

from infra.config.credentials import credential_name, credential_value, redact_credentials
from infra.config.suggest import closest
from infra.untrusted import first_hidden, printable, quoted

CONFIG_ROOT = "platform"
"""The stack config key that holds the spec (`gpu-ci:platform`)."""

_MISSING = object()
_ELIDED = object()


MAX_SHOWN = 200
"""Characters of a value an error line quotes at most: a 9 MB value must not become a 9 MB line."""
MAX_KEY_PART = 64
"""Characters of one key of a path (a pool or variable name) an error line quotes at most."""


MAX_PROBLEMS = 50
"""Problems listed at most: past that, the rest are counted in one last line."""


class Redacted(str):
    """A value shown as `<redacted>`: a credential typed in clear must not be echoed into a log or MR note."""

    __slots__ = ()


def format_value(value: object) -> str:
    """Render a config value the way a user would recognise it in their YAML, at most ~MAX_SHOWN characters."""
    text = _format(value, MAX_SHOWN)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


def _format(value: object, budget: int) -> str:  # noqa: PLR0911 - one return per kind of value
    """format_value without the final cut; never builds much more than `budget` characters."""
    if value is _MISSING:
        return "<missing>"
    if value is _ELIDED:
        return "…"
    if value is None:
        return "null"
    if isinstance(value, Redacted):
        return "<redacted>"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return quoted(value, budget + 1)
    if isinstance(value, int) and value.bit_length() > 256:
        return f"<an integer of about {int(value.bit_length() * 0.30103)} digits>"
    if isinstance(value, (list, tuple, dict)):
        items = value.items() if isinstance(value, dict) else value
        parts: list[str] = []
        used = 0
        for item in items:
            if used > budget:
                parts.append("…")
                break
            if isinstance(value, dict):
                key, val = item
                part = f"{_plain(key, budget)}: {_format(val, budget)}"
            else:
                part = _format(item, budget)
            parts.append(part)
            used += len(part) + 2
        inner = ", ".join(parts)
        return "{" + inner + "}" if isinstance(value, dict) else "[" + inner + "]"
    return str(value)[: budget + 1]


def _plain(value: object, budget: int) -> str:
    """A key as written (no quotes), at most `budget` characters."""
    text = value if isinstance(value, str) and first_hidden(value) is None else _format(value, budget)
    return text if len(text) <= budget else text[: budget - 1] + "…"


MAX_RAW_NODES = 200_000
"""Values (keys, items, scalars) a platform object may hold before it is validated at all."""
MAX_INT_BITS = 256
"""No setting takes a number this large; Python refuses to even print one of 4300 digits or more."""


def raw_problems(raw: object) -> list[Problem]:
    """Before validation: numbers too large for any setting (a 5000-digit integer breaks str()) and objects too
    large to be a stack config. Iterative, so nesting depth cannot overflow the stack."""
    problems: list[Problem] = []
    stack: list[tuple[object, tuple[str | int, ...]]] = [(raw, ())]
    seen = 0
    while stack and len(problems) < MAX_PROBLEMS:
        node, path = stack.pop()
        seen += 1
        if seen > MAX_RAW_NODES:
            return [Problem(CONFIG_ROOT, _ELIDED, f"holds more than {MAX_RAW_NODES} values, not a stack config")]
        if isinstance(node, int) and not isinstance(node, bool) and node.bit_length() > MAX_INT_BITS:
            problems.append(Problem(key_path(*path), node, "is too large a number for any setting"))
        elif isinstance(node, str) and (what := credential_value(node[:MAX_CREDENTIAL_SCAN])):
            if not _is_variable(path):  # a variable's value has its own rule, which says how to make it a secret
                problems.append(Problem(key_path(*path), Redacted(node), _in_clear(what)))
        elif what := _foreign(node):
            problems.append(_foreign_problem(key_path(*path), node, what))
        elif isinstance(node, dict):
            stack.extend(
                (value, (*path, key if isinstance(key, (str, int)) else str(key))) for key, value in node.items()
            )
            stack.extend((key, path) for key in node if isinstance(key, int) and not isinstance(key, bool))
            problems.extend(
                Problem(key_path(*path), Redacted(key), _in_clear(what))
                for key in node
                if isinstance(key, str) and (what := credential_value(key[:MAX_CREDENTIAL_SCAN]))
            )
            problems.extend(_foreign_problem(key_path(*path), key, what) for key in node if (what := _foreign(key)))
        elif isinstance(node, (list, tuple)):
            stack.extend((value, (*path, index)) for index, value in enumerate(node))
    return problems


def _foreign(value: object) -> str | None:
    """What `value` is when it is none of JSON's types (which is all a stack config holds, as Pulumi hands it
    over), for the line that refuses it; None for JSON's own."""
    if value is None or isinstance(value, (str, int, float, list, dict)):
        return None
    if isinstance(value, (bytes, bytearray)):
        return "bytes (YAML's !!binary)"
    if isinstance(value, (set, frozenset)):
        return "a set (YAML's !!set)"
    if isinstance(value, (datetime.date, datetime.time)):
        return "a date or time (YAML's !!timestamp)"
    if isinstance(value, tuple):
        return "a pair (YAML's !!omap or !!pairs)"
    return f"a {type(value).__name__}"


def not_plain_data(value: object) -> str | None:
    """What the first value in `value` (keys included) that is none of JSON's types is, or None."""
    pending = [value]
    while pending:
        node = pending.pop()
        if what := _foreign(node):
            return what
        if isinstance(node, dict):
            pending += [*node.keys(), *node.values()]
        elif isinstance(node, list):
            pending += node
    return None


def _foreign_problem(path: str, value: object, what: str) -> Problem:
    """`value` of no JSON type refused, never shown as it is: bytes are read as text for the credential scan,
    since base64 hides a token from it (and the bytes are never shown, which would show the token encoded)."""
    if isinstance(value, (bytes, bytearray)):
        text = bytes(value[:MAX_CREDENTIAL_SCAN]).decode("utf-8", "replace")
        if found := credential_value(text):
            return Problem(path, Redacted(text), _in_clear(f"{what} holding {found}"))
    return Problem(path, _ELIDED, f"is {what}, which no setting takes: write the value as text, a number or a list")


MAX_CREDENTIAL_SCAN = 4096
"""Characters of a string searched for a credential's shape (every shape is far shorter)."""


def _is_variable(path: tuple[str | int, ...]) -> bool:
    """`ci.variables.<name>...` or `profiles.<p>.variables.<name>`: checked by the variables' own rule."""
    return path[:2] == ("ci", "variables") or (len(path) > 2 and path[0] == "profiles" and path[2] == "variables")


def _in_clear(what: str) -> str:
    verb = "is" if what.startswith("bytes") else "looks like"
    return (
        f"{verb} {what}: the stack file is committed in clear and plan prints it; a credential belongs in a "
        "stack secret (`pulumi config set --secret <key>`), never in the platform spec"
    )


def key_path(*parts: str | int) -> str:
    """`platform.<part>.<part>`, each part cut to MAX_KEY_PART characters (a key can be as hostile as a value)."""
    return ".".join([CONFIG_ROOT, *(_plain(p, MAX_KEY_PART) for p in parts)])


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the spec (an error) or worth knowing before `up` (a warning)."""

    path: str
    value: object
    reason: str
    severity: Literal["error", "warning"] = "error"
    policy: str | None = None
    """The policy-pack rule whose verdict this is, said at the spec's key (`policy/policies/definitions.py`): the
    pack refuses what it says, with its default config. Not part of the line."""

    def __str__(self) -> str:
        reason = printable(self.reason, 2 * MAX_SHOWN - 1)  # a name with a newline, quoted, cannot break the line
        return redact_credentials(f"{self.path}={format_value(self.value)}: {reason}")


def missing() -> object:
    """The value shown for a required key that is absent."""
    return _MISSING


class SpecError(ValueError):
    """The spec is invalid; str() is one line per problem."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


_BOUND_ERRORS = ("less_than_equal", "less_than", "too_long", "string_too_long")
"""pydantic errors of a stated upper bound (a number, a count, a length): the line says where it is explained."""


def problems_from_validation(exc: ValidationError, raw: object, model: type[BaseModel]) -> list[Problem]:
    """Turn pydantic's errors into key=value lines, with the value the user wrote; `model` is the one that
    validated `raw` (its fields name the keys allowed beside a typo)."""
    problems = []
    errors = exc.errors(include_url=False)
    for err in errors[:MAX_PROBLEMS]:
        loc = _config_path(err["loc"], raw)
        kind = err["type"]
        value: object = err.get("input", _MISSING)
        reason = str(err["msg"]).removeprefix("Value error, ")
        if kind == "missing":
            value, reason = _MISSING, "required key is missing"
        elif kind == "extra_forbidden":
            reason = f"unknown key{_known_keys_hint(model, loc)}"
            if loc and credential_name(str(loc[-1])) and isinstance(value, str):
                value = Redacted(value)
        elif kind in _BOUND_ERRORS:
            reason += " (gpu-ci's limit: docs/config-limits.md)"
        elif kind == "string_type" and (why := not_text(value, loc)):
            reason = why
            if loc and loc[-1] == "[key]":
                loc = loc[:-1]
        problems.append(Problem(key_path(*loc), value, reason))
    if len(errors) > MAX_PROBLEMS:
        problems.append(Problem(CONFIG_ROOT, _ELIDED, f"and {len(errors) - MAX_PROBLEMS} more problems not shown"))
    return problems


_YAML_NUMBERS = "unquoted, YAML and Pulumi read 1.30 as the number 1.3, 0755 as 493 and 1_000 as 1000"


def not_text(value: object, loc: list[str | int]) -> str | None:
    """Why a number, a boolean or null stands where text belongs, and how to write it as text; None for any
    other value. Never converted: the digits the user typed (`1.30`, `0755`) are already lost."""
    key = next((part for part in reversed(loc) if isinstance(part, str) and part != "[key]"), "key")
    if loc and loc[-1] == "[key]":
        return f'is a number as a key, where a name belongs: quote it ("{value}":); {_YAML_NUMBERS}'
    if isinstance(value, bool):
        return (
            f'is a boolean, and this key takes text: quote it ({key}: "..."); unquoted, YAML reads yes, no, on, off, '
            "true and false as booleans"
        )
    if isinstance(value, (int, float)):
        return f'is a number, and this key takes text: quote it as you typed it ({key}: "..."); {_YAML_NUMBERS}'
    if value is None:
        return (
            "is null, and this key takes text: quote it, or leave the key out; unquoted, YAML reads ~ and null as null"
        )
    return None


def _config_path(loc: tuple[str | int, ...], raw: object) -> list[str | int]:
    """The error's location as config keys: pydantic adds steps that are not keys (validator names, the tag of
    a discriminated union such as `time-slicing`); a step that is not a key of the mapping it is in is dropped,
    unless it is the last (a missing or unknown key)."""
    path: list[str | int] = []
    node = raw
    for index, part in enumerate(loc):
        last = index == len(loc) - 1
        if isinstance(part, str) and part.startswith("function-"):
            continue
        if isinstance(node, dict) and part not in node and not last:
            continue
        if last and isinstance(part, str) and isinstance(node, (str, int, float)):  # `NAME: 1` read as {value: 1}
            continue
        path.append(part)
        node = (
            node.get(part)
            if isinstance(node, dict)
            else node[part]
            if isinstance(node, list) and isinstance(part, int) and part < len(node)
            else None
        )
    return path


def _known_keys_hint(model: type[BaseModel], loc: list[str | int]) -> str:
    """The key a typo'd one most likely means, else the keys allowed beside it, read from the model that rejected
    it (every member's, at a union such as gpu_sharing's strategies)."""
    nodes: list[object] = [model]
    for part in loc[:-1]:
        nodes = [step for node in nodes for member in _members(node) if (step := _step(member, part)) is not None]
    models = [m for node in nodes for m in _members(node) if isinstance(m, type) and issubclass(m, BaseModel)]
    if not models:
        return ""
    fields = sorted({name for m in models for name in m.model_fields})
    if suggestion := closest(str(loc[-1]), fields):
        return f"; did you mean {suggestion}?"
    return f" (allowed: {', '.join(fields)})"


def _members(annotation: object) -> list[object]:
    """The types an annotation stands for: a union's members (None dropped), an Annotated's type, else itself."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [m for a in typing.get_args(annotation) if a is not type(None) for m in _members(a)]
    return [annotation]


def _step(node: object, part: str | int) -> object | None:
    """The annotation one key (or index) below `node`; None where `node` has no such key."""
    if isinstance(node, type) and issubclass(node, BaseModel):
        field = node.model_fields.get(str(part))
        return None if field is None else field.annotation
    if typing.get_origin(node) is dict:
        return typing.get_args(node)[1]
    if typing.get_origin(node) in (list, tuple) and isinstance(part, int):
        return typing.get_args(node)[0]
    return None
