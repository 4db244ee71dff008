"""Graphs the code walks: the `extends` graph of a pipeline (check-ci), the import graph of this repository (its
layering test). Pure, iterative: no recursion limit on a long chain."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence


def strongly_connected_components(keys: Iterable[str], parents: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of the graph `parents` (each key's edges, every edge a key),
    visited from `keys` in their order; iterative (a chain may be thousands of templates long). Each component
    comes after every component it has an edge to: `extends` parents are built before their children."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for start in keys:
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            name, child = work.pop()
            if child == 0:
                index[name] = low[name] = len(index)
                stack.append(name)
                on_stack.add(name)
            edges = parents[name]
            if child < len(edges):
                work.append((name, child + 1))
                parent = edges[child]
                if parent not in index:
                    work.append((parent, 0))
                elif parent in on_stack:
                    low[name] = min(low[name], index[parent])
                continue
            for parent in edges:
                if parent in on_stack:
                    low[name] = min(low[name], low[parent])
            if low[name] == index[name]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == name:
                        break
                found.append(component)
    return found
