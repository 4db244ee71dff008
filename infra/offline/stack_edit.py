"""The one stack-file editor: set keys under `<project>:platform`, changing only the lines of what changes.

A stack file is the reviewed, commented source of a stack's config: an edit must leave every other byte as it
was (comments, key order, quoting, line wraps). So the file is not dumped again (a YAML round-trip rewrites
what it does not understand byte for byte, such as a flow mapping wrapped over two lines); each key is
located in the YAML node tree (with its marks: where each key and value starts and ends) and only its text is
replaced, removed or added. A value that already reads as the one wanted is not touched. Two edits:

- `set_keys` (`recommend --write`): each key's value replaced as one flow-style line (`max_size: 3`,
  `warm: [{days: Mon-Fri, from: "09:00", ...}]`); a key that is not there is added at the end of its mapping,
  at that mapping's indentation; a missing section (`gpu_sharing`) is added as a flow mapping holding the rest
  of the path. A section on the path written in flow style (`ci-compile: {max_size: 1}`) is refused: its line
  would be rewritten.
- `write_section` (`workload --write`): `platform.<key>` becomes exactly the mapping given, in block style,
  edited in place: a key already there keeps its place (and its comments), a new one goes after the key that
  precedes it in the mapping given, one not given is removed with its lines (the full-line comments after it
  stay, introducing what follows). A flow mapping on the way becomes a block of one key a line.

What cannot be edited so is refused in one line (`EditError`), nothing written: a file that is not a stack
file, a path through a value. Anchors and aliases are left to the read-back each command makes (an edit of a
shared value changes every place that shares it): `edited` reads the result back exactly as `plan` reads a
stack file (`infra.offline.stack_config`, from a temporary copy) and refuses it unless the config is the one
intended: the old one with those keys set, nothing else.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from infra.documents import STACK_FILE, DocumentError, checked_events, compose_checked, read_text, safe_load
from infra.offline.stack_config import StackFileError, load_stack_config
from infra.offline.stack_yaml import SubsetError, read_value

Change = tuple[tuple[str, ...], object]
"""A key path under `platform` and the value it gets (plain YAML data)."""
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")
_BLOCK_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./,-]*")
"""What a block key's value may be plain: a flow plain scalar, or with commas (`Mon,Wed,Fri`); never a colon."""
INDENT = 2
"""Spaces a new block's keys sit deeper than their parent's."""


class EditError(ValueError):
    """The stack file cannot be edited as asked; one line naming the file and why."""


def edited(path: Path, stack: str, project: str, settings: Sequence[Change], expected: Any) -> str:
    """The text of the stack file `path` with `settings` set under `<project>:platform`, once it reads back (as
    `plan` reads it) as the old config with the platform `expected`; EditError otherwise."""
    text = read(path)
    try:
        before = load_stack_config(stack, path=path)
    except (DocumentError, FileNotFoundError) as err:
        raise EditError(str(err)) from None
    new = set_keys(text, path.name, project, settings)
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / path.name
        copy.write_text(new, encoding="utf-8")
        try:
            after = load_stack_config(stack, path=copy)
        except StackFileError as err:
            raise EditError(f"{path.name}: the edited file would not read back: {err}") from None
    wanted = {**before.values, before.namespaced("platform"): expected}
    if after.values != wanted:
        differs = sorted(k for k in wanted.keys() | after.values.keys() if wanted.get(k) != after.values.get(k))
        raise EditError(f"{path.name}: the edited file would not read back as intended (at {', '.join(differs)})")
    return new


def read(path: Path) -> str:
    """The stack file's text, within the stack-file budget; EditError naming it otherwise."""
    try:
        return read_text(path, STACK_FILE)
    except (DocumentError, FileNotFoundError) as err:
        raise EditError(str(err)) from None


def write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as err:
        raise EditError(f"{path.name}: cannot be written ({err.strerror or err})") from None


def set_keys(text: str, name: str, project: str, settings: Sequence[Change]) -> str:
    """`text` with each setting's value replaced (or added); EditError where the file cannot be edited so."""
    for path, value in settings:
        text = _set(_Tree(text, name, project), path, value)
    return text


def write_section(text: str, name: str, project: str, key: str, value: Mapping[str, Any]) -> str:
    """`text` with `platform.<key>` holding exactly `value`, in block style, edited in place (module docstring)."""
    tree = _Tree(text, name, project)
    if not _is_block(tree.platform):
        raise EditError(f"{name}: platform is written in flow style ({{...}}) or empty: edit it by hand")
    splices: list[_Splice] = []
    _merge(tree, tree.platform, {key: value}, splices, exact=False)
    return _spliced(text, splices)


def section_text(text: str, name: str, project: str, key: str) -> str:
    """The lines of `platform.<key>` in `text` (its key's line to its value's end), as they sit in the file."""
    tree = _Tree(text, name, project)
    found = _lookup(tree.platform, key)
    if found is None:
        raise EditError(f"{name}: no platform.{key}")
    start = text.rfind("\n", 0, found[0].start_mark.index) + 1
    return text[start : _line_end(text, _content_end(text, found[1]))] + "\n"


def flow(value: object) -> str:
    """`value` as one line of flow-style YAML that reads back (as the stack-file loader reads it) as `value`."""
    text = _flow(value)
    if _read(text) != value:
        raise EditError(f"{value!r} cannot be written as a YAML value that reads back as itself")
    return text


def _read(text: str) -> object:
    """A value as the stack-file loader (and so the Pulumi CLI) reads it: `yes` and `1e3` differ from PyYAML's; a
    text outside the stack-file subset reads as nothing any value equals."""
    try:
        return read_value(checked_events(text, "value", STACK_FILE), text)
    except (DocumentError, SubsetError):
        return _UNREADABLE


_UNREADABLE = object()


def _flow(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        # plain only where every reader takes it as this text: the CLI and the loader (YAML 1.2's `NO` is text) and
        # the YAML 1.1 readers a reviewer's tools use (PyYAML's `NO` is false)
        plain = _PLAIN.fullmatch(value) and _read(value) == value and safe_load(value) == value
        return value if plain else _quoted(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_flow(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_flow(str(key))}: {_flow(item)}" for key, item in value.items()) + "}"
    raise EditError(f"{value!r} is not a YAML value")


def _quoted(text: str) -> str:
    """A double-quoted YAML scalar: a character outside YAML's printable ones, or one YAML would fold as a line
    break (NEL, U+2028, U+2029) or drop (a BOM), escaped; an escape beyond the BMP (JSON's surrogate pairs would not
    read back)."""
    out = []
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif _printable(code):
            out.append(char)
        elif code > 0xFFFF:
            out.append(f"\\U{code:08x}")
        else:
            out.append(f"\\u{code:04x}")
    return '"' + "".join(out) + '"'


def _printable(code: int) -> bool:
    """YAML's printable characters, less the line breaks it folds (U+2028, U+2029) and the BOM it drops."""
    return 0x20 <= code < 0x7F or (0xA0 <= code <= 0xFFFD and not 0xD800 <= code < 0xE000 and code not in _FOLDED)


_FOLDED = frozenset({0x2028, 0x2029, 0xFEFF})


def _scalar(value: object) -> str:
    """A value on a block key's line: a string plain where it reads back as itself (`Mon,Wed,Fri`, which a flow
    collection could not hold plain), else double-quoted (`"13:00"`: YAML 1.1 reads a plain `13:00` as 780)."""
    if isinstance(value, str) and _BLOCK_PLAIN.fullmatch(value) and safe_load(value) == value:
        return value
    return flow(value)


def _block(value: Mapping[str, Any], indent: int) -> list[str]:
    """`value` as block-style lines at `indent` (a nested mapping one level deeper, anything else on its line)."""
    lines = []
    for key, item in value.items():
        head = " " * indent + flow(str(key)) + ":"
        if isinstance(item, Mapping) and item:
            lines += [head, *_block(item, indent + INDENT)]
        else:
            lines.append(f"{head} {_scalar(item)}")
    return lines


class _Tree:
    """One parse of a stack file: its node tree (marks into `text`) and its data, at `platform`."""

    def __init__(self, text: str, name: str, project: str) -> None:
        self.text, self.name = text, name
        try:
            root = compose_checked(text, name, STACK_FILE)  # checked, then composed: one parse
        except DocumentError as err:
            raise EditError(str(err)) from None
        except yaml.YAMLError as err:
            raise EditError(f"{name}: not valid YAML: {str(err).splitlines()[0]}") from None
        config = _lookup(root, "config") if isinstance(root, yaml.MappingNode) else None
        if config is None or not isinstance(config[1], yaml.MappingNode):
            raise EditError(f"{name}: no `config:` mapping")
        for key in (f"{project}:platform", "platform"):
            found = _lookup(config[1], key)
            if found is not None and isinstance(found[1], yaml.MappingNode):
                self.platform: yaml.MappingNode = found[1]
                return
        raise EditError(f"{name}: no `{project}:platform` mapping under config")

    def value(self, node: yaml.Node) -> Any:
        """What a node reads as (its own text, read alone: a scalar, or a flow collection); `_UNREADABLE` for
        text that does not read alone (it then differs from any value wanted)."""
        try:
            return safe_load(self.text[node.start_mark.index : node.end_mark.index])
        except yaml.YAMLError:
            return _UNREADABLE


_UNREADABLE = object()


@dataclass(frozen=True)
class _Splice:
    start: int
    end: int
    text: str


def _spliced(text: str, splices: list[_Splice]) -> str:
    """`text` with each splice's span replaced, from the last to the first (a removal before an insertion at the
    same place, so that what is inserted there stays; insertions at one place in the order given)."""
    ordered = sorted(enumerate(splices), key=lambda item: (item[1].start, item[1].end, item[0]), reverse=True)
    for _, splice in ordered:
        text = text[: splice.start] + splice.text + text[splice.end :]
    return text


def _lookup(node: yaml.MappingNode, key: str) -> tuple[yaml.Node, yaml.Node] | None:
    return next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)


def _is_block(node: yaml.Node | None) -> bool:
    return isinstance(node, yaml.MappingNode) and not node.flow_style and bool(node.value)


def _set(tree: _Tree, path: tuple[str, ...], value: object) -> str:
    where = ".".join(("platform", *path))
    node = tree.platform
    for index, step in enumerate(path):
        if not _is_block(node):
            section = ".".join(("platform", *path[:index]))
            raise EditError(f"{tree.name}: {section} is written in flow style ({{...}}) or empty: edit it by hand")
        found = _lookup(node, step)
        if found is None:
            rest: object = value
            for inner in reversed(path[index + 1 :]):
                rest = {inner: rest}
            return _spliced(tree.text, [_insertion(tree.text, node, None, [f"{flow(step)}: {flow(rest)}"])])
        key, child = found
        if index == len(path) - 1:
            return _spliced(tree.text, [_replacement(tree.text, key, child, flow(value))])
        if not isinstance(child, yaml.MappingNode):
            raise EditError(
                f"{tree.name}: {where}: {'.'.join(('platform', *path[: index + 1]))} is a value, not a section"
            )
        node = child
    raise AssertionError("unreachable: a path has at least one step")


def _merge(tree: _Tree, node: yaml.MappingNode, wanted: Mapping[str, Any], out: list[_Splice], *, exact: bool) -> None:
    """The splices that make the block mapping `node` hold `wanted` (`exact`: and nothing else). A new key goes
    after the one before it in `wanted`; the first, in the place of the first key removed, else at the end."""
    text = tree.text
    indent = node.value[0][0].start_mark.column
    removed = [(k, v) for k, v in node.value if exact and isinstance(k, yaml.ScalarNode) and k.value not in wanted]
    after: yaml.Node | None = None
    for key, value in wanted.items():
        found = _lookup(node, key)
        if found is None:
            lines = [" " * indent + flow(str(key)) + ":"]
            if isinstance(value, Mapping) and value:
                lines += _block(value, indent + INDENT)
            else:
                lines[0] += f" {_scalar(value)}"
            out.append(_insertion(text, node, after, lines, instead_of=None if after else next(iter(removed), None)))
            continue
        key_node, child = found
        after = child
        if isinstance(value, Mapping) and value:
            if _is_block(child):
                assert isinstance(child, yaml.MappingNode)
                _merge(tree, child, value, out, exact=True)
            elif tree.value(child) != value:
                out.append(
                    _block_replacement(text, key_node, child, _block(value, key_node.start_mark.column + INDENT))
                )
        elif _is_block(child) or tree.value(child) != value:
            out.append(_replacement(text, key_node, child, _scalar(value)))
    out += [_removal(text, key_node, child) for key_node, child in removed]


def _replacement(text: str, key: yaml.Node, value_node: yaml.Node, value_text: str) -> _Splice:
    """The key's value replaced by `value_text` on the key's line, the rest of the file as it was."""
    return _Splice(key.end_mark.index, _content_end(text, value_node), ": " + value_text)


def _block_replacement(text: str, key: yaml.Node, value_node: yaml.Node, lines: list[str]) -> _Splice:
    """The key's value replaced by block `lines` under it; a comment after the old value stays on the key's line."""
    end = _content_end(text, value_node)
    line_end = _line_end(text, end)
    return _Splice(key.end_mark.index, line_end, ":" + text[end:line_end] + "\n" + "\n".join(lines))


def _removal(text: str, key: yaml.Node, value_node: yaml.Node) -> _Splice:
    """The key's lines, from its own to its value's last (with the comment on that line), gone."""
    start = text.rfind("\n", 0, key.start_mark.index) + 1
    return _Splice(start, min(len(text), _line_end(text, _content_end(text, value_node)) + 1), "")


def _insertion(
    text: str,
    mapping: yaml.MappingNode,
    after: yaml.Node | None,
    lines: list[str],
    *,
    instead_of: tuple[yaml.Node, yaml.Node] | None = None,
) -> _Splice:
    """New entry lines: after the line where `after`'s value ends (default: the mapping's last value), or where
    the key `instead_of` (being removed) starts; a line given without indentation gets the mapping's."""
    indent = " " * mapping.value[0][0].start_mark.column
    lines = [line if line.startswith(" ") else indent + line for line in lines]
    if instead_of is not None:
        at = text.rfind("\n", 0, instead_of[0].start_mark.index) + 1
        return _Splice(at, at, "\n".join(lines) + "\n")
    at = _line_end(text, _content_end(text, after if after is not None else mapping.value[-1][1]))
    return _Splice(at, at, "\n" + "\n".join(lines))


def _line_end(text: str, index: int) -> int:
    end = text.find("\n", index)
    return len(text) if end < 0 else end


def _content_end(text: str, node: yaml.Node) -> int:
    """Where a value's own text ends: a block collection's end mark is the next key's start, so the comment
    and blank lines before that key are left to it."""
    end = node.end_mark.index
    if not isinstance(node, yaml.CollectionNode) or node.flow_style:
        return end
    start = node.start_mark.index
    lines = text[start:end].split("\n")
    while len(lines) > 1 and (not lines[-1].strip() or lines[-1].lstrip().startswith("#")):
        lines.pop()
    return start + len("\n".join(lines).rstrip())
