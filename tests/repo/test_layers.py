"""The layout's own rules: no import cycle under infra/ or policy/ (every import counted: module level, inside
functions, under TYPE_CHECKING), pure modules import no Pulumi, no module over 500 lines, and `plan --json` of
the dev stack byte-identical to the committed copy (a change of any figure is a deliberate, reviewed one)."""

from __future__ import annotations

import ast
import functools

from support import imports
from support.paths import ROOT

from infra.graphs import strongly_connected_components

MAX_MODULE_LINES = 500
PURE = (
    "infra.config",
    "infra.model",
    "infra.sim",
    "infra.render",
    "infra.pipeline",
    "infra.capacity",
    "infra.catalog",
    "infra.graphs",
    "policy.policies.definitions",
)
"""The pure core: no Pulumi import, so it runs anywhere (tests, the offline CLI) and derives before any resource
(the pack's rule definitions too: the spec's checks import them)."""


MODULES = imports.modules()


@functools.cache
def _graph() -> dict[str, set[str]]:
    """Each module's imports of ours, read once, by the worker that runs these tests (not at collection)."""
    return {name: imports.ours(name, path, MODULES) for name, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module: the import cycles."""
    edges = {node: sorted(targets) for node, targets in graph.items()}
    components = strongly_connected_components(sorted(edges), edges)
    return sorted(sorted(component) for component in components if len(component) > 1)


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_under_infra_or_policy() -> None:
    assert len(_graph()) > 50  # the walk found the modules
    assert _cycles(_graph()) == []


def test_the_policy_pack_imports_nothing_from_infra() -> None:
    """The pack is loaded by `pulumi preview --policy-pack policy/` in its own virtualenv: it stands alone."""
    assert {
        name: deps
        for name, deps in _graph().items()
        if name.startswith("policy") and any(dep.startswith("infra") for dep in deps)
    } == {}


def test_the_program_imports_only_the_packs_rule_definitions() -> None:
    """The spec's checks and recommend say the pack's verdicts from its rules' one definition
    (`policy/policies/definitions.py`, pure); the rest of the pack, pulumi_policy and all, stays the pack's."""
    graph = _graph()
    imported = {
        dep for name, deps in graph.items() if name.startswith("infra") for dep in deps if dep.startswith("policy")
    }
    assert imported == {"policy", "policy.policies", "policy.policies.definitions"}  # the packages import nothing
    assert graph["policy"] == graph["policy.policies"] == graph["policy.policies.definitions"] == set()


def test_components_take_rendered_text_and_call_no_renderer() -> None:
    """Spec -> derive -> Platform -> renderers -> components: `build_platform` (infra/cloud/platform.py) renders,
    and each component gets its text and its slice of the platform in its Args; a component imports no renderer."""
    graph = _graph()
    components = {name for name in graph if name.startswith("infra.cloud.")} - {"infra.cloud.platform"}
    assert len(components) > 5
    assert {
        name: deps for name in components if (deps := {d for d in graph[name] if d.startswith("infra.render")})
    } == {}
    assert any(dep.startswith("infra.render.") for dep in graph["infra.cloud.platform"])


def test_the_pure_core_imports_no_pulumi() -> None:
    offenders = {}
    for name, path in MODULES.items():
        if not name.startswith(PURE):
            continue
        for node in imports.statements(path):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            bad = [m for m in modules if m.split(".")[0].startswith("pulumi")]
            if bad:
                offenders[name] = bad
    assert offenders == {}


def test_no_module_is_over_500_lines() -> None:
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in MODULES.items()}
    assert {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES} == {}


TEST_FOLDERS = {
    "config",
    "model",
    "render",
    "sim",
    "cloud",
    "offline",
    "pipeline",
    "review",
    "workload",
    "policy",
    "repo",
    "engine",
}
"""tests/<folder>/ per layer of infra/ (plus the policy pack, this repository's own rules and the real engine's
tests); tests of the
top-level modules (capacity, catalog, quantity, gitlab_api) sit in tests/ itself."""


def test_tests_mirror_the_layout_and_their_helpers_live_in_support() -> None:
    tests = ROOT / "tests"
    files = [p for p in tests.rglob("*.py") if not {"data", "fixtures", "__pycache__"} & set(p.parts)]
    misplaced = []
    for path in files:
        relative = path.relative_to(tests)
        if relative.parts[0] == "support" or (relative.name == "conftest.py" and len(relative.parts) == 1):
            continue
        if not relative.name.startswith("test_"):
            misplaced.append(f"{relative}: a helper outside tests/support/")
        elif len(relative.parts) == 1:
            words = relative.stem.removeprefix("test_").split("_")
            prefixes = ("_".join(words[:n]) for n in range(1, len(words) + 1))
            if not any((ROOT / "infra" / f"{prefix}.py").exists() for prefix in prefixes):
                misplaced.append(f"{relative}: not a top-level module's tests")
        elif relative.parts[0] not in TEST_FOLDERS or len(relative.parts) > 2:
            misplaced.append(f"{relative}: not in a layer's folder")
    assert misplaced == []
    assert {f for f in TEST_FOLDERS - {"policy", "repo", "engine"} if not (ROOT / "infra" / f).is_dir()} == set()
    names = [p.name for p in files if p.name.startswith("test_")]
    assert len(names) == len(set(names))  # pytest's rootdir import mode needs unique basenames
