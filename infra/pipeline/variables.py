"""CI/CD variables in keywords, expanded the way each side expands them (pure: no Pulumi import).

- **GitLab, in `tags:`** (`ExpandVariables.expand_existing` when it creates the job): one pass; `$NAME`,
  `${NAME}` and `%NAME%` of a variable the job has (its own and `parallel: matrix` ones, the global ones it
  inherits, the project's CI/CD variables, which win over the YAML ones, the predefined ones) are replaced by
  that variable's value *as written*: a variable defined from another variable is not expanded again
  (gitlab#407129), so the tag stays `$OTHER` and no runner holds it. A name the job does not have stays as
  written.
- **The runner, in `image:`, `services:` and `KUBERNETES_*` overrides**: `$NAME` and `${NAME}` from the job's
  variables, whose own values the runner has expanded already (`expand: false` ones excepted); repeated here
  until nothing changes (5 passes at most).

Values check-ci cannot know (a predefined variable, a secret, a variable set in GitLab's settings) leave the
reference in place: the caller says what is "only known to GitLab".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

GITLAB_REFERENCE = re.compile(
    r"\$(?P<plain>[A-Za-z_][A-Za-z0-9_]*)|\$\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)\}|%(?P<windows>[A-Za-z_][A-Za-z0-9_]*)%"
)
"""GitLab's `ExpandVariables::VARIABLES_REGEXP`."""
RUNNER_REFERENCE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
RUNNER_PASSES = 5
MAX_EXPANDED = 1 << 16
"""Characters a value may grow to (`A: $A$A$A` doubles each pass): past them it is left unexpanded."""

KNOWN_SHAPES = {
    "CI_COMMIT_SHA": "0123456789abcdef0123456789abcdef01234567",
    "CI_COMMIT_SHORT_SHA": "01234567",
    "CI_PIPELINE_ID": "1",
    "CI_PIPELINE_IID": "1",
    "CI_JOB_ID": "1",
}
"""Predefined variables whose every value has one shape (hex digits, a number: no `/`, `:` or `@`): an image
named with them is checked with one such value (`…/training:${CI_COMMIT_SHA}`)."""


def value_text(raw: Any) -> str | None:
    """A variable's value as a string, or None when GitLab alone knows it (or the value is no value: a list)."""
    if isinstance(raw, dict):
        raw = raw.get("value")
    if raw is None or isinstance(raw, (list, dict)):
        return None
    if isinstance(raw, bool):
        return str(raw).lower()
    return str(raw)


def is_raw(raw: Any) -> bool:
    """`{value: ..., expand: false}`: its `$` are kept as written."""
    return isinstance(raw, dict) and raw.get("expand") is False


@dataclass
class TagExpansion:
    """One tag as GitLab expands it."""

    tag: str
    unknown: list[str] = field(default_factory=list)
    """Names the job may only have in GitLab (predefined, settings, secrets): the tag is not known."""
    nested: list[tuple[str, str]] = field(default_factory=list)
    """(name, value) whose value refers to another variable: the tag keeps that reference literally."""


class _TooLongError(Exception):
    pass


class _Growth:
    """Stops a substitution whose result would pass `MAX_EXPANDED` characters (1,000 `$A` of 1 MiB each)."""

    def __init__(self, start: int) -> None:
        self.size = start

    def add(self, text: str) -> str:
        self.size += len(text)
        if self.size > MAX_EXPANDED:
            raise _TooLongError
        return text


def expand_tag(tag: str, variables: dict[str, str | None]) -> TagExpansion:
    """`tag` after GitLab's one pass; `variables` maps a name to its value, None for a value GitLab alone knows.
    A tag that would grow past `MAX_EXPANDED` characters is left as written, its names unknown."""
    expansion = TagExpansion(tag)
    growth = _Growth(len(tag))

    def substitute(match: re.Match[str]) -> str:
        name = match["plain"] or match["braced"] or match["windows"]
        if name not in variables or variables[name] is None:
            expansion.unknown.append(name)
            return match[0]
        value = growth.add(variables[name] or "")
        if GITLAB_REFERENCE.search(value):
            expansion.nested.append((name, value))
        return value

    try:
        expansion.tag = GITLAB_REFERENCE.sub(substitute, tag)
    except _TooLongError:
        first = GITLAB_REFERENCE.search(tag)
        return TagExpansion(tag, unknown=[first["plain"] or first["braced"] or first["windows"]] if first else [])
    return expansion


def expand_for_runner(raw: Any, variables: dict[str, Any], passes: int = RUNNER_PASSES) -> str | None:
    """The value with `$NAME` / `${NAME}` replaced from the job's variables, as the runner sees it (not for a
    variable declared `expand: false`); None when the value is unknown or no value."""
    value = value_text(raw)
    if value is None or is_raw(raw):
        return value
    return expand_text(value, variables, passes)


def expand_text(value: str, variables: dict[str, Any], passes: int = RUNNER_PASSES) -> str:
    """`value` expanded; left as it is after the last pass that stays within `MAX_EXPANDED` characters."""
    for _ in range(passes):
        growth = _Growth(len(value))

        def substitute(match: re.Match[str], growth: _Growth = growth) -> str:
            name = match[1] or match[2]
            known = value_text(variables[name]) if name in variables else None
            return match[0] if known is None else growth.add(known)

        try:
            expanded = RUNNER_REFERENCE.sub(substitute, value)
        except _TooLongError:
            break
        if expanded == value:
            break
        value = expanded
    return value
