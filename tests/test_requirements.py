"""requirements.txt is what `pulumi up` installs: the program's imports and nothing the offline tools add.

The program runs in a fresh interpreter where every package pinned only in requirements-dev.txt refuses to
import; what the project's own modules then import from outside the standard library is exactly the runtime
file (less `tzdata`, which `zoneinfo` reads as data where the image has no system time zones).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from support import requirements

# the import names of the packages pinned only in requirements-dev.txt (stub-only packages have none)
DEV_IMPORTS = {
    "ruamel.yaml": "ruamel",
    "python-gitlab": "gitlab",
    "pulumi-policy": "pulumi_policy",
    "pytest": "pytest",
    "hypothesis": "hypothesis",
    "ruff": "ruff",
    "check-jsonschema": "check_jsonschema",
    "pytest-xdist": "xdist",
    "mypy": "mypy",
}
DATA_ONLY = {"tzdata"}

PROBE = """
import ast, importlib.abc, importlib.metadata, json, sys
from pathlib import Path

BLOCKED = set(json.loads(sys.argv[1]))

class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is pinned only in requirements-dev.txt")
        return None

sys.meta_path.insert(0, Blocked())
from infra.offline.harness import run_program
from infra.offline.stack_config import PROJECT_ROOT, load_stack_config

run = run_program(load_stack_config("dev"))
own = [Path(m.__file__) for m in list(sys.modules.values()) if getattr(m, "__file__", None)]
own = [p.relative_to(PROJECT_ROOT) for p in own if p.is_relative_to(PROJECT_ROOT)]
# the project's modules, less the harness that stands in for the engine (not loaded under pulumi up)
own = [PROJECT_ROOT / p for p in own if p.parts[0] == "infra" and "offline" not in p.parts]
own.append(PROJECT_ROOT / "__main__.py")
names = set()
for path in own:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
third = sorted(n for n in names if n not in sys.stdlib_module_names and n != "infra")
dists = importlib.metadata.packages_distributions()
print(json.dumps({
    "resources": len(run.resources),
    "modules": len(own),
    "distributions": sorted({d for n in third for d in dists.get(n, [n])}),
}))
"""


def _probe() -> dict[str, Any]:
    blocked = json.dumps(sorted(DEV_IMPORTS.values()))
    done = subprocess.run(
        [sys.executable, "-c", PROBE, blocked], cwd=requirements.ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def test_the_program_runs_without_the_dev_packages_and_imports_exactly_the_runtime_pins() -> None:
    probe = _probe()
    assert probe["resources"] > 20 and probe["modules"] > 20  # the whole program ran, not an early exit
    imported = {_normal(d) for d in probe["distributions"]}
    runtime = {_normal(name) for name in requirements.pins(requirements.RUNTIME)}
    assert imported == runtime - DATA_ONLY


def test_the_dev_file_adds_tools_on_top_of_the_runtime_and_repins_nothing() -> None:
    runtime = requirements.pins(requirements.RUNTIME)
    dev_only = requirements.pins(requirements.DEV, follow_includes=False)
    assert "-r requirements.txt" in requirements.DEV.read_text(encoding="utf-8").splitlines()
    assert not set(runtime) & set(dev_only)
    stubs = {name for name in dev_only if name.startswith("types-")}
    assert set(dev_only) - stubs == set(DEV_IMPORTS)  # the probe blocks every one of them
