"""Compare two offline plans (`python -m infra plan --json`) resource by resource, keyed by URN.

For merge requests whose pipeline has no cloud access (forks, unprotected branches): the base and the
head are each planned offline, and this says what the head would create, delete or change, laid out like
`pulumi preview --diff` (same markers, same `Resources:` summary), so one summary parser and one note
template serve both. It compares what the program would *send* (inputs and resource options); it cannot
see the cloud's state. A change of a field the provider replaces on (`REPLACE_ON`: a pool's node type,
a namespace's name, ...) is shown as a replacement (`+-`), as `pulumi preview` would; a replacement the
provider decides from state alone is only visible to `pulumi preview`.

Secrets: the plans already show every secret as "[secret]" (`plan --json` masks them before writing)
and this module reads nothing else, so a secret can neither appear here nor be compared.

Hostile plans: a document is checked field by field before it is compared (`check_document`, through
`infra.review.schema`); every printed line has its control characters escaped, a value cannot forge a
line of its own (a name, an identity, a multi-line text's lines are all indented or quoted), and texts are
compared line by line only within `MAX_TEXT_LINES` (difflib is quadratic: two 20,000-line texts take
seconds).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from infra.cloud.names import T
from infra.review.digest import Side, derived_lines, figure_lines, is_derived, policy_lines, side
from infra.review.schema import PlanDocumentError, check_plan
from infra.untrusted import printable

__all__ = [  # PlanDocumentError too: what check_document raises
    "DEFAULT_OPTIONS",
    "IDENTITY_KEYS",
    "MARKERS",
    "MISSING",
    "OPS",
    "REPLACE_ON",
    "Change",
    "PlanDiff",
    "PlanDocumentError",
    "ResourceChange",
    "check_document",
    "diff_plans",
    "diff_values",
    "flatten",
    "render_diff",
    "replace_reasons",
]


OPS: Final = ("create", "update", "replace", "delete")
"""Operations in the order `pulumi preview` prints them, with its markers below."""
MARKERS: Final = {"create": "+", "update": "~", "replace": "+-", "delete": "-"}

_POOL: Final = ("nodeType", "zone", "name", "clusterId")
_CLUSTER: Final = ("type", "privateNetworkId")
_REGISTRY_NAMESPACE: Final = ("name", "region")
_K8S_IDENTITY: Final = ("metadata.name", "metadata.namespace")
REPLACE_ON: Final[dict[str, tuple[str, ...]]] = {
    T.POOL: _POOL,
    "scaleway:index/kubernetesNodePool:KubernetesNodePool": _POOL,
    T.CLUSTER: _CLUSTER,
    "scaleway:index/kubernetesCluster:KubernetesCluster": _CLUSTER,
    T.USER_RUNNER: ("runnerType", "projectId", "groupId"),
    T.REGISTRY_NAMESPACE: _REGISTRY_NAMESPACE,
    "scaleway:index/registryNamespace:RegistryNamespace": _REGISTRY_NAMESPACE,
    **{
        kind: (*_K8S_IDENTITY, *fields)
        for kind, fields in {
            T.NAMESPACE: (),
            T.NETWORK_POLICY: (),
            T.CILIUM_NETWORK_POLICY: (),
            T.SERVICE_ACCOUNT: (),
            T.ROLE: (),
            T.CLUSTER_ROLE: (),
            T.CRON_JOB: (),
            T.CLUSTER_POLICY_PATCH: (),
            T.CONFIG_MAP: ("binaryData", "data"),
            T.SECRET: ("data", "stringData", "type"),
            T.DEPLOYMENT: ("spec.selector",),
            T.JOB: ("spec.completions", "spec.parallelism", "spec.selector", "spec.template"),
            T.ROLE_BINDING: ("roleRef",),
            T.CLUSTER_ROLE_BINDING: ("roleRef",),
            T.PRIORITY_CLASS: (),
        }.items()
    },
    T.HELM_RELEASE: ("name", "namespace"),
}
"""Input paths whose change makes the provider replace the resource (ForceNew in the Scaleway and GitLab
providers): the offline diff marks such an update `+-` like `pulumi preview`. Kubernetes, as Pulumi's provider
(the built commit, v4.25.0: `pkg/provider/diff.go`'s `forceNew`, `helm_release.go`) decides: an object's name and
namespace; a ConfigMap's and a Secret's contents (neither `enableConfigMapMutable` nor `enableSecretMutable` is
set); a Deployment's selector; a Job's template, selector, completions and parallelism; a binding's roleRef; a
Helm release's name and namespace. A PriorityClass's `value`, immutable in the API server, is absent from the
provider's table (alone, it is an update the API server refuses): the program names each class with its value
(infra/model/warm.py), so a new value comes with a new name, which the provider replaces."""

IDENTITY_KEYS: Final = ("name", "pool", "key")
"""A list of objects that all carry one of these (unique) is compared by it, not by position: inserting
a pool or an env var then changes one entry, not every entry after it."""

DEFAULT_OPTIONS: Final[dict[str, Any]] = {
    "protect": False,
    "ignore_changes": [],
    "delete_before_replace": False,
    "import_id": "",
    "read": False,
    "additional_secret_outputs": [],
}
"""Resource options a created resource is listed with only when they differ from these defaults."""

INDENT: Final = "    "
CONTEXT: Final = 1
"""Unchanged lines shown around each changed line of a text (a reviewer needs the key, not the file)."""
MAX_TEXT_LINES: Final = 2000
"""Lines of one multi-line value compared line by line; a longer one is said to have changed."""
MAX_TEXT_LINES_TOTAL: Final = 20_000
"""Lines compared line by line in one diff (about two seconds of difflib at worst); later texts are summed up."""
_PLAIN_IDENTITY: Final = re.compile(r"[\w.:/@+-]+")


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()
"""The value of a path on the side where it does not exist."""


@dataclass(frozen=True)
class Change:
    """One leaf that differs: `path` in the inputs (or options), `old` and/or `new` (else MISSING)."""

    path: str
    old: Any = MISSING
    new: Any = MISSING


@dataclass(frozen=True)
class ResourceChange:
    op: str
    """`create`, `update` or `delete`."""
    urn: str
    type: str
    name: str
    inputs: tuple[Change, ...] = ()
    options: tuple[Change, ...] = ()
    protected: bool = False
    """A deleted or replaced resource that is protected in the base: `pulumi up` refuses until unprotected."""
    replace_reasons: tuple[str, ...] = ()
    """For `replace`: the changed input paths that force it (`REPLACE_ON`)."""


@dataclass(frozen=True)
class PlanDiff:
    stack: str
    resources: tuple[ResourceChange, ...]
    unchanged: int
    outputs: tuple[Change, ...]
    base: Side | None = None
    """The base's figures and policy verdict (`infra.review.digest`): None for a diff of resources only."""
    head: Side | None = None

    @property
    def empty(self) -> bool:
        return not self.resources and not self.outputs

    def counts(self) -> dict[str, int]:
        """Resources per operation, only the operations that occur, in OPS order."""
        counts = {op: sum(1 for r in self.resources if r.op == op) for op in OPS}
        return {op: n for op, n in counts.items() if n}


def check_document(document: Any, what: str) -> Mapping[str, Any]:
    """The document, if every field the diff reads has its type (`schema.check_plan`); else PlanDocumentError."""
    check_plan(document, what)
    return document  # a Mapping: check_plan refused anything else


def diff_plans(base: Mapping[str, Any], head: Mapping[str, Any]) -> PlanDiff:
    """What the head plan changes relative to the base plan, resource by resource (by URN)."""
    before = {r["urn"]: r for r in base["resources"]}
    after = {r["urn"]: r for r in head["resources"]}
    changes: list[ResourceChange] = []
    unchanged = 0
    for urn in sorted(before.keys() | after.keys()):
        old, new = before.get(urn), after.get(urn)
        if old is None:
            changes.append(_created(after[urn]))
        elif new is None:
            changes.append(
                ResourceChange("delete", urn, old["type"], old["name"], protected=bool(_options(old).get("protect")))
            )
        else:
            inputs = diff_values(old.get("inputs") or {}, new.get("inputs") or {})
            options = diff_values(_options(old), _options(new))
            reasons = replace_reasons(new["type"], inputs)
            if reasons:
                protected = bool(_options(old).get("protect"))
                changes.append(
                    ResourceChange("replace", urn, new["type"], new["name"], inputs, options, protected, reasons)
                )
            elif inputs or options:
                changes.append(ResourceChange("update", urn, new["type"], new["name"], inputs, options))
            else:
                unchanged += 1
    outputs = diff_values(base.get("outputs") or {}, head.get("outputs") or {})
    return PlanDiff(str(head.get("stack", "")), tuple(changes), unchanged, outputs, side(base), side(head))


def replace_reasons(type_token: str, inputs: tuple[Change, ...]) -> tuple[str, ...]:
    """The fields of `REPLACE_ON[type_token]` that `inputs` change (a field, or anything under it)."""
    fields = REPLACE_ON.get(type_token, ())
    changed = [c.path for c in inputs]
    return tuple(f for f in fields if any(p == f or p.startswith((f"{f}.", f"{f}[")) for p in changed))


def _options(resource: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in (resource.get("options") or {}).items() if k != "dependencies"}


def _created(resource: Mapping[str, Any]) -> ResourceChange:
    inputs = tuple(Change(path, new=value) for path, value in flatten(resource.get("inputs") or {}).items())
    options = tuple(
        Change(key, new=value)
        for key, value in sorted(_options(resource).items())
        if key in DEFAULT_OPTIONS and value != DEFAULT_OPTIONS[key]
    )
    return ResourceChange("create", resource["urn"], resource["type"], resource["name"], inputs, options)


def diff_values(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[Change, ...]:
    """Leaf-by-leaf differences between two nested values, by path, in path order."""
    before, after = flatten(old), flatten(new)
    return tuple(
        Change(path, before.get(path, MISSING), after.get(path, MISSING))
        for path in sorted(before.keys() | after.keys())
        if before.get(path, MISSING) != after.get(path, MISSING)
    )


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Leaves by path: `autoscalerConfig.expander`, `labels["k8s.scaleway.com/x"]`, `capacity[pool=ci-compile]`.

    Lists of scalars are one leaf (a reorder is a change of the list); lists of objects with a unique
    identity key are keyed by it; other lists by position. Empty containers are leaves, so that a key
    that appears empty is still a change.
    """
    if isinstance(value, Mapping):
        if not value:
            return {prefix: {}} if prefix else {}
        leaves: dict[str, Any] = {}
        for key in sorted(value, key=str):
            leaves.update(flatten(value[key], _join(prefix, str(key))))
        return leaves
    if isinstance(value, list) and value and not all(_is_scalar(item) for item in value):
        identity = _identity_key(value)
        leaves = {}
        for index, item in enumerate(value):
            if identity:  # the identity is in the path already
                rest = {k: v for k, v in item.items() if k != identity}
                leaves.update(flatten(rest, f"{prefix}[{identity}={_identity(item[identity])}]"))
            else:
                leaves.update(flatten(item, f"{prefix}[{index}]"))
        return leaves
    return {prefix: value}


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, (Mapping, list))


def _identity_key(items: list[Any]) -> str | None:
    for key in IDENTITY_KEYS:
        if all(isinstance(item, Mapping) and key in item and _is_scalar(item[key]) for item in items):
            values = [item[key] for item in items]
            if len(set(map(_identity, values))) == len(values):
                return key
    return None


def _identity(value: Any) -> str:
    """An identity as the path shows it: a plain name as is (`pool=ci-compile`), anything else as JSON, so
    that no value can close the brackets or look like another one."""
    if isinstance(value, str) and _PLAIN_IDENTITY.fullmatch(value):
        return value
    return json.dumps(value, sort_keys=True)


def _join(prefix: str, key: str) -> str:
    plain = key.replace("_", "").replace("-", "").isalnum()
    segment = key if plain else json.dumps(key)
    if not prefix:
        return segment
    return f"{prefix}.{segment}" if plain else f"{prefix}[{segment}]"


def render_diff(diff: PlanDiff, base_label: str = "base", head_label: str = "head", *, full: bool = False) -> str:
    """The diff as text in `pulumi preview --diff`'s markers, in a reviewer's order: the resources and their
    `Resources:` summary, the cost and wait deltas with the target's verdict, the policy result, then the outputs,
    the simulation's own figures (`cost...`) one line per group unless `full` (`infra.review.digest`)."""
    header = [
        f"Offline plan diff of stack {diff.stack!r}: {base_label} -> {head_label}",
        "(what the program would send, compared by URN; secrets show as [secret] and are not compared)",
    ]
    texts = _TextBudget()
    blocks = [header, [line for resource in diff.resources for line in _render_resource(resource, texts, full)]]
    blocks.append(_summary(diff))
    if diff.base is not None and diff.head is not None:
        blocks += [figure_lines(diff.base, diff.head), policy_lines(diff.base, diff.head)]
    if diff.outputs:
        shown = diff.outputs if full else tuple(c for c in diff.outputs if not is_derived(c.path))
        seen = _texts_shown(diff.resources)
        outputs = []
        if not full:
            entries, shown = _whole_entries(shown)
            outputs += entries
        for change in shown:
            where = seen.get((change.old, change.new)) if _is_text(change.old) and _is_text(change.new) else None
            if where is not None:
                outputs.append(f"~  {change.path}: (text: the change of {where}, above)")
            else:
                outputs.extend(_render_change(change, texts, "  "))
        if not full:
            derived = [c.path for c in diff.outputs if is_derived(c.path)]
            outputs += derived_lines(derived, diff.head)
        blocks.append(["Outputs:", *outputs])
    return (
        "\n\n".join("\n".join(printable(line, None, keep="\t") for line in block) for block in blocks if block) + "\n"
    )


_ENTRY: Final = re.compile(r"^[^\[.]+\[[a-z]+=[^\]]*\]")
ENTRY_LEAVES: Final = 4
"""An output's list entry added or removed with more leaves than this is one line (`--full` lists each)."""


def _whole_entries(changes: tuple[Change, ...]) -> tuple[list[str], tuple[Change, ...]]:
    """Lines for the entries of identity-keyed output lists (`capacity[pool=ci-extra]`) added or removed whole,
    and the changes left to show leaf by leaf."""
    groups: dict[str, list[Change]] = {}
    for change in changes:
        if match := _ENTRY.match(change.path):
            groups.setdefault(match[0], []).append(change)
    lines: list[str] = []
    folded: set[str] = set()
    for entry, members in groups.items():
        for marker, absent, word in (("+", "old", "added"), ("-", "new", "removed")):
            if len(members) > ENTRY_LEAVES and all(getattr(c, absent) is MISSING for c in members):
                lines.append(f"{marker}  {entry}: {word} ({len(members)} figures; plan-diff --full for each)")
                folded.update(c.path for c in members)
    return lines, tuple(c for c in changes if c.path not in folded)


def _texts_shown(resources: tuple[ResourceChange, ...]) -> dict[tuple[Any, Any], str]:
    """The multi-line inputs whose change a resource shows (old and new), by where: an output of the same text
    (the templates' file and the `ci_templates` output) refers to it rather than show it twice."""
    return {
        (change.old, change.new): f"{resource.name}'s {change.path}"
        for resource in resources
        if resource.op == "update"
        for change in resource.inputs
        if _is_text(change.old) and _is_text(change.new)
    }


def _summary(diff: PlanDiff) -> list[str]:
    """`Resources:` and a line per operation, as `pulumi preview` prints it (`note.summarize` reads both)."""
    counts = diff.counts()
    summary = ["Resources:", *(f"{INDENT}{MARKERS[op]} {n} to {op}" for op, n in counts.items())]
    tail = []
    if len(counts) >= 2:
        total = sum(counts.values())
        tail.append(f"{total} change{'s' if total != 1 else ''}")
    if diff.unchanged:
        tail.append(f"{diff.unchanged} unchanged")
    if tail:
        summary.append(INDENT + ". ".join(tail))
    return summary


class _TextBudget:
    """The lines still to be compared line by line in this diff (`MAX_TEXT_LINES_TOTAL`)."""

    def __init__(self) -> None:
        self.left = MAX_TEXT_LINES_TOTAL

    def take(self, old: list[str], new: list[str]) -> bool:
        lines = len(old) + len(new)
        if max(len(old), len(new)) > MAX_TEXT_LINES or lines > self.left:
            return False
        self.left -= lines
        return True


def _render_resource(resource: ResourceChange, texts: _TextBudget, full: bool) -> list[str]:
    note = f"({resource.op})"
    if resource.op == "replace":
        note = f"(replace, because of {', '.join(resource.replace_reasons)})"
    if resource.op in ("delete", "replace") and resource.protected:
        note = f"{note[:-1]}; protected: `pulumi up` refuses until it is unprotected)"
    lines = [f"{MARKERS[resource.op]} {resource.type}  {resource.name}  {note}"]
    if full:  # the type and name say which resource in this program; `--full` gives the URN as preview does
        lines.append(f"{INDENT}[urn={resource.urn}]")
    for change in resource.inputs:
        lines.extend(_render_change(change, texts))
    for change in resource.options:
        lines.extend(_render_change(Change(f"[option] {change.path}", change.old, change.new), texts))
    return lines


def _render_change(change: Change, texts: _TextBudget, indent: str = INDENT) -> list[str]:
    old, new = change.old, change.new
    if _is_text(old) and _is_text(new):
        before, after = old.splitlines(), new.splitlines()
        if not texts.take(before, after):
            return [f"~{indent}{change.path}: (text, {len(before)} -> {len(after)} lines: too long to compare here)"]
        lines = [f"~{indent}{change.path}: (text)"]
        hunks = 0
        for line in list(difflib.unified_diff(before, after, lineterm="", n=CONTEXT))[2:]:
            if line.startswith("@@"):
                hunks += 1
                if hunks > 1:
                    lines.append(f" {indent}    ...")
            else:
                lines.append(f"{line[:1] or ' '}{indent}    {line[1:]}")
        return lines
    if old is not MISSING and new is not MISSING and not _is_text(old) and not _is_text(new):
        return [f"~{indent}{change.path}: {_format(old)} => {_format(new)}"]  # as `pulumi preview --diff` prints it
    lines = []
    if old is not MISSING:
        lines.extend(_render_value("-", indent, change.path, old))
    if new is not MISSING:
        lines.extend(_render_value("+", indent, change.path, new))
    return lines


def _render_value(marker: str, indent: str, path: str, value: Any) -> list[str]:
    if isinstance(value, str) and "\n" in value:
        return [f"{marker}{indent}{path}: |", *(f"{marker}{indent}    {line}" for line in value.splitlines())]
    return [f"{marker}{indent}{path}: {_format(value)}"]


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and "\n" in value


def _format(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "), default=str)
