"""Set dotted keys under `<project>:platform` in a stack file, changing only the lines of those keys.

A stack file is the reviewed, commented source of a stack's config: an edit must leave every other byte as it
was (comments, key order, quoting, line wraps). So the file is not dumped again (a YAML round-trip rewrites
what it does not understand byte for byte, such as a flow mapping wrapped over two lines); each key is
located in the YAML node tree (with its marks: where each key and value starts and ends) and only its value's
text is replaced, as one flow-style line (`max_size: 3`, `warm: [{days: Mon-Fri, from: "09:00", ...}]`).
A key that is not there is added at the end of its mapping, at that mapping's indentation; a missing section
(`gpu_sharing`) is added as a flow mapping holding the rest of the path.

What cannot be edited that way is refused in one line (`EditError`), nothing written: a file that is not a
stack file, a section written in flow style (`ci-compile: {max_size: 1}`), anchors or aliases (an edit would
change every place that shares the value), a path through a value. `edited` then reads the result back exactly
as `plan` reads a stack file (`infra.offline.stack_config`, from a temporary copy) and refuses it unless the
config is the one intended: the old one with those keys set, nothing else.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from infra.documents import STACK_FILE, DocumentError, check_yaml_events, read_text
from infra.offline.cli_yaml import CliYamlLoader
from infra.offline.stack_config import StackFileError, load_stack_config

Change = tuple[tuple[str, ...], object]
"""A key path under `platform` and the value it gets (plain YAML data)."""
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")


class EditError(ValueError):
    """The stack file cannot be edited as asked; one line naming the file and why."""


def edited(path: Path, stack: str, project: str, settings: Sequence[Change], expected: Any) -> str:
    """The text of the stack file `path` with `settings` set under `<project>:platform`, once it reads back (as
    `plan` reads it) as the old config with the platform `expected`; EditError otherwise."""
    try:
        text = read_text(path, STACK_FILE)
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


def set_keys(text: str, name: str, project: str, settings: Sequence[Change]) -> str:
    """`text` with each setting's value replaced (or added); EditError where the file cannot be edited so."""
    for path, value in settings:
        text = _set(text, name, project, path, value)
    return text


def flow(value: object) -> str:
    """`value` as one line of flow-style YAML that reads back (as the stack-file loader reads it) as `value`."""
    text = _flow(value)
    if _read(text) != value:
        raise EditError(f"{value!r} cannot be written as a YAML value that reads back as itself")
    return text


def _read(text: str) -> object:
    """A value as the stack-file loader (and so the Pulumi CLI) reads it: `yes` and `1e3` differ from PyYAML's."""
    return yaml.load(text, Loader=CliYamlLoader)


def _flow(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        plain = _PLAIN.fullmatch(value) and _read(value) == value
        return value if plain else json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_flow(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_flow(str(key))}: {_flow(item)}" for key, item in value.items()) + "}"
    raise EditError(f"{value!r} is not a YAML value")


def _set(text: str, name: str, project: str, path: tuple[str, ...], value: object) -> str:
    platform = _platform_node(text, name, project)
    where = ".".join(("platform", *path))
    node = platform
    for index, step in enumerate(path):
        _check_block(node, name, ".".join(("platform", *path[:index])))
        found = _lookup(node, step)
        if found is None:
            rest: object = value
            for inner in reversed(path[index + 1 :]):
                rest = {inner: rest}
            return _insert(text, node, step, rest)
        key, child = found
        if index == len(path) - 1:
            return _replace(text, key, child, value)
        if not isinstance(child, yaml.MappingNode):
            raise EditError(f"{name}: {where}: {'.'.join(('platform', *path[: index + 1]))} is a value, not a section")
        node = child
    raise AssertionError("unreachable: a path has at least one step")


def _platform_node(text: str, name: str, project: str) -> yaml.MappingNode:
    try:
        check_yaml_events(text, name, STACK_FILE, yaml.SafeLoader)
        if any(isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) for event in yaml.parse(text)):
            raise EditError(f"{name}: uses YAML anchors or aliases: an edit would change every value they share")
        root = yaml.compose(text, Loader=yaml.SafeLoader)
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
            return found[1]
    raise EditError(f"{name}: no `{project}:platform` mapping under config")


def _lookup(node: yaml.MappingNode, key: str) -> tuple[yaml.Node, yaml.Node] | None:
    return next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)


def _check_block(node: yaml.MappingNode, name: str, where: str) -> None:
    if node.flow_style or not node.value:
        raise EditError(f"{name}: {where} is written in flow style ({{...}}) or empty: edit it by hand")


def _replace(text: str, key: yaml.Node, value_node: yaml.Node, value: object) -> str:
    """The key's value replaced by `value` (on the key's line), the rest of the file as it was."""
    end = _content_end(text, value_node)
    return text[: key.end_mark.index] + ": " + flow(value) + text[end:]


def _insert(text: str, mapping: yaml.MappingNode, key: str, value: object) -> str:
    """A new entry `key: value` after the mapping's last entry, at the mapping's indentation."""
    first_key = mapping.value[0][0]
    indent = " " * first_key.start_mark.column
    end = _content_end(text, mapping.value[-1][1])
    line_end = text.find("\n", end)
    at = len(text) if line_end < 0 else line_end
    return text[:at] + "\n" + indent + f"{flow(key)}: {flow(value)}" + text[at:]


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
