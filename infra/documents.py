"""Every YAML and JSON document the program reads, read within one budget (pure: no Pulumi).

A stack file, a training pipeline and its includes, a plan file, `pulumi preview --json`, a GitLab answer: each
is input a careless or hostile user controls. Read through here, none can hang the program, exhaust its
memory, crash libyaml or reach a file outside the repository:

- **files** (`read_text`): a regular file only (no directory, device, pipe or socket, and no `/proc` or `/sys`
  entry, which says it is regular but holds other than its size: `/proc/self/environ` is the environment,
  credentials included), never through a symlink
  that leaves `root`, at most `Budget.max_bytes` read (one byte more is read to tell), UTF-8;
- **YAML** (`check_yaml_events`): one streaming pass over the parser's events before any node is built:
  nesting depth (libyaml's composer recurses in C: 30,000 levels crash the process), recursive and undefined
  aliases, and the size the document expands to with every alias counted where it is used (a "billion
  laughs" file is ten lines that expand to a billion values);
- **JSON** (`parse_json`): the byte cap, then nesting depth and node count in one iterative walk of the text
  before `json.loads` recurses, and no `NaN`/`Infinity`/`1e999` (they break every sum and comparison).

Over a budget, or unreadable: one `DocumentError` line, `<file>: <what was too much>` (`<file>:<line>:` for
YAML), never a traceback.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from infra.untrusted import printable


class DocumentError(ValueError):
    """A document that cannot be read within its budget; str() is one line naming the file."""


class JSONSyntaxError(DocumentError):
    """Text that is not JSON at all (rather than JSON over a budget): `line` and `reason` let a command say
    so in its own words."""

    def __init__(self, message: str, line: int, reason: str) -> None:
        super().__init__(message)
        self.line, self.reason = line, reason


@dataclass(frozen=True)
class Budget:
    """What one document may cost: bytes read, values once aliases are expanded, nesting depth."""

    max_bytes: int
    max_nodes: int
    max_depth: int = 64
    kind: str = "a document"
    """What the file should be, for the messages: `larger than 1 MiB, not a stack file`."""
    content: str = ""
    """What its content should be, where that reads better (`expands to ..., not a stack config`)."""

    @property
    def readable(self) -> str:
        """`a readable stack file`."""
        return f"a readable {self.kind.split(' ', 1)[1]}"

    @property
    def not_kind(self) -> str:
        return f", not {self.kind}"

    @property
    def not_content(self) -> str:
        return f", not {self.content or self.kind}"


STACK_FILE = Budget(max_bytes=1 << 20, max_nodes=50_000, kind="a stack file", content="a stack config")
"""A stack file (the dev stack's: ~4 KiB, ~300 values, 6 levels)."""
PIPELINE_FILE = Budget(max_bytes=1 << 20, max_nodes=100_000, kind="a pipeline file", content="a CI config")
"""One pipeline file or include (GitLab caps a merged CI config at 1 MiB by default)."""
MERGED_PIPELINE = Budget(max_bytes=8 << 20, max_nodes=500_000, kind="a merged pipeline", content="a merged CI config")
"""A pipeline as GitLab merged it (`check-ci --online`): every include in one document."""
PLAN_FILE = Budget(max_bytes=16 << 20, max_nodes=1_000_000, max_depth=100, kind="a plan file")
"""A `plan --json` document or a `pulumi preview --json` (the dev plan: ~100 KiB)."""
DIFF_TEXT = Budget(max_bytes=16 << 20, max_nodes=0, kind="a preview or plan diff")
"""The text of `pulumi preview --diff` or `python -m infra plan-diff`, which the MR note quotes (clipped)."""
GITLAB_ANSWER = Budget(max_bytes=8 << 20, max_nodes=500_000, max_depth=32, kind="a GitLab answer")
"""One page of a GitLab API answer (100 jobs: ~200 KiB)."""

MAX_SHOWN_NAME = 300
"""Characters of a file's name in a message (a path of 6,000 characters is shown by its start)."""

YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader when PyYAML has it (several times faster), else the pure-Python one: safe either way,
because `check_yaml_events` bounds the depth before libyaml composes a node."""


def safe_load(text: str) -> Any:
    """`yaml.safe_load` on libyaml's parser (`YAML_LOADER`): for text already within a budget, or the program's own
    (a value checked by `check_yaml_events`, a stack file's scalar, Pulumi.yaml)."""
    return yaml.load(text, Loader=YAML_LOADER)


def read_text(path: Path, budget: Budget, *, root: Path | None = None, name: str | None = None) -> str:
    """The UTF-8 text of a regular file within `budget.max_bytes`; DocumentError otherwise.

    With `root`, the file (symlinks resolved) must lie inside it: a pipeline's include may not read
    `/etc/passwd` through a link the repository carries."""
    shown = printable(name or path.name, MAX_SHOWN_NAME)  # a name holding a newline cannot forge a line
    if root is not None:
        try:
            real, inside = path.resolve(), root.resolve()
        except (OSError, RuntimeError) as err:  # RuntimeError: a symlink loop on older Pythons
            raise DocumentError(f"{shown}: cannot be resolved ({_why(err)})") from None
        if not real.is_relative_to(inside):
            written = Path(os.path.normpath(path.absolute()))  # `..` resolved as written, no link followed
            if not written.is_relative_to(Path(os.path.normpath(root.absolute()))):  # no link: the path is outside
                raise DocumentError(f"{shown}: is outside the repository ({printable(str(inside), 120)}): not read")
            raise DocumentError(f"{shown}: leads outside the repository (a symlink to {_outside(real)}): not read")
    try:
        mode = path.stat().st_mode
        if stat.S_ISDIR(mode):
            raise DocumentError(f"{shown}: is a directory{budget.not_kind}")
        if not stat.S_ISREG(mode):
            raise DocumentError(f"{shown}: is not a regular file (a device, pipe or socket): not read")
        with path.open("rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            data = stream.read(budget.max_bytes + 1)
        if len(data) != size and len(data) <= budget.max_bytes:
            raise DocumentError(f"{shown}: {_GENERATED}")
    except OSError as err:
        raise DocumentError(f"{shown}: cannot be read ({_why(err)})") from None
    return decode(data, shown, budget)


_GENERATED = (
    "is not a regular file: its size says other than what it holds (a /proc or /sys entry, made as it is read, "
    "or a file being written): not read"
)


def decode(data: bytes, name: str, budget: Budget) -> str:
    """Bytes as UTF-8 text within the byte budget; DocumentError naming the line of a bad byte."""
    if len(data) > budget.max_bytes:
        raise DocumentError(f"{name}: larger than {_size(budget.max_bytes)}{budget.not_kind}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise DocumentError(f"{name}:{line}: not UTF-8 text (byte 0x{data[err.start]:02x})") from None


def check_yaml_events(text: str, name: str, budget: Budget, loader: Any = YAML_LOADER) -> int:
    """One streaming pass over the YAML events (see the module docstring); DocumentError `<name>:<line>: ...`.

    Returns the values the document expands to (every alias counted where it is used), for a budget that spans
    several documents (a pipeline and its includes)."""
    return _checked_events(text, name, budget, loader, None)


def checked_events(text: str, name: str, budget: Budget) -> list[yaml.Event]:
    """The parser's events of a YAML text, checked as `check_yaml_events` checks them (one pass, kept): for a
    reader that builds its values from the events (infra/offline/stack_yaml.py)."""
    events: list[yaml.Event] = []
    _checked_events(text, name, budget, YAML_LOADER, events)
    return events


def compose_checked(text: str, name: str, budget: Budget) -> yaml.Node | None:
    """The node tree of a YAML document as `yaml.compose(text, Loader=YAML_LOADER)` builds it, from the events
    `check_yaml_events` checked (parsed once, not again): DocumentError as that says, yaml.YAMLError as compose
    raises it (a second document, an alias composed before its anchor). The parser is the stack-file reader's
    (libyaml's where PyYAML has it), so an editor and the reader never see two readings of one text."""
    events: list[yaml.Event] = []
    _checked_events(text, name, budget, YAML_LOADER, events)
    composer = _ReplayedEvents(events)
    try:
        return composer.get_single_node()
    finally:
        composer.dispose()


class _ReplayedEvents(yaml.composer.Composer, yaml.resolver.Resolver):
    """SafeLoader's composer and resolver, fed parsed events instead of a parser (its three methods, as PyYAML's
    parser answers them)."""

    def __init__(self, events: list[yaml.Event]) -> None:
        self._events, self._next = events, 0
        yaml.composer.Composer.__init__(self)
        yaml.resolver.Resolver.__init__(self)

    def check_event(self, *choices: type) -> bool:
        if self._next >= len(self._events):
            return False
        return not choices or isinstance(self._events[self._next], choices)

    def peek_event(self) -> yaml.Event | None:
        return self._events[self._next] if self._next < len(self._events) else None

    def get_event(self) -> yaml.Event | None:
        event = self.peek_event()
        self._next += 1
        return event

    def dispose(self) -> None:
        self._events = []


def _checked_events(text: str, name: str, budget: Budget, loader: Any, keep: list[yaml.Event] | None) -> int:
    """`check_yaml_events`' pass, each event also appended to `keep` (when given)."""
    count = _ExpandedCount(name, budget)
    try:
        for event in yaml.parse(text, Loader=loader):
            count.add(event)
            if keep is not None:
                keep.append(event)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{name}:{mark.line + 1}" if mark is not None else name
        raise DocumentError(f"{where}: not valid YAML: {err.problem or err.context}") from None
    except yaml.reader.ReaderError as err:
        line = text[: err.position].count("\n") + 1
        raise DocumentError(f"{name}:{line}: not {budget.readable}: {err.reason}") from None
    except yaml.YAMLError as err:
        raise DocumentError(f"{name}: not valid YAML: {str(err).splitlines()[0][:200]}") from None
    return count.total


class _ExpandedCount:
    """The values a YAML document expands to so far, every alias counted where it is used, and its depth."""

    def __init__(self, name: str, budget: Budget) -> None:
        self.name, self.budget = name, budget
        self.total = 0
        self.open_nodes: list[tuple[str | None, int]] = []  # (anchor, total when it started)
        self.sizes: dict[str, int] = {}

    def add(self, event: yaml.Event) -> None:
        line = event.start_mark.line + 1 if event.start_mark is not None else 1
        if isinstance(event, yaml.AliasEvent):
            if event.anchor not in self.sizes:
                raise DocumentError(f"{self.name}:{line}: a recursive or undefined alias *{event.anchor}")
            self.total += self.sizes[event.anchor]
        elif isinstance(event, yaml.ScalarEvent):
            self.total += 1
            if event.anchor is not None:
                self.sizes[event.anchor] = 1
        elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            self.open_nodes.append((event.anchor, self.total))
            self.total += 1
            if len(self.open_nodes) > self.budget.max_depth:
                raise DocumentError(
                    f"{self.name}:{line}: nested more than {self.budget.max_depth} levels deep{self.budget.not_content}"
                )
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            anchor, started = self.open_nodes.pop()
            if anchor is not None:
                self.sizes[anchor] = self.total - started
        if self.total > self.budget.max_nodes:
            raise DocumentError(
                f"{self.name}:{line}: expands to more than {self.budget.max_nodes} values (each alias counted where "
                f"it is used){self.budget.not_content}"
            )


def parse_json(text: str | bytes, name: str, budget: Budget) -> Any:
    """A JSON document within `budget`: bytes, depth and values checked before parsing; no NaN or infinity."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    decoded = decode(data, name, budget)
    _check_json_shape(decoded, name, budget)
    try:
        return json.loads(decoded, parse_constant=_no_constant, parse_float=_finite_float)
    except _NotFiniteError as err:
        raise DocumentError(f"{name}: {err} is not a finite number") from None
    except json.JSONDecodeError as err:
        raise JSONSyntaxError(f"{name}:{err.lineno}: not valid JSON: {err.msg}", err.lineno, err.msg) from None
    except (ValueError, RecursionError) as err:  # an integer of more than 4300 digits
        raise DocumentError(f"{name}: not readable JSON: {str(err).splitlines()[0][:200]}") from None


# A string, closed or running to the end of the text (possessive: no backtracking, so each quote is passed once;
# a plain `*` retried every later quote of an unclosed string, quadratic on `"\\"\\"...`).
_JSON_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.DOTALL)
_JSON_STRUCTURE = re.compile(r"[\[\]{},]")
_NOT_A_BRACKET = re.compile(r"[^\[\]{}]+")


def _check_json_shape(text: str, name: str, budget: Budget) -> None:
    """Depth and an upper bound of the values (brackets and commas outside strings), before parsing: the strings
    taken out (an unterminated one to the end); within the values' bound only the brackets are walked for the
    depth, else every bracket and comma in order, for the first place either is over."""
    outside = _JSON_STRING.sub("", text)  # a string that never ends takes the rest with it
    opens = outside.count("[") + outside.count("{")
    if opens + outside.count(",") > budget.max_nodes:
        _walk_json_shape(_JSON_STRUCTURE.findall(outside), name, budget)
    elif opens > budget.max_depth:  # the values stay within the bound: only the depth can be over
        _walk_json_shape(_NOT_A_BRACKET.sub("", outside), name, budget)


def _walk_json_shape(structure: Iterable[str], name: str, budget: Budget) -> None:
    """The brackets and commas of a JSON text in order: DocumentError where it first nests or holds too much."""
    depth = values = 0
    for char in structure:
        if char in "[{":
            depth += 1
            values += 1
            if depth > budget.max_depth:
                raise DocumentError(f"{name}: nested more than {budget.max_depth} levels deep{budget.not_content}")
        elif char in "]}":
            depth -= 1
        else:
            values += 1
        if values > budget.max_nodes:
            raise DocumentError(f"{name}: holds more than {budget.max_nodes} values{budget.not_content}")


class _NotFiniteError(ValueError):
    pass


def _no_constant(text: str) -> Any:
    raise _NotFiniteError(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFiniteError(text[:40])
    return value


def _why(err: BaseException) -> str:
    return (err.strerror if isinstance(err, OSError) and err.strerror else str(err).splitlines()[0])[:200]


def _outside(real: Path) -> str:
    """Where a link leads, said without quoting more than its first components."""
    shown = Path(*real.parts[:3])
    return f"{shown}/…" if len(real.parts) > 3 else str(shown)


def _size(count: int) -> str:
    return f"{count >> 10} KiB"
