"""`extends:` and `!reference` as GitLab resolves them, within one work budget (pure: no Pulumi import).

`extends:` takes one or several parents, up to 11 levels: hashes merge key by key, anything else is replaced,
later parents win and the job's own keys win over all. Each job or template is extended once, whatever the
order it is declared in: the extends graph is split into strongly connected components first (a component
of more than one job, or a job extending itself, is a cycle), then each key is built after its parents, and
its depth is the longest chain below it. GitLab refuses the pipeline when any key, a hidden template included,
cannot be extended.

`!reference [job, key, ...]` is then resolved anywhere on the extended configuration, nested up to 10 levels;
values that hold no reference are shared, not copied. Merges and copies spend the pipeline's `Work`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from infra.graphs import strongly_connected_components
from infra.pipeline.resolved import GLOBAL_KEYWORDS, Reference, ResolveError, Violation, Work, deep_merge

MAX_EXTENDS_DEPTH = 11
MAX_REFERENCE_DEPTH = 10


@dataclass
class Extended:
    job: dict[str, Any]
    ancestors: tuple[str, ...]
    variable_origin: dict[str, tuple[str, str]]
    problems: list[Violation] = field(default_factory=list)
    complete: bool = True
    depth: int = 0
    """The longest `extends` chain below this key."""


class Extends:
    """`extends:` over the merged configuration: every job and template, each built once."""

    def __init__(
        self,
        config: dict[str, Any],
        key_file: dict[str, str],
        variable_file: dict[tuple[str, str], str],
        work: Work,
    ) -> None:
        self.config = config
        self.key_file = key_file
        self.variable_file = variable_file
        self.work = work
        self.keys = [
            k for k, v in config.items() if isinstance(k, str) and k not in GLOBAL_KEYWORDS and isinstance(v, dict)
        ]
        self.parents: dict[str, list[str]] = {}
        self.broken: dict[str, Violation] = {}
        for name in self.keys:
            self.parents[name] = self.valid_parents(name)
        self.done: dict[str, Extended] = {}
        for component in strongly_connected_components(self.keys, self.parents):
            cyclic = len(component) > 1 or component[0] in self.parents[component[0]]
            for name in component:
                self.done[name] = self.build(name, set(component) if cyclic else set())

    def valid_parents(self, name: str) -> list[str]:
        """Its parents; an unusable `extends:` is recorded in `broken` (the key then extends nothing)."""
        raw = self.config[name].get("extends")
        parents = [raw] if isinstance(raw, str) else raw if raw is not None else []
        where = self.key_file.get(name, "?")
        if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
            self.broken[name] = Violation(where, name, "extends: not a job name or a list of job names")
            return []
        for parent in parents:
            if parent not in self.config or parent in GLOBAL_KEYWORDS:
                self.broken[name] = Violation(where, name, f"extends {parent}, which is defined nowhere")
                return []
            if not isinstance(self.config[parent], dict):
                self.broken[name] = Violation(where, name, f"extends {parent}, which is not a job")
                return []
        return list(dict.fromkeys(parents))

    def own_origin(self, name: str, job: dict[str, Any]) -> dict[str, tuple[str, str]]:
        variables = job.get("variables")
        if not isinstance(variables, dict):
            return {}
        file = self.key_file.get(name, "?")
        return {str(v): (self.variable_file.get((name, str(v)), file), name) for v in variables}

    def build(self, name: str, cycle: set[str]) -> Extended:
        own = self.config[name]
        where = self.key_file.get(name, "?")
        result = Extended(dict(own), (), self.own_origin(name, own))
        parents = self.parents[name]
        if name in self.broken:
            return self.fail(result, self.broken[name])
        if cycle:
            parent = next(p for p in parents if p in cycle)
            return self.fail(result, Violation(where, name, f"extends {parent}, which extends it back (a cycle)"))
        bases = [self.done[p] for p in parents]
        for base in bases:
            if not base.complete:
                result.problems = list(base.problems)
                result.complete = False
                return result
        result.depth = max((b.depth + 1 for b in bases), default=0)
        if result.depth > MAX_EXTENDS_DEPTH:
            return self.fail(result, Violation(where, name, f"extends nests deeper than {MAX_EXTENDS_DEPTH} levels"))
        try:
            merged: dict[str, Any] = {}
            origin: dict[str, tuple[str, str]] = {}
            ancestors: dict[str, None] = {}
            for parent, base in zip(parents, bases, strict=True):
                merged = deep_merge(merged, base.job, self.work)
                origin.update(base.variable_origin)
                ancestors.update(dict.fromkeys((parent, *base.ancestors)))
                self.work.spend(len(base.ancestors) + len(base.variable_origin))
            result.job = deep_merge(merged, own, self.work)
        except ResolveError as err:
            raise ResolveError(f"{where}: {name}: {err}") from None
        result.ancestors = tuple(ancestors)
        result.variable_origin = {**origin, **result.variable_origin}
        return result

    @staticmethod
    def fail(result: Extended, problem: Violation) -> Extended:
        result.problems = [problem]
        result.complete = False
        return result


# --- !reference ----------------------------------------------------------------------------------------


class References:
    """Resolves `!reference` tags against the extended configuration (GitLab's order)."""

    def __init__(self, config: dict[str, Any], work: Work) -> None:
        self.config = config
        self.work = work
        self.holding: dict[int, tuple[Any, bool]] = {}
        """id -> (the value, kept alive while its id is used; whether it holds a reference)."""

    def holds_reference(self, value: Any) -> bool:
        if isinstance(value, Reference):
            return True
        if not isinstance(value, (dict, list)):
            return False
        known = self.holding.get(id(value))
        if known is None:
            items = value.values() if isinstance(value, dict) else value
            known = (value, any(self.holds_reference(item) for item in items))
            self.holding[id(value)] = known
        return known[1]

    def resolve(self, value: Any, depth: int = 0, chain: tuple[tuple[str, ...], ...] = ()) -> Any:
        if isinstance(value, Reference):
            return self.follow(value, depth, chain)
        if not self.holds_reference(value):
            return value
        self.work.spend(len(value))
        if isinstance(value, dict):
            return {k: self.resolve(v, depth, chain) for k, v in value.items()}
        return [self.resolve(v, depth, chain) for v in value]

    def target(self, reference: Reference) -> tuple[tuple[str, ...], Any]:
        shown = "!reference [" + ", ".join(str(part)[:80] for part in reference[:10]) + "]"
        if not reference or not all(isinstance(part, str) for part in reference):
            raise ResolveError(f"{shown}: a reference is a list of names like [job, key]")
        node: Any = self.config
        for part in reference:
            if not isinstance(node, dict) or part not in node:
                raise ResolveError(f"{shown} could not be found")
            node = node[part]
        return tuple(reference), node

    def follow(self, reference: Reference, depth: int, chain: tuple[tuple[str, ...], ...]) -> Any:
        path, node = self.target(reference)
        shown = "!reference [" + ", ".join(part[:80] for part in path[:10]) + "]"
        if any(c[: len(path)] == path for c in chain):  # its target holds the reference being resolved
            raise ResolveError(f"{shown} is part of a circular chain of references")
        if depth >= MAX_REFERENCE_DEPTH:
            raise ResolveError(f"{shown}: references nest deeper than {MAX_REFERENCE_DEPTH} levels")
        return self.resolve(node, depth + 1, (*chain, path))


def flatten(value: Any, work: Work | None = None) -> Any:
    """A script-like array as GitLab runs it: nested arrays (from references) become one list."""
    if not isinstance(value, list):
        return value
    flat: list[Any] = []
    for item in value:
        flat.extend(flatten(item) if isinstance(item, list) else [item])
    if work is not None:
        work.spend(len(flat))
    return flat


def flatten_rules(value: Any) -> Any:
    """`rules:` as GitLab reads them (`Entry::Rules#value`): nested arrays (`!reference`s to other jobs' rules, at
    any depth) become one list of rules."""
    return flatten(value)
