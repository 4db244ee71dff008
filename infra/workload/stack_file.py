"""Put measured figures into a stack file's `workload:` section, keeping comments and key order (ruamel.yaml).

Only what is measured changes: each measured profile's `kinds` (and the profile-level `jobs_per_day`/
`minutes_per_job` they replace), and `batches_per_day` (set while a profile keeps the profile-level form, else
removed). `gpu_utilization`, `time_zone`, `baseline`, comments and everything outside `workload:` stay as they
are. A profile or a section that is not there yet is added at the end of its mapping. The command checks the
edited text (`dump`) against the spec before it writes it.
"""

from __future__ import annotations

import copy
import io
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import CommentMark, YAMLError
from ruamel.yaml.scalarstring import DoubleQuotedScalarString
from ruamel.yaml.tokens import CommentToken

from infra.documents import STACK_FILE, DocumentError, read_text
from infra.workload.figures import LEGACY_KEYS, WorkloadEdit

SECTION_INDENT = 4
"""`workload:` sits under `config:` and `<project>:platform:` in a Pulumi stack file."""


def _yaml() -> YAML:
    yaml = YAML()  # round-trip
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


class EditError(ValueError):
    """The stack file cannot be edited (unreadable, or not shaped like a stack file); one line."""


def load(path: Path) -> Any:
    """The stack file as a round-trip document, read within the stack-file budget."""
    try:
        return _yaml().load(read_text(path, STACK_FILE))
    except DocumentError as err:
        raise EditError(str(err)) from None
    except (YAMLError, RecursionError) as err:
        raise EditError(f"{path.name}: cannot be edited: {str(err).splitlines()[0][:200]}") from None


def platform_node(document: Any, project: str) -> CommentedMap:
    """The `platform` mapping of a stack document (`<project>:platform`, or `platform`)."""
    config = document.get("config") if isinstance(document, dict) else None
    if not isinstance(config, dict):
        raise EditError("no `config:` mapping in the stack file")
    for key in (f"{project}:platform", "platform"):
        if isinstance(config.get(key), dict):
            return config[key]
    raise EditError(f"no `{project}:platform` in the stack file's config")


KIND_KEYS = ("class", "jobs_per_day", "minutes_per_job", "minutes_p90", "days", "from", "to")
"""A kind's keys, in the order a new kind is written."""
CLOCK_KEYS = ("from", "to")
"""Quoted: YAML 1.1 (PyYAML, which reads the stack file) takes a plain `13:00` for the number 780."""


def apply(platform: CommentedMap, edit: WorkloadEdit) -> CommentedMap:
    """Write `edit` under `platform.workload` (created if missing); returns the section.

    Each profile edited gets exactly the kinds of the edit: a kind already there is updated in place (its
    comments and key order kept, in block style: ruamel would join a flow mapping's lines into one), a new one
    is added at the end, one the edit lacks is removed, and the profile-level keys the kinds replace go (the
    `kinds` key taking the place of the first). Full-line comments that followed a removed key stay where they
    were in the file."""
    if not isinstance(platform.get("workload"), dict):
        platform["workload"] = CommentedMap()
    section = platform["workload"]
    if edit.batches_per_day is not None:
        section["batches_per_day"] = edit.batches_per_day
    elif "batches_per_day" in section:
        _delete(section, "batches_per_day")
    if edit.kinds:
        if not isinstance(section.get("profiles"), dict):
            section["profiles"] = CommentedMap()
        section.fa.set_block_style()  # a flow mapping cannot hold the block-style kinds
        section["profiles"].fa.set_block_style()
    for name, kinds in edit.kinds.items():
        profiles = section["profiles"]
        if not isinstance(profiles.get(name), dict):
            profiles[name] = CommentedMap()
        _set_kinds(profiles[name], kinds)
    return section


def _set_kinds(profile: CommentedMap, kinds: dict[str, dict[str, Any]]) -> None:
    profile.fa.set_block_style()
    replaced = [key for key in LEGACY_KEYS if key in profile]
    if not isinstance(profile.get("kinds"), dict):
        at = list(profile).index(replaced[0]) if replaced else len(profile)
        profile.insert(at, "kinds", CommentedMap())
    node = profile["kinds"]
    node.fa.set_block_style()
    for kind, values in kinds.items():
        if not isinstance(node.get(kind), dict):
            node[kind] = CommentedMap()
        entry = node[kind]
        entry.fa.set_block_style()
        for key in (k for k in KIND_KEYS if k in values):
            value = values[key]
            entry[key] = DoubleQuotedScalarString(value) if key in CLOCK_KEYS else value
        for key in [key for key in entry if key not in values]:
            _delete(entry, key)
    # Deleted last, so that the comments they carry land after what now precedes them, filled in.
    for kind in [kind for kind in node if kind not in kinds]:
        _delete(node, kind)
    for key in replaced:
        _delete(profile, key)


def _delete(node: CommentedMap, key: str) -> None:
    """Remove `key`; the full-line comments ruamel keeps with it (those after its value, up to the next key) move
    to what now precedes that place, so that a comment introducing the next key or section stays. The comment on
    the key's own line goes with it."""
    keys = list(node)
    lines = _following_lines(node, key)
    del node[key]
    node.ca.items.pop(key, None)
    if not lines:
        return
    before = keys[keys.index(key) - 1] if keys.index(key) > 0 else None
    if before is None:
        comment = node.ca.comment
        if comment and comment[0] is not None:
            comment[0].value += lines
        else:
            node.ca.comment = [CommentToken("\n" + lines, CommentMark(0), None), None]
        return
    holder, leaf = _last_leaf(node, before)
    slot = holder.ca.items.setdefault(leaf, [None, None, None, None])
    if slot[2] is None:
        slot[2] = CommentToken("\n" + lines, CommentMark(0), None)
    else:
        slot[2].value += lines


def _following_lines(node: CommentedMap, key: str) -> str:
    """The full-line comments after `key`'s value (held by it, or by the last key deep inside its value)."""
    holder, leaf = _last_leaf(node, key)
    slot = holder.ca.items.get(leaf)
    token = slot[2] if slot and len(slot) > 2 else None
    if token is None:
        return ""
    text = token.value
    return text[text.index("\n") + 1 :] if "\n" in text else ""


def _trim_following_lines(node: CommentedMap, key: str) -> None:
    """Drop the full-line comments after `key`'s value, keeping the comment on its own line."""
    holder, leaf = _last_leaf(node, key)
    slot = holder.ca.items.get(leaf)
    token = slot[2] if slot and len(slot) > 2 else None
    if token is not None and "\n" in token.value:
        token.value = token.value[: token.value.index("\n") + 1]


def _last_leaf(node: CommentedMap, key: str) -> tuple[CommentedMap, str]:
    """The mapping and key whose comment slot holds what follows `key`'s value: `key` itself when its value is a
    scalar, else the last key of its value, all the way down."""
    holder, leaf = node, key
    while isinstance(holder[leaf], CommentedMap) and len(holder[leaf]):
        holder = holder[leaf]
        leaf = list(holder)[-1]
    return holder, leaf


def section_text(section: CommentedMap, header: str) -> str:
    """The `workload:` block as it reads in the stack file (indented under `platform`), to paste."""
    section = copy.deepcopy(section)
    if section:
        _trim_following_lines(section, list(section)[-1])  # they introduce what follows `workload:` in the file
    out = io.StringIO()
    _yaml().dump({"workload": section}, out)
    pad = " " * SECTION_INDENT
    body = "".join(pad + line if line.strip() else line for line in out.getvalue().splitlines(keepends=True))
    return "".join(f"{pad}# {line}\n" for line in header.splitlines()) + body


def dump(document: Any) -> str:
    """The stack file's text with the edits: what `write` puts in the file, to check before it does."""
    out = io.StringIO()
    _yaml().dump(document, out)
    return out.getvalue()


def write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as err:
        raise EditError(f"{path.name}: cannot be written ({err.strerror or err})") from None
