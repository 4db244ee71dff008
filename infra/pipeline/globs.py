"""Globs as GitLab and gitlab-runner match them, in time linear in the name matched (pure).

- `IncludePattern`: a wildcard `include: local:`. GitLab escapes the path, turns `**` into `.*?` and `*` into
  `[^/]*?`, and matches every file path of the repository with RE2 (no backtracking). A backtracking engine
  takes exponential time on `**a**a**a…b`; here the pattern is a bit-parallel automaton run once over each path.
- `RunnerGlob`: gitlab-runner's `allowed_images`/`allowed_services` check, `doublestar.Match(pattern, image)`:
  `*` and `?` within one `/`-separated segment, `**` as a whole segment for any number of segments (`a/**/b`,
  `**/b`, `a/**`; elsewhere it is a `*`), `[...]` classes (`!` or `^` negates), `{a,b}` alternatives and `\\`
  escapes. A malformed pattern matches nothing (the runner ignores its error). Simulated as an automaton too:
  the image name comes from the pipeline, which a hostile user writes.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_ALTERNATIVES = 256
"""`{a,b}` groups multiply: a runner pattern that expands to more alternatives is not modelled."""


class GlobError(ValueError):
    """A runner pattern check-ci does not model (too many `{}` alternatives)."""


# --- GitLab's wildcard includes -----------------------------------------------------------------------------


class IncludePattern:
    """A GitLab `include: local:` wildcard, compiled once and matched against repository paths."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.literals: dict[str, int] = {}
        self.any_mask = self.segment_mask = 0
        position = 0
        # A run of two or more `*` holds a `**` (`.*?[^/]*?` is `.*`): runs are never adjacent, so the empty
        # match of a star is one shift.
        for part in re.split(r"(\*+)", pattern):
            if part.startswith("*"):
                if len(part) > 1:
                    self.any_mask |= 1 << position
                else:
                    self.segment_mask |= 1 << position
                position += 1
                continue
            for char in part:
                self.literals[char] = self.literals.get(char, 0) | 1 << position
                position += 1
        self.stars = self.any_mask | self.segment_mask
        self.accept = 1 << position
        self.start = self._closure(1)
        head, _, _ = pattern.partition("*")
        self.prefix = head
        self.suffix = pattern.rpartition("*")[2] if "*" in pattern else pattern
        self.least = len(pattern.replace("*", ""))

    def _closure(self, state: int) -> int:
        return state | (state & self.stars) << 1

    @property
    def folder(self) -> str:
        """The folder every match lies in (the literal part before the first wildcard, up to its last `/`)."""
        return self.prefix.rpartition("/")[0]

    def matches(self, path: str) -> bool:
        if len(path) < self.least or not path.startswith(self.prefix) or not path.endswith(self.suffix):
            return False
        state, literals, any_mask, stars = self.start, self.literals, self.any_mask, self.stars
        for char in path:
            kept = state & (any_mask if char == "/" else stars)
            state = (state & literals.get(char, 0)) << 1 | kept
            if not state:
                return False
            state |= (state & stars) << 1
        return bool(state & self.accept)


# --- gitlab-runner's doublestar globs ------------------------------------------------------------------------


Test = Callable[[str], bool]


def _any(_: str) -> bool:
    return True


def _not_slash(char: str) -> bool:
    return char != "/"


def _is(expected: str) -> Test:
    return lambda char: char == expected


@dataclass
class _Automaton:
    """States with at most one consuming test each (`tests[i]` leads to `targets[i]`) and empty moves."""

    tests: list[Test | None] = field(default_factory=list)
    targets: list[int] = field(default_factory=list)
    empty: list[list[int]] = field(default_factory=list)

    def state(self, test: Test | None = None, target: int | None = None) -> int:
        index = len(self.tests)
        self.tests.append(test)
        self.targets.append(index + 1 if target is None else target)
        self.empty.append([])
        return index

    def closures(self) -> list[int]:
        """Per state, the states its empty moves reach (itself included), as a bit set."""
        result = []
        for start in range(len(self.tests)):
            seen, todo = 1 << start, [start]
            while todo:
                for nxt in self.empty[todo.pop()]:
                    if not seen >> nxt & 1:
                        seen |= 1 << nxt
                        todo.append(nxt)
            result.append(seen)
        return result


class RunnerGlob:
    """One `allowed_images` pattern as gitlab-runner matches it (`doublestar.Match`)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.automata = [a for a in (_compile(p) for p in _expand_braces(pattern)) if a is not None]

    def matches(self, name: str) -> bool:
        return any(_run(automaton, name) for automaton in self.automata)


_Compiled = tuple[list[Test | None], list[int], list[int], int]


def _run(compiled: _Compiled, name: str) -> bool:
    tests, targets, closures, accept = compiled
    current = closures[0]
    for char in name:
        following, bits = 0, current
        while bits:
            low = bits & -bits
            index = low.bit_length() - 1
            bits ^= low
            test = tests[index]
            if test is not None and test(char):
                following |= closures[targets[index]]
        if not following:
            return False
        current = following
    return bool(current >> accept & 1)


def _compile(pattern: str) -> _Compiled | None:
    """A brace-free doublestar pattern as an automaton; None when malformed (it then matches nothing)."""
    automaton = _Automaton()
    index, segment_start = 0, True
    while index < len(pattern):
        char = pattern[index]
        if char == "*":
            index, segment_start = _stars(automaton, pattern, index, segment_start)
            continue
        if char == "?":
            automaton.state(_not_slash)
            index += 1
        elif char == "[":
            parsed = _character_class(pattern, index + 1)
            if parsed is None:
                return None
            test, index = parsed
            automaton.state(test)
        else:
            if char == "\\":
                index += 1
                if index >= len(pattern):
                    return None
                char = pattern[index]
            if char == "/" and pattern[index + 1 :] == "**":  # `a/**` also matches `a` itself
                slash = automaton.state(_is("/"))
                automaton.empty[slash].append(slash + 2)
                _loop(automaton, _any)
                break
            automaton.state(_is(char))
            index += 1
            segment_start = char == "/"
            continue
        segment_start = False
    accept = automaton.state()
    return automaton.tests, automaton.targets, automaton.closures(), accept


def _loop(automaton: _Automaton, test: Test) -> int:
    """A state that consumes any number of characters passing `test` (none included)."""
    loop = automaton.state(test)
    automaton.targets[loop] = loop
    automaton.empty[loop].append(loop + 1)
    return loop


def _stars(automaton: _Automaton, pattern: str, index: int, segment_start: bool) -> tuple[int, bool]:
    """`*`, or `**` (a globstar only as a whole segment): where the pattern goes on, and whether a segment starts."""
    double = pattern.startswith("**", index)
    rest = pattern[index + 2 :]
    if double and segment_start and not rest:  # `**` at the end, after a `/` or alone: anything, or nothing
        _loop(automaton, _any)
        return index + 2, True
    if double and segment_start and rest.startswith("/"):  # `**/`: zero or more whole segments
        loop = automaton.state(_any)
        automaton.targets[loop] = loop
        slash = automaton.state(_is("/"))
        automaton.empty[loop] += [slash, slash + 1]
        return index + 3, True
    _loop(automaton, _not_slash)
    return index + (2 if double else 1), False


def _character_class(pattern: str, index: int) -> tuple[Test, int] | None:
    """`[...]` starting after its `[`: the test and the index after its `]`; None when malformed."""
    negate = index < len(pattern) and pattern[index] in "!^"
    index += negate
    ranges: list[tuple[str, str]] = []
    while index < len(pattern) and pattern[index] != "]":
        low, index = _class_char(pattern, index)
        if low is None:
            return None
        high: str | None = low
        if index + 1 < len(pattern) and pattern[index] == "-" and pattern[index + 1] != "]":
            high, index = _class_char(pattern, index + 1)
            if high is None:
                return None
        ranges.append((low, high or low))
    if index >= len(pattern) or not ranges:
        return None
    return (lambda char: any(lo <= char <= hi for lo, hi in ranges) != negate), index + 1


def _class_char(pattern: str, index: int) -> tuple[str | None, int]:
    if pattern[index] == "\\":
        index += 1
        if index >= len(pattern):
            return None, index
    return pattern[index], index + 1


def _expand_braces(pattern: str) -> list[str]:
    """`a{b,c{d,e}}` as `ab`, `acd`, `ace`; an unclosed `{` leaves a pattern that matches nothing."""
    start = _unescaped(pattern, "{", 0)
    if start < 0:
        return [pattern]
    depth, index, commas = 0, start, []
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                break
        elif char == "," and depth == 1:
            commas.append(index)
        index += 1
    else:
        return []  # no closing `}`: doublestar's ErrBadPattern, no match
    bounds = [start, *commas, index]
    head, tail = pattern[:start], pattern[index + 1 :]
    expanded: list[str] = []
    for left, right in itertools.pairwise(bounds):
        for alternative in _expand_braces(head + pattern[left + 1 : right] + tail):
            expanded.append(alternative)
            if len(expanded) > MAX_ALTERNATIVES:
                raise GlobError(f"{pattern}: more than {MAX_ALTERNATIVES} alternatives")
    return expanded


def _unescaped(pattern: str, wanted: str, index: int) -> int:
    while index < len(pattern):
        if pattern[index] == "\\":
            index += 2
            continue
        if pattern[index] == wanted:
            return index
        index += 1
    return -1
