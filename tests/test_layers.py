"""The layout's own rules: no import cycle under infra/ or policy/ (every import counted: module level, inside
functions, under TYPE_CHECKING), pure modules import no Pulumi, no module over 500 lines, and `plan --json` of
the dev stack byte-identical to the committed copy (a change of any figure is a deliberate, reviewed one)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("infra", "policy")
MAX_MODULE_LINES = 500
PURE = ("infra.config", "infra.model", "infra.sim", "infra.render", "infra.pipeline", "infra.capacity", "infra.catalog")
"""The pure core: no Pulumi import, so it runs anywhere (tests, the offline CLI) and derives before any resource."""


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "venv" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Every module of ours that `name` imports, wherever the import statement sits."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    wanted: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            wanted |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            wanted.add(module)
            wanted |= {f"{module}.{alias.name}" for alias in node.names}
    ours: set[str] = set()
    for module in wanted:
        parts = module.split(".")
        for end in range(1, len(parts) + 1):  # importing a.b.c runs a and a.b first
            prefix = ".".join(parts[:end])
            if prefix in MODULES and prefix != name:
                ours.add(prefix)
    return ours


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_under_infra_or_policy() -> None:
    assert len(GRAPH) > 50  # the walk found the modules
    assert _cycles(GRAPH) == []


def test_the_policy_pack_imports_nothing_from_infra() -> None:
    """The pack is loaded by `pulumi preview --policy-pack policy/` in its own virtualenv: it stands alone."""
    assert {
        name: deps
        for name, deps in GRAPH.items()
        if name.startswith("policy") and any(dep.startswith("infra") for dep in deps)
    } == {}


def test_the_pure_core_imports_no_pulumi() -> None:
    offenders = {}
    for name, path in MODULES.items():
        if not name.startswith(PURE):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            modules = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            bad = [m for m in modules if m.split(".")[0].startswith("pulumi")]
            if bad:
                offenders[name] = bad
    assert offenders == {}


def test_no_module_is_over_500_lines() -> None:
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in MODULES.items()}
    assert {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES} == {}
