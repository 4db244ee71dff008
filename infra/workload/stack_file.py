"""Put measured figures into a stack file's `workload:` section, keeping comments and key order (ruamel.yaml).

Only the keys measured are replaced (`batches_per_day`, each profile's `jobs_per_day` and
`minutes_per_job`); `gpu_utilization`, `baseline`, comments and everything outside `workload:` stay as
they are. A profile or a section that is not there yet is added at the end of its mapping. The command checks
the edited text (`dump`) against the spec before it writes it.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError

from infra.documents import STACK_FILE, DocumentError, read_text
from infra.workload.measure import Figure

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


def apply(platform: CommentedMap, figures: list[Figure]) -> CommentedMap:
    """Set each figure's `written` value under `platform.workload` (created if missing); returns the section."""
    if not isinstance(platform.get("workload"), dict):
        platform["workload"] = CommentedMap()
    section = platform["workload"]
    for figure in figures:
        *parents, leaf = figure.key.split(".")
        node = section
        for parent in parents:
            if not isinstance(node.get(parent), dict):
                node[parent] = CommentedMap()
            node = node[parent]
        node[leaf] = figure.written
    return section


def section_text(section: CommentedMap, header: str) -> str:
    """The `workload:` block as it reads in the stack file (indented under `platform`), to paste."""
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
