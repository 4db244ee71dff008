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
import re
from dataclasses import dataclass
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
    read_text,
    safe_load,
)
from infra.offline.cli_yaml import CliNumberError, CliYamlLoader, as_the_cli_hands
from infra.untrusted import printable

PROJECT_ROOT = Path(__file__).resolve().parents[2]


class StackFileError(DocumentError):
    """A stack file that cannot be read as a Pulumi stack config; str() is one line naming file and line."""


@dataclass(frozen=True)
class StackConfig:
    project: str
    stack: str
    values: dict[str, Any]
    """Full keys (`gpu-ci:platform`, `gitlab:baseUrl`) to decoded YAML values."""
    secret_keys: tuple[str, ...]

    def as_pulumi_config(self) -> dict[str, str]:
        """Values as the engine hands them to the language host: strings, objects as JSON."""
        return {key: value if isinstance(value, str) else json.dumps(value) for key, value in self.values.items()}

    def namespaced(self, key: str) -> str:
        return key if ":" in key else f"{self.project}:{key}"

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(self.namespaced(key), default)

    def with_values(self, values: dict[str, Any], secret_keys: tuple[str, ...] = ()) -> StackConfig:
        """A copy with keys replaced or added (short keys get the project namespace)."""
        merged = {**self.values, **{self.namespaced(k): v for k, v in values.items()}}
        secrets = (*self.secret_keys, *(self.namespaced(k) for k in secret_keys))
        return StackConfig(self.project, self.stack, merged, tuple(dict.fromkeys(secrets)))


def project_name(root: Path = PROJECT_ROOT) -> str:
    return str(safe_load((root / "Pulumi.yaml").read_text(encoding="utf-8"))["name"])


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
            raise FileNotFoundError(f"{printable(str(path), MAX_SHOWN_NAME)}: {what}, not a stack file")
        raise FileNotFoundError(
            f"no stack file {printable(path.name, MAX_SHOWN_NAME)} in {root} "
            f"(stacks: {', '.join(list_stacks(root)) or 'none'})"
        )
    document, lines = read_stack_file(path)
    values: dict[str, Any] = {}
    secret_keys: list[str] = []
    written: dict[str, str] = {}
    for key, value in document.items():
        full_key = key if ":" in key else f"{project}:{key}"
        if (other := written.setdefault(full_key, key)) != key:
            raise StackFileError(
                f"{path.name}:{lines.get(key, 1)}: {format_value(key)} and {format_value(other)} (line "
                f"{lines.get(other, 1)}) are both {full_key}: keep one"
            )
        decoded, has_secret = _strip_secure(_json_keys(value), full_key)
        if full_key in PROVIDER_CREDENTIAL_KEYS and not (isinstance(value, dict) and set(value) == {"secure"}):
            raise StackFileError(
                f"{path.name}:{lines.get(key, 1)}: {full_key} is a credential stored in plain text: remove it and "
                f"run pulumi config set --secret {full_key} ..."
            )
        try:
            decoded = as_the_cli_hands(decoded, full_key)
        except CliNumberError as err:
            raise StackFileError(f"{path.name}:{lines.get(key, 1)}: {err}") from None
        values[full_key] = "" if decoded is None else decoded  # the CLI hands a key without a value as ""
        if has_secret:
            secret_keys.append(full_key)
    return StackConfig(project, stack, values, tuple(secret_keys))


def read_stack_file(path: Path) -> tuple[dict[str, Any], dict[str, int]]:
    """The `config:` mapping of a stack file, and the line of each of its keys; StackFileError otherwise."""
    name = path.name
    try:
        text = read_text(path, STACK_FILE)
        check_yaml_events(text, name, STACK_FILE)
    except DocumentError as err:
        raise StackFileError(str(err)) from None
    loader = CliYamlLoader(text)  # plain scalars typed as the Pulumi CLI types them (cli_yaml.py)
    try:
        root = loader.get_single_node()
        if root is None:
            return {}, {}
        _check_nodes(root, loader)
        document = loader.construct_document(root)
    except StackFileError as err:
        raise StackFileError(f"{name}:{err}") from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{name}:{mark.line + 1}" if mark is not None else name
        raise StackFileError(f"{where}: not valid YAML: {err.problem or err.context}") from None
    except yaml.reader.ReaderError as err:
        line = text[: err.position].count("\n") + 1
        raise StackFileError(f"{name}:{line}: not a readable stack file: {err.reason}") from None
    except (yaml.YAMLError, ValueError, RecursionError) as err:
        raise StackFileError(f"{name}: not a readable stack file: {str(err).splitlines()[0][:200]}") from None
    finally:
        loader.dispose()
    if not isinstance(document, dict) or not isinstance(root, yaml.MappingNode):
        raise StackFileError(f"{name}:1: must be a mapping with a config: key, not {type(document).__name__}")
    config = document.get("config")
    config_node = next((v for k, v in root.value if k.value == "config"), None)
    if config is None:
        return {}, {}
    if not isinstance(config, dict) or not isinstance(config_node, yaml.MappingNode):
        line = config_node.start_mark.line + 1 if config_node is not None else 1
        raise StackFileError(f"{name}:{line}: config must be a mapping of keys to values, not {type(config).__name__}")
    lines = {
        str(key_node.value): key_node.start_mark.line + 1
        for key_node, _ in config_node.value
        if isinstance(key_node, yaml.ScalarNode)
    }
    _check_config_keys(name, config, config_node, lines)
    return config, lines


def _check_config_keys(name: str, config: dict[Any, Any], node: yaml.MappingNode, lines: dict[str, int]) -> None:
    """Every key of `config:` is text of the form `namespace:key` (or a short `key`), as the CLI requires."""
    for key_node, _ in node.value:  # a key YAML reads as other than text the CLI refuses (no namespace:key)
        if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:str":
            line = key_node.start_mark.line + 1
            raise StackFileError(
                f"{name}:{line}: config key {printable(key_node.value, 100)} is not a key like gpu-ci:platform"
            )
    for key in config:
        if not isinstance(key, str) or not key or key.count(":") > 1 or key.startswith(":") or key.endswith(":"):
            line = lines.get(str(key)[:100], node.start_mark.line + 1)
            raise StackFileError(f"{name}:{line}: config key {format_value(key)} is not a key like gpu-ci:platform")


_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
_BASE_60 = re.compile(r"^[-+]?(?:[1-9][0-9_]*(?::[0-5]?[0-9])+|[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*)$")
"""What YAML 1.1 reads as a sexagesimal integer (`8:00`, not `09:00`) or float (`1:30.5`)."""
_MAX_NUMBER_TEXT = 100


def _read_otherwise(node: yaml.ScalarNode) -> tuple[str, str] | None:
    """A plain scalar a YAML 1.1 reader (PyYAML, older tools) reads otherwise than Pulumi's YAML 1.2, where the
    loader does not simply follow the CLI (cli_yaml.py): a time `8:00` is the base-60 number 480 there, a date a
    timestamp, both text to the CLI; refused, so the file means one thing to every reader. Quoted, each is text."""
    if node.style:  # quoted or a block scalar: text (libyaml says '' for plain, PyYAML None)
        return None
    if node.tag == "tag:yaml.org,2002:timestamp":
        return "a date", "text by Pulumi"
    if _BASE_60.match(node.value):  # text to the CLI's YAML 1.2 (and so to CliYamlLoader): a number to YAML 1.1
        return "a base-60 number", "text by Pulumi"
    return None


_DATA_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "seq", "map", "merge")
)
"""The YAML types a stack config holds, as Pulumi hands it to the program (JSON): text, numbers, booleans, null,
lists and mappings (and `<<` merge keys). `!!binary`, `!!set`, `!!omap`, `!!pairs` and an explicit
`!!timestamp` build values no JSON holds; PyYAML's safe loader refuses `!!python/...` and custom tags itself."""


def _check_nodes(root: yaml.Node, loader: Any) -> None:
    """Refuse duplicate keys (as written, or once read: `8` and `010` are both 8), types no stack config holds
    and numbers too long to convert (checked once per node, aliases included), each at its line and key."""
    seen_nodes: set[int] = set()
    pending: list[tuple[yaml.Node, str]] = [(root, "")]
    while pending:
        node, where = pending.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        line = node.start_mark.line + 1
        if isinstance(node, yaml.ScalarNode) and node.tag in _NUMBER_TAGS and len(node.value) > _MAX_NUMBER_TEXT:
            raise StackFileError(f"{line}: a number of {len(node.value)} characters")
        if isinstance(node, yaml.ScalarNode) and (readings := _read_otherwise(node)):
            here, there = readings
            raise StackFileError(
                f"{line}: {printable(node.value, 40)}{_at(where)} unquoted is read as {here} here and as {there}: "
                "quote it"
            )
        if node.tag not in _DATA_TAGS and (isinstance(node, yaml.ScalarNode) or node.tag.startswith(_YAML_TAG)):
            tag = node.tag.replace(_YAML_TAG, "!!")
            raise StackFileError(
                f"{line}: {printable(tag, 40)}{_at(where)} makes a value no stack config holds (Pulumi hands the "
                "program JSON): write text, a number, a boolean, a list or a mapping"
            )
        if isinstance(node, yaml.MappingNode):
            keys: dict[str, yaml.Node] = {}
            for key, value in node.value:
                name = _read_key(key, loader) if isinstance(key, yaml.ScalarNode) and key.tag in _KEY_TAGS else None
                if name is not None:
                    if (first := keys.get(name)) is not None:
                        raise StackFileError(f"{key.start_mark.line + 1}: duplicate key {_both(first, key, name)}")
                    keys[name] = key
                step = name if name is not None else "?"
                pending += ((key, where), (value, f"{where}.{step}" if where else step))
        elif isinstance(node, yaml.SequenceNode):
            pending += ((item, f"{where}[{index}]") for index, item in enumerate(node.value))


def _at(where: str) -> str:
    """` at <key path>` for a message about the node at `where` (nothing at the root): made only for a message,
    not for each of a file's nodes."""
    return f" at {printable(where, 120)}" if where else ""


_YAML_TAG = "tag:yaml.org,2002:"
_KEY_TAGS = _DATA_TAGS - {f"{_YAML_TAG}merge", f"{_YAML_TAG}seq", f"{_YAML_TAG}map"}


def _read_key(node: yaml.ScalarNode, loader: Any) -> str:
    """A scalar key as the program gets it: JSON keys are text, so `8`, `010` (octal 8 in YAML 1.1) and `"8"`
    are one key, `true` and `yes` another."""
    value = loader.construct_object(node)
    return value if isinstance(value, str) else json.dumps(value)


def _both(first: yaml.Node, second: yaml.Node, name: str) -> str:
    """`'gpu-ci:x'`, or `8 (line 3) and 010, both read as '8'` when two spellings collapse into one key."""
    if first.value == second.value:
        return format_value(second.value)
    return (
        f"{format_value(first.value)} (line {first.start_mark.line + 1}) and {format_value(second.value)}, both read "
        f"as {format_value(name)}: keep one"
    )


def list_stacks(root: Path = PROJECT_ROOT) -> list[str]:
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in root.glob("Pulumi.*.yaml"))


def _json_keys(value: Any) -> Any:
    """`value` with every mapping key as text, as JSON (and so the program under `pulumi up`) has it: `8:` is
    `"8"` (two keys that would become one are refused when the file is read)."""
    if isinstance(value, dict):
        return {k if isinstance(k, str) else json.dumps(k): _json_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_keys(v) for v in value]
    return value


def _strip_secure(value: Any, where: str) -> tuple[Any, bool]:
    if isinstance(value, dict) and set(value) == {"secure"}:
        return f"[secret {where} - encrypted, not readable offline]", True
    if isinstance(value, dict):
        pairs = {k: _strip_secure(v, f"{where}.{k}") for k, v in value.items()}
        return {k: v for k, (v, _) in pairs.items()}, any(s for _, s in pairs.values())
    if isinstance(value, list):
        items = [_strip_secure(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return [v for v, _ in items], any(s for _, s in items)
    return value, False
