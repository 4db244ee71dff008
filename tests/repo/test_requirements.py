"""requirements.in asks for what `pulumi up` needs: the program's imports and nothing the offline tools add.

Read from the source: every module `__main__.py` reaches through import statements (module level, inside
functions, under TYPE_CHECKING: more than one stack's run would load), and what those import from outside
the project and the standard library, mapped to the installed distributions. That is exactly the runtime
`.in` file, less `tzdata` (data `zoneinfo` reads where the image has no system time zones). Its lock,
requirements.txt, adds what those require (tests/repo/test_locks.py).
"""

from __future__ import annotations

import importlib.metadata
import sys

from support import imports, requirements
from support.paths import ROOT

DATA_ONLY = {"tzdata"}


def _dev_only_imports() -> set[str]:
    """The import names that only packages asked for in requirements-dev.in give (stub-only packages give none;
    a namespace shared with a runtime package, `google`, is not counted)."""
    dev_only = {_normal(name) for name in requirements.pins(requirements.DEV_IN, follow_includes=False)}
    distributions = importlib.metadata.packages_distributions()
    return {name for name, dists in distributions.items() if {_normal(d) for d in dists} <= dev_only}


def _program_modules() -> dict[str, set[str]]:
    """Each module `pulumi up` may load (from __main__.py on) and every name it imports."""
    known = imports.modules()
    reached = {"__main__": imports.imported("__main__", ROOT / "__main__.py")}
    todo = sorted(m for m in reached["__main__"] if m in known)
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached[name] = imports.imported(name, known[name])
        # importing a.b.c runs a/__init__ and a.b/__init__ first
        todo += [p for m in {*reached[name], name} for p in _prefixes(m) if p in known and p not in reached]
    return reached


def _prefixes(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:n]) for n in range(1, len(parts) + 1)]


def _third_party(reached: dict[str, set[str]]) -> dict[str, set[str]]:
    """Top-level import name to the program modules importing it, outside the project and the stdlib."""
    found: dict[str, set[str]] = {}
    for module, names in reached.items():
        for name in names:
            top = name.split(".")[0]
            if top and top not in sys.stdlib_module_names and top not in imports.PACKAGES:
                found.setdefault(top, set()).add(module)
    return found


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def test_the_program_imports_exactly_the_runtime_pins() -> None:
    reached = _program_modules()
    assert {"infra.cloud.platform", "infra.cloud.warm", "infra.sim.week", "infra.config.load"} <= set(reached)
    assert all(p in reached for m in reached for p in _prefixes(m)[:-1])  # every parent package ran too
    assert not any(m.startswith(("infra.offline", "infra.cli", "infra.workload")) for m in reached)
    # of the pack, only its pure rule definitions (the spec says their verdicts): no pulumi_policy under `up`
    assert {m for m in reached if m.startswith("policy")} == {
        "policy",
        "policy.policies",
        "policy.policies.definitions",
    }
    third = _third_party(reached)
    dev_imports = _dev_only_imports()
    assert {"gitlab", "requests", "pytest", "pytest_timeout", "mypy"} <= dev_imports
    dev = {name: sorted(third[name]) for name in dev_imports if name in third}
    assert dev == {}  # a dev-only package the program imports: `pulumi up` would fail on ImportError
    distributions = importlib.metadata.packages_distributions()
    imported = {_normal(d) for name in third for d in distributions.get(name, [name])}
    runtime = {_normal(name) for name in requirements.pins(requirements.RUNTIME_IN)}
    assert imported == runtime - DATA_ONLY


def test_the_dev_in_file_adds_tools_on_top_of_the_runtime_and_repins_nothing() -> None:
    runtime = requirements.pins(requirements.RUNTIME_IN)
    dev_only = requirements.pins(requirements.DEV_IN, follow_includes=False)
    assert "-r requirements.in" in requirements.DEV_IN.read_text(encoding="utf-8").splitlines()
    assert not set(runtime) & set(dev_only)
    installed = {_normal(d) for dists in importlib.metadata.packages_distributions().values() for d in dists}
    stubs = {name for name in dev_only if name.startswith("types-")}
    assert {_normal(name) for name in dev_only} - installed <= {_normal(name) for name in stubs}
