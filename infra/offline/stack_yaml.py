"""The YAML subset a stack file may use, read exactly as the Pulumi CLI reads it, everything else refused.

The CLI reads a stack file with Go's yaml.v3; PyYAML (YAML 1.1) and yaml.v3 read many texts apart. Rather than
follow yaml.v3 rule by rule (which drifts wherever no rule was written down), the offline reader accepts a
subset both read alike and refuses the rest at its line (`SubsetError`). It parses with libyaml (through the
budgets of infra/documents.py) and builds the values itself from the parser's events, so every node is seen with
its tag and style as written:

- mappings and sequences (block or flow), plain, quoted and block scalars, comments, anchors and aliases;
- plain scalars typed as yaml.v3 types them (go_values.py), their refusals included (`_` in a number, dates,
  integers beyond 64 bits, ...);
- `<<` merge keys: unquoted, untagged, at most one per mapping, holding a mapping or a list of mappings (the
  first mapping holding a key gives it, a key written in the mapping itself wins);
- keys: scalars, text, integers (`0x10` is `16`) or booleans (`true`), each once, however spelled;
- `secure:` as the only key of a mapping, holding text: a secret (the `Secret` of the values);
- refused: explicit tags other than `!!str` on a scalar (`!!float 0200` is 128 to the CLI, `! "2"` text), `%YAML`
  and `%TAG` directives, complex keys (`? [a, b]`), null or float keys, escapes yaml.v3 does not know (`"\\/"`),
  a block scalar that starts with a blank line (yaml.v3 drops the first), `secure:` beside other keys or
  holding other than text, a second document.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml

from infra.config.errors import format_value
from infra.offline.go_values import PlainScalarError, go_key, handed, resolve_plain
from infra.untrusted import printable

STR_TAG = "tag:yaml.org,2002:str"
Path = tuple[str | int, ...]
"""A value's place: mapping keys and sequence indexes from the document's root (`("config", "gpu-ci:x", 0)`)."""


class SubsetError(ValueError):
    """Text outside the subset, at its line; str() is the reason (no file, no line)."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(reason)
        self.line = line


@dataclass(frozen=True)
class Secret:
    """A `secure:` value: the encrypted text, which only the CLI can decrypt."""

    ciphertext: str


@dataclass(eq=False)
class Node:
    kind: str
    """`scalar`, `seq` or `map`."""
    line: int
    tag: str | None = None
    style: str | None = None
    """A scalar's: None where plain, else `'`, `"`, `|` or `>`."""
    value: str = ""
    items: list[Node] = field(default_factory=list)
    """A sequence's items; a mapping's keys and values, alternating."""

    def pairs(self) -> Iterator[tuple[Node, Node]]:
        return zip(self.items[::2], self.items[1::2], strict=True)


_MERGE = "<<"
_ESCAPES = frozenset('0abt\tnvfre "\\NLP_xuU\r\n')
"""Escapes both yaml.v3 and libyaml read in a double-quoted scalar (`\\/` and `\\'` are one reader's only)."""
_BOM = "\ufeff"


def compose(events: list[yaml.Event], text: str) -> Node | None:
    """The document's node tree from libyaml's events (checked by documents.py: aliases defined, depth bounded);
    SubsetError for a directive, a second document or an escape outside the subset."""
    anchors: dict[str, Node] = {}
    open_nodes: list[Node] = []
    root: Node | None = None
    documents = 0
    offset = 1 if text.startswith(_BOM) else 0  # libyaml's marks skip a byte-order mark
    for event in events:
        mark = event.start_mark
        line = mark.line + 1 if mark is not None else 1
        if isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                raise SubsetError(line, "not valid YAML: a second document (`---`): a stack file holds one")
            if event.version or event.tags:
                raise SubsetError(line, "a %YAML or %TAG directive, which the YAML readers of Pulumi read apart")
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            open_nodes.pop()
        elif isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            node = _node(event, line, text, offset, anchors, open_nodes=open_nodes)
            if open_nodes:
                open_nodes[-1].items.append(node)
            else:
                root = node
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                open_nodes.append(node)
    return root


def _node(
    event: yaml.NodeEvent, line: int, text: str, offset: int, anchors: dict[str, Node], *, open_nodes: list[Node]
) -> Node:
    """The node an event starts (an alias: the node its anchor names), anchored where the event says."""
    if isinstance(event, yaml.AliasEvent):
        node = anchors[str(event.anchor)]
        if any(node is open_node for open_node in open_nodes):
            raise SubsetError(
                line,
                f"the alias *{printable(str(event.anchor), 40)} inside the value its anchor names (it would hold "
                "itself), which the Pulumi CLI refuses: anchor another value or rename the anchor",
            )
        return node
    if isinstance(event, yaml.ScalarEvent):
        style = event.style or None
        if style == '"' and event.start_mark is not None and event.end_mark is not None:
            _check_escapes(text[offset + event.start_mark.index : offset + event.end_mark.index], line)
        node = Node("scalar", line, event.tag, style, event.value)
    else:
        node = Node("seq" if isinstance(event, yaml.SequenceStartEvent) else "map", line, getattr(event, "tag", None))
    if event.anchor is not None:
        anchors[event.anchor] = node
    return node


def _check_escapes(raw: str, line: int) -> None:
    index = raw.find("\\")
    while index >= 0:
        escaped = raw[index + 1 : index + 2]
        if escaped not in _ESCAPES:
            raise SubsetError(
                line + raw[:index].count("\n"),
                f"the escape \\{printable(escaped, 1)} in a double-quoted text, which the Pulumi CLI does not know: "
                "write the character itself",
            )
        index = raw.find("\\", index + 2)


class Reader:
    """The values of a node tree, and the line of each key and item (`lines`). Numbers are as the program gets them
    (`handed`: `1.0` is 1), or with `as_read` as yaml.v3 reads them (an editor's check that a float reads back)."""

    def __init__(self, as_read: bool = False) -> None:
        self.lines: dict[Path, int] = {}
        self.as_read = as_read

    def value(self, node: Node, path: Path) -> Any:
        """The value of `node` at `path` as the CLI reads it: text, int, float, bool, None, list, dict or Secret."""
        if node.kind == "map":
            return self.mapping(node, path)
        _check_tag(node, path)
        if node.kind == "seq":
            values = []
            for index, item in enumerate(node.items):
                self.lines.setdefault((*path, index), item.line)
                values.append(self.value(item, (*path, index)))
            return values
        return self.scalar(node, path)

    def scalar(self, node: Node, path: Path) -> Any:
        if node.style in ("|", ">"):
            first, newline, _ = node.value.partition("\n")
            if newline and not first.strip(" \t"):
                raise SubsetError(
                    node.line,
                    f"a block scalar{at(path)} that starts with a blank line, which the Pulumi CLI drops and other "
                    "readers keep: remove the blank line",
                )
        if node.style is not None or node.tag == STR_TAG:
            return _text(node, path)
        try:
            value = resolve_plain(node.value)
        except PlainScalarError as err:
            raise SubsetError(node.line, _refused(node, path, err)) from None
        if self.as_read or not isinstance(value, int | float) or isinstance(value, bool):
            return value
        return handed(value)

    def mapping(self, node: Node, path: Path) -> dict[str, Any] | Secret:
        _check_tag(node, path)
        merges = [(key, value) for key, value in node.pairs() if key.kind == "scalar" and key.value == _MERGE]
        result: dict[str, Any] = {}
        if merges:
            result = self._merged(merges, path)
        written: dict[str, Node] = {}
        for key, value in node.pairs():
            if key.kind == "scalar" and key.value == _MERGE:
                continue
            name = self.key(key, path)
            if (first := written.get(name)) is not None:
                raise SubsetError(key.line, f"duplicate key {_both(first, key, name)}")
            written[name] = key
            self.lines[(*path, name)] = key.line
            result[name] = self.value(value, (*path, name))
        if "secure" in written or "secure" in result:
            return _secure(node, path, result, merged=bool(merges))
        return result

    def _merged(self, merges: list[tuple[Node, Node]], path: Path) -> dict[str, Any]:
        """The keys `<<` brings in: the first mapping holding a key gives it."""
        (key, value), *more = merges
        if more:
            raise SubsetError(
                more[0][0].line,
                f"a second << in one mapping{at(path)}, which the Pulumi CLI refuses: merge a list, <<: [*a, *b]",
            )
        if key.style is not None or key.tag is not None:
            raise SubsetError(
                key.line, f"a quoted or tagged <<{at(path)}, a merge to the Pulumi CLI and a key to others: write <<"
            )
        sources = value.items if value.kind == "seq" and value.tag is None else [value]
        result: dict[str, Any] = {}
        for source in sources:
            merged = self.mapping(source, path) if source.kind == "map" else None
            if not isinstance(merged, dict):
                raise SubsetError(
                    value.line, f"a << merge{at(path)} of other than a mapping or a list of mappings: merge mappings"
                )
            for name, item in merged.items():
                result.setdefault(name, item)
        return result

    def key(self, node: Node, path: Path) -> str:
        """A mapping key as the CLI names it (text as written, `0x10` as `16`); SubsetError for other keys."""
        if node.kind != "scalar":
            raise SubsetError(node.line, f"a complex key (a list or mapping as a key){at(path)}: keys are text")
        _check_tag(node, path)
        if node.style is not None or node.tag == STR_TAG:
            return _text(node, path, key=True)
        try:
            return go_key(resolve_plain(node.value))
        except PlainScalarError as err:
            raise SubsetError(node.line, _refused(node, path, err)) from None


_LEADS_OFF = frozenset("\n\t\u2028\u2029")
"""What text holding a line break may not start with: the CLI writes the stack file again with yaml.v3 and reads
that (a block scalar), which drops a leading line break and refuses a leading tab."""


def read_apart(text: str) -> bool:
    """Whether the CLI's second reading of `text` (`_LEADS_OFF`) differs from the text: no stack file can hold it."""
    return "\n" in text and text[0] in _LEADS_OFF


def _text(node: Node, path: Path, key: bool = False) -> str:
    """A quoted, block or `!!str` scalar's text; SubsetError where the CLI's second reading of it differs."""
    text = node.value
    if read_apart(text):
        what = "a line break" if text[0] != "\t" else "a tab"
        raise SubsetError(
            node.line,
            f"{'a key' if key else 'text'}{at(path)} that starts with {what} and holds a line break, which the Pulumi "
            "CLI reads otherwise (it drops a leading line break, refuses a leading tab): remove it",
        )
    return text


def _refused(node: Node, path: Path, err: PlainScalarError) -> str:
    return str(err) if err.alone else f"{printable(node.value, 40)}{at(path)} {err}"


def _secure(node: Node, path: Path, value: dict[str, Any], merged: bool) -> Secret:
    """`{secure: <text>}` is a secret; `secure:` in any other form (beside a key, holding a number) the CLI reads
    as a plain mapping, which a reader of the file would take for a secret: refused."""
    ciphertext = value.get("secure")
    if merged or len(value) != 1 or not isinstance(ciphertext, str):
        raise SubsetError(
            node.line,
            f"secure:{at(path)} beside other keys or holding other than text, which the Pulumi CLI reads as a plain "
            "mapping, not a secret: set it with pulumi config set --secret",
        )
    return Secret(ciphertext)


def _check_tag(node: Node, path: Path) -> None:
    if node.tag is None or (node.tag == STR_TAG and node.kind == "scalar"):
        return
    tag = node.tag.replace("tag:yaml.org,2002:", "!!")
    raise SubsetError(
        node.line,
        f"{printable(tag, 40)}{at(path)} is an explicit YAML tag, which the YAML readers of Pulumi read apart: "
        "write the value without it (`!!str` on text is the one kept)",
    )


def at(path: Path) -> str:
    """` at config.gpu-ci:x.pools[0]` (nothing at the root)."""
    return f" at {printable(dotted(path), 120)}" if path else ""


def dotted(path: Path) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text


def _both(first: Node, second: Node, name: str) -> str:
    """`'gpu-ci:x'`, or `'8' (line 3) and '010', both read as '8'` when two spellings are one key."""
    if first.value == second.value:
        return format_value(name)
    return (
        f"{format_value(first.value)} (line {first.line}) and {format_value(second.value)}, both read as "
        f"{format_value(name)}: keep one"
    )


def read_value(events: list[yaml.Event], text: str) -> Any:
    """One YAML value (a flow line an editor writes) as the stack-file reader reads it; SubsetError otherwise."""
    root = compose(events, text)
    return None if root is None else Reader(as_read=True).value(root, ())
