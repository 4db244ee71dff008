"""The project's import graph read from the source (every import statement: module level, inside functions,
under TYPE_CHECKING), for the layout's rules and for what requirements.txt must hold."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from support.paths import ROOT

PACKAGES = ("infra", "policy")


def modules() -> dict[str, Path]:
    """Dotted name to file of every module under infra/ and policy/ (not the pack's venv)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "venv" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


@functools.cache
def statements(path: Path) -> tuple[ast.Import | ast.ImportFrom, ...]:
    """Every import statement of a file, wherever it sits, parsed once per worker (the layout's rules and the locks'
    test read the same few hundred files)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return tuple(node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom))


def imported(name: str, path: Path) -> set[str]:
    """Every module name `name`'s file imports (absolute, with `from a import b` also giving `a.b`)."""
    is_package = path.name == "__init__.py"
    wanted: set[str] = set()
    for node in statements(path):
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
    return wanted


def ours(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ours that `name` imports, parents included (importing a.b.c runs a and a.b first)."""
    found: set[str] = set()
    for module in imported(name, path):
        parts = module.split(".")
        for end in range(1, len(parts) + 1):
            prefix = ".".join(parts[:end])
            if prefix in known and prefix != name:
                found.add(prefix)
    return found
