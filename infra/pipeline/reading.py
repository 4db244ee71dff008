"""A pipeline file or include read as GitLab reads it, within the documents' budget (pure: no Pulumi import).

Every file goes through `infra.documents`: a regular file inside the repository (a symlink that leaves it is
refused, its content never read, so never echoed), at most 1 MiB, and one pass over its YAML events (depth,
aliases, the values they expand to) before libyaml builds a node: 30,000 nested brackets crash libyaml's
composer, ten lines of aliases expand to a billion values. Then GitLab's YAML: the `!reference` tag and a
`spec:` header document.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from infra.documents import MERGED_PIPELINE, PIPELINE_FILE, Budget, DocumentError, check_yaml_events, decode, read_text
from infra.pipeline.resolved import Reference, ResolveError

if TYPE_CHECKING:
    _SafeLoader = yaml.SafeLoader
else:
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when built with it


class GitlabLoader(_SafeLoader):
    """SafeLoader that accepts GitLab's `!reference` tag."""


def _reference(loader: Any, node: yaml.Node) -> Reference:
    if not isinstance(node, yaml.SequenceNode):
        raise yaml.constructor.ConstructorError(
            None, None, "!reference must be a list like [job, key]", node.start_mark
        )
    return Reference(loader.construct_sequence(node, deep=True))


GitlabLoader.add_constructor("!reference", _reference)


def read_file(path: Path, root: Path, shown: str) -> str:
    """The text of a pipeline file or local include (`shown`: its name in messages); ResolveError otherwise."""
    try:
        return read_text(path, PIPELINE_FILE, root=root, name=shown)
    except DocumentError as err:
        raise _unreadable(err, shown) from None


def _unreadable(err: DocumentError, shown: str) -> ResolveError:
    """check-ci's lines name the file first, the line last: `file: what (line N)`, not `file:N: what`."""
    text = str(err)
    line, sep, rest = text.removeprefix(f"{shown}:").partition(": ")
    if text.startswith(f"{shown}:") and sep and line.isdigit():
        return ResolveError(f"{shown}: {rest} (line {line})")
    return ResolveError(text)


def read_yaml(text: str, shown: str, budget: Budget = PIPELINE_FILE) -> Any:
    """One configuration document; a `spec: inputs:` header document before it is skipped."""
    return read_counted(text, shown, budget)[0]


def read_counted(text: str, shown: str, budget: Budget = PIPELINE_FILE) -> tuple[Any, int]:
    """The document and the values it expands to (aliases counted where used), within `budget`."""
    try:
        decode(text.encode("utf-8", errors="replace"), shown, budget)  # the byte cap, for text not read here
        values = check_yaml_events(text, shown, budget, loader=GitlabLoader)
    except DocumentError as err:
        raise _unreadable(err, shown) from None
    try:
        documents = [d for d in yaml.load_all(text, Loader=GitlabLoader) if d is not None]
    except yaml.YAMLError as err:
        problem = str(getattr(err, "problem", None) or str(err).splitlines()[0])
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ResolveError(f"{shown}: not valid YAML: {problem}{where}") from None
    except (ValueError, RecursionError) as err:  # an integer of more than 4300 digits
        raise ResolveError(f"{shown}: not readable YAML: {str(err).splitlines()[0][:120]}") from None
    if len(documents) == 2 and isinstance(documents[0], dict) and set(documents[0]) == {"spec"}:
        return documents[1], values
    if len(documents) > 1:
        raise ResolveError(f"{shown}: {len(documents)} YAML documents; GitLab reads one (after a spec: header)")
    return (documents[0] if documents else {}), values


def read_merged(text: str, shown: str) -> Any:
    """GitLab's merged YAML (`--online`): every include in one document, hence its own budget."""
    return read_yaml(text, shown, MERGED_PIPELINE)
