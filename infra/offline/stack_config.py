"""Read a stack's config from `Pulumi.yaml` + `Pulumi.<stack>.yaml`, as the Pulumi CLI would pass it.

Encrypted values (`secure: v1:...`) cannot be decrypted offline; they become a visible placeholder
and their keys are marked secret, so the program sees a secret where `pulumi up` would.

A stack file is input like any other: it is read with a size cap, aliases may not expand it past a small
budget (a "billion laughs" file would hang every later step), duplicate keys are refused, provider
credentials must be `secure:`, and every YAML, encoding or shape error is one `StackFileError` line
`<file>:<line>: <reason>`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from infra.config.credentials import PROVIDER_CREDENTIAL_KEYS
from infra.config.errors import format_value
from infra.documents import (
    MAX_SHOWN_NAME,
    STACK_FILE,
    DocumentError,
    check_yaml_events,
    checked_events,
    read_text,
    safe_load,
)
from infra.offline.go_values import go_json_number, resolve_plain
from infra.offline.stack_yaml import Node, Reader, Secret, SubsetError, compose
from infra.untrusted import printable

PROJECT_ROOT = Path(__file__).resolve().parents[2]
KeyPath = tuple[str | int, ...]
"""A place under `config:`: the full key, then mapping keys and list indexes (`("gpu-ci:platform", "pools")`)."""


class StackFileError(DocumentError):
    """A stack file that cannot be read as a Pulumi stack config; str() is one line naming file and line. The one
    error `load_stack_config` raises."""


class StackFileMissingError(StackFileError, FileNotFoundError):
    """No stack file where one was asked for (a FileNotFoundError too, for the callers that say so apart)."""


@dataclass(frozen=True)
class StackConfig:
    project: str
    stack: str
    values: dict[str, Any]
    """Full keys (`gpu-ci:platform`, `gitlab:baseUrl`) to decoded YAML values."""
    secret_keys: tuple[str, ...]
    lines: dict[KeyPath, int] = field(default_factory=dict, compare=False)
    """The line of each key and list item in the stack file (`line_of`)."""
    file: str = ""
    """The stack file's name, for messages (`Pulumi.dev.yaml`)."""

    def as_pulumi_config(self) -> dict[str, str]:
        """Values as the engine hands them to the language host: strings, numbers as Go writes them, objects as
        JSON."""
        return {key: _as_text(value) for key, value in self.values.items()}

    def namespaced(self, key: str) -> str:
        return key if ":" in key else f"{self.project}:{key}"

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(self.namespaced(key), default)

    def line_of(self, path: KeyPath) -> int | None:
        """The 1-based line where the stack file writes `path` (its first key short or namespaced:
        `("platform", "pools", "ci-compile", "max_sise")`), or of the deepest part of it the file writes; None
        where the file writes none of it (a value set by `with_values`)."""
        if not path or not isinstance(path[0], str):
            return None
        full = (self.namespaced(path[0]), *path[1:])
        for end in range(len(full), 0, -1):
            if (line := self.lines.get(full[:end])) is not None:
                return line
        return None

    def located(self, line: str) -> str:
        """A spec error line (`platform.pools.a.max_sise=1: unknown key`) prefixed with the file and the line the
        stack file writes that key at (or its nearest parent), `Pulumi.dev.yaml:40: ...`; other lines as they are."""
        if not self.file:
            return line
        problem = line.removeprefix(f"{self.file}: ")  # the program names the file, the YAML knows the line
        found = self._line_of_problem(problem)
        if found is None:
            return line
        return f"{self.file}:{found}: {problem}" if found else f"{self.file}: {problem}"

    def _line_of_problem(self, problem: str) -> int | None:
        """The line of the key a problem names (0: a key of the spec the file does not write), None for a line
        that names no key (left as it is)."""
        key, sep, _ = problem.partition("=")
        if sep and key.startswith("platform") and " " not in key:  # platform.pools.a.max_sise=1: ...
            first, *rest = key.split(".")
            return self.line_of((first, *(int(part) if part.isdigit() else part for part in rest))) or 0
        top, sep, _ = problem.partition(": ")  # gpu-ci:platfrom: unknown key ...
        if sep and ":" in top and " " not in top:
            return self.lines.get((top,))
        return None

    def with_values(self, values: dict[str, Any], secret_keys: tuple[str, ...] = ()) -> StackConfig:
        """A copy with keys replaced or added (short keys get the project namespace)."""
        merged = {**self.values, **{self.namespaced(k): v for k, v in values.items()}}
        secrets = (*self.secret_keys, *(self.namespaced(k) for k in secret_keys))
        replaced = {self.namespaced(k) for k in values}
        lines = {where: line for where, line in self.lines.items() if where[0] not in replaced}
        return StackConfig(self.project, self.stack, merged, tuple(dict.fromkeys(secrets)), lines, self.file)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return go_json_number(value)
    return json.dumps(value)


def project_name(root: Path = PROJECT_ROOT) -> str:
    """The project's name from `Pulumi.yaml`; StackFileError where it has none."""
    try:
        text = read_text(root / "Pulumi.yaml", STACK_FILE)
        check_yaml_events(text, "Pulumi.yaml", STACK_FILE)
        document = safe_load(text)
    except DocumentError as err:
        raise StackFileError(str(err)) from None
    except yaml.YAMLError as err:  # a second document: the events pass does not see it
        raise StackFileError(f"Pulumi.yaml: not valid YAML: {str(err).splitlines()[0][:200]}") from None
    name = document.get("name") if isinstance(document, dict) else None
    if not isinstance(name, str) or not name:
        raise StackFileError("Pulumi.yaml: no project name (name: gpu-ci)")
    return name


def stack_file(stack: str, root: Path = PROJECT_ROOT, path: Path | None = None) -> Path:
    """Where the stack's config is: the stack file `path` if given, else `Pulumi.<stack>.yaml` in `root`."""
    return path or root / f"Pulumi.{stack}.yaml"


def load_stack_config(stack: str, root: Path = PROJECT_ROOT, path: Path | None = None) -> StackConfig:
    """The config of `Pulumi.<stack>.yaml` (or of the stack file `path`); FileNotFoundError names the file."""
    project = project_name(root)
    given, path = path, stack_file(stack, root, path)
    try:
        missing = not path.exists()
    except OSError as err:  # a name too long for the file system, a directory that cannot be searched
        raise StackFileError(
            f"{printable(str(path), MAX_SHOWN_NAME)}: cannot be read ({err.strerror or err})"
        ) from None
    if missing:
        if given is not None:  # --config FILE: name the file given, not the project's stacks
            what = "a symlink that leads nowhere" if path.is_symlink() else "no such file"
            raise StackFileMissingError(f"{printable(str(path), MAX_SHOWN_NAME)}: {what}, not a stack file")
        raise StackFileMissingError(
            f"no stack file {printable(path.name, MAX_SHOWN_NAME)} in {root} "
            f"(stacks: {', '.join(list_stacks(root)) or 'none'})"
        )
    document, lines = read_stack_file(path)
    name = printable(path.name, MAX_SHOWN_NAME)
    values: dict[str, Any] = {}
    secret_keys: list[str] = []
    written: dict[str, str] = {}
    full_lines: dict[KeyPath, int] = {}
    for key, value in document.items():
        full_key = key if ":" in key else f"{project}:{key}"
        line = lines.get((key,), 1)
        if (other := written.setdefault(full_key, key)) != key:
            raise StackFileError(
                f"{name}:{line}: {format_value(key)} and {format_value(other)} (line {lines.get((other,), 1)}) are "
                f"both {full_key}: keep one"
            )
        if full_key in PROVIDER_CREDENTIAL_KEYS and not isinstance(value, Secret):
            raise StackFileError(
                f"{name}:{line}: {full_key} is a credential stored in plain text: remove it and run pulumi config "
                f"set --secret {full_key} ..."
            )
        decoded, has_secret = _strip_secure(value, full_key)
        values[full_key] = "" if decoded is None else decoded  # the CLI hands a key without a value as ""
        if has_secret:
            secret_keys.append(full_key)
        full_lines |= {(full_key, *where[1:]): at for where, at in lines.items() if where[0] == key}
    return StackConfig(project, stack, values, tuple(secret_keys), full_lines, name)


def read_stack_file(path: Path) -> tuple[dict[str, Any], dict[KeyPath, int]]:
    """The `config:` mapping of a stack file as the Pulumi CLI reads it (stack_yaml.py's subset), and the line of
    each key and item under it (paths start at the config key); StackFileError otherwise."""
    name = printable(path.name, MAX_SHOWN_NAME)
    try:
        text = read_text(path, STACK_FILE)
        events = checked_events(text, name, STACK_FILE)
    except DocumentError as err:
        raise StackFileError(str(err)) from None
    reader = Reader()
    try:
        root = compose(events, text)
        config = _config_of(root, reader)
    except SubsetError as err:
        raise StackFileError(f"{name}:{err.line}: {err}") from None
    lines = {where[1:]: line for where, line in reader.lines.items() if where[:1] == ("config",) and len(where) > 1}
    return config, lines


_TEXT_SETTINGS = ("encryptionsalt", "encryptedkey", "secretsprovider")
"""The stack file's other keys the CLI reads (as text); any other is read and ignored, as the CLI ignores it."""


def _config_of(root: Any, reader: Reader) -> dict[str, Any]:
    """The `config:` mapping of the document `root`, its keys `namespace:key` or a short `key` (SubsetError)."""
    if root is None:
        return {}
    document = reader.value(root, ())
    if not isinstance(document, dict):
        raise SubsetError(1, f"must be a mapping with a config: key, not {_kind(document)}")
    _check_text_keys(_merged_keys(root), "the top-level key {} is not text, which the Pulumi CLI refuses: quote it")
    for key, value in document.items():
        line = reader.lines.get((key,), 1)
        if key == "environment":
            raise SubsetError(
                line,
                "environment: imports a Pulumi ESC environment, whose values the offline tools cannot read (nor "
                "would they describe the deployment): set the values in config: instead",
            )
        if key in _TEXT_SETTINGS and not isinstance(value, str):
            raise SubsetError(line, f"{key} must be text, not {_kind(value)}")
    config = document.get("config")
    if config is None:
        return {}
    config_line = reader.lines.get(("config",), 1)
    if not isinstance(config, dict):
        raise SubsetError(config_line, f"config must be a mapping of keys to values, not {_kind(config)}")
    _check_text_keys(_config_keys(root), "config key {} is not a key like gpu-ci:platform")
    for key in config:
        if not key or key.count(":") > 1 or key.startswith(":") or key.endswith(":"):
            line = reader.lines.get(("config", key), config_line)
            raise SubsetError(line, f"config key {format_value(key)} is not a key like gpu-ci:platform")
    return config


def _check_text_keys(keys: Iterator[Node], reason: str) -> None:
    """Keys the CLI wants as text (those of the document and of `config:`; inside values it formats others as Go's
    %v): a plain key that reads as a number or boolean is refused (read before, so no PlainScalarError here)."""
    for key_node in keys:
        if key_node.style is None and key_node.tag is None and not isinstance(resolve_plain(key_node.value), str):
            raise SubsetError(key_node.line, reason.format(printable(key_node.value, 100)))


def _config_keys(root: Node) -> Iterator[Node]:
    """The key nodes of `config:` (of the last one: a second is refused), those a `<<` merges in included."""
    for key, value in root.pairs():
        if key.kind == "scalar" and key.value == "config" and value.kind == "map":
            yield from _merged_keys(value)


def _merged_keys(node: Node) -> Iterator[Node]:
    for key, value in node.pairs():
        if key.value != "<<":
            yield key
        else:
            for source in value.items if value.kind == "seq" else [value]:
                yield from _merged_keys(source)


def _kind(value: Any) -> str:
    return "a secret" if isinstance(value, Secret) else type(value).__name__


def list_stacks(root: Path = PROJECT_ROOT) -> list[str]:
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in root.glob("Pulumi.*.yaml"))


def _strip_secure(value: Any, where: str) -> tuple[Any, bool]:
    """`value` with each secret a visible placeholder, and whether it held one."""
    if isinstance(value, Secret):
        return f"[secret {where} - encrypted, not readable offline]", True
    if isinstance(value, dict):
        pairs = {k: _strip_secure(v, f"{where}.{k}") for k, v in value.items()}
        return {k: v for k, (v, _) in pairs.items()}, any(s for _, s in pairs.values())
    if isinstance(value, list):
        items = [_strip_secure(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return [v for v, _ in items], any(s for _, s in items)
    return value, False
