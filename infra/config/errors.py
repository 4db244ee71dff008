"""Spec problems as one line each: the config key, the value, and what is wrong with it."""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ValidationError

CONFIG_ROOT = "platform"
"""The stack config key that holds the spec (`gpu-ci:platform`)."""

_MISSING = object()


def format_value(value: object) -> str:
    """Render a config value the way a user would recognise it in their YAML."""
    if value is _MISSING:
        return "<missing>"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {format_value(v)}" for k, v in value.items()) + "}"
    return str(value)


def key_path(*parts: str | int) -> str:
    return ".".join([CONFIG_ROOT, *(str(p) for p in parts)])


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the spec (an error) or worth knowing before `up` (a warning)."""

    path: str
    value: object
    reason: str
    severity: Literal["error", "warning"] = "error"

    def __str__(self) -> str:
        return f"{self.path}={format_value(self.value)}: {self.reason}"


def missing() -> object:
    """The value shown for a required key that is absent."""
    return _MISSING


class SpecError(ValueError):
    """The spec is invalid; str() is one line per problem."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def problems_from_validation(exc: ValidationError, raw: object) -> list[Problem]:
    """Turn pydantic's errors into key=value lines, with the value the user wrote."""
    problems = []
    for err in exc.errors(include_url=False):
        loc = _config_path(err["loc"], raw)
        kind = err["type"]
        value: object = err.get("input", _MISSING)
        reason = str(err["msg"]).removeprefix("Value error, ")
        if kind == "missing":
            value, reason = _MISSING, "required key is missing"
        elif kind == "extra_forbidden":
            reason = f"unknown key{_known_keys_hint(raw, loc)}"
        problems.append(Problem(key_path(*loc), value, reason))
    return problems


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
        path.append(part)
        node = (
            node.get(part)
            if isinstance(node, dict)
            else node[part]
            if isinstance(node, list) and isinstance(part, int) and part < len(node)
            else None
        )
    return path


def _known_keys_hint(raw: object, loc: list[str | int]) -> str:
    """Name the keys allowed next to a typo'd one, read from the model that rejected it."""
    from infra.config.platform import PlatformSpec  # noqa: PLC0415 - avoids an import cycle

    node: object = PlatformSpec
    for part in loc[:-1]:
        node = _strip_optional(node)
        if isinstance(node, type) and issubclass(node, BaseModel):
            field = node.model_fields.get(str(part))
            if field is None:
                return ""
            node = field.annotation
        elif typing.get_origin(node) is dict:
            node = typing.get_args(node)[1]
        else:
            return ""
    node = _strip_optional(node)
    if isinstance(node, type) and issubclass(node, BaseModel):
        return f" (allowed: {', '.join(sorted(node.model_fields))})"
    return ""


def _strip_optional(annotation: object) -> object:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        return args[0]
    return annotation
