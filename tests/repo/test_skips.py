"""Every skip in the suite says why in its reason: what is not checked here, why, and what runs it instead.

Read from the tests' source (each `pytest.skip`, `pytest.mark.skip`/`skipif` and `pytest.importorskip`), so a skip
that no run of this machine meets is held too. A reason's text is its string, an f-string's constant parts, or the
module constant it names (here or in tests/support).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from support.paths import ROOT, TESTS

SKIPS = {"skip", "skipif", "importorskip"}
RUNS_IT = re.compile(r"`bash [^`]+`|\bscripts/\S+|\.ci/\S+")
"""What a reason names as running the skipped test: a command, a script, CI's entry point."""


def _constants(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level `NAME = <expr>` (and annotated) assignments."""
    found: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            found[node.target.id] = node.value
    return found


def _support_constants(tree: ast.Module) -> dict[str, ast.expr]:
    """The constants a module imports from tests/support (`from support.engine import NOT_BUILT`)."""
    found: dict[str, ast.expr] = {}
    for node in ast.walk(tree):
        module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
        if isinstance(node, ast.ImportFrom) and module.startswith("support."):
            source = TESTS / Path(*module.split(".")).with_suffix(".py")
            names = _constants(ast.parse(source.read_text(encoding="utf-8")))
            found.update({alias.asname or alias.name: names[alias.name] for alias in node.names if alias.name in names})
    return found


def _text(node: ast.expr | None, names: dict[str, ast.expr]) -> str:
    """The reason as it reads: strings kept, names resolved where they are constants, the rest `{...}`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_text(part, names) for part in node.values)
    if isinstance(node, ast.FormattedValue):
        return _text(node.value, names)
    if isinstance(node, ast.Name) and node.id in names:
        return _text(names[node.id], names)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _text(node.left, names) + _text(node.right, names)
    return "{...}"


def _reason(call: ast.Call) -> ast.expr | None:
    keyword = next((k.value for k in call.keywords if k.arg in {"reason", "msg"}), None)
    kind = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    if keyword is None and kind == "skip" and call.args:  # pytest.skip("why"), pytest.mark.skip("why")
        return call.args[0]
    return keyword


@functools.cache
def skips() -> list[tuple[str, str]]:
    """(where, reason text) of every skip in the tests (only the files that say `skip` are parsed)."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "skip" not in text:
            continue
        tree = ast.parse(text)
        names = {**_support_constants(tree), **_constants(tree)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SKIPS:
                owner = ast.unparse(node.func.value)
                if owner in {"pytest", "pytest.mark"}:
                    reason = _reason(node)
                    text = "" if reason is None else _text(reason, names)
                    found.append((f"{path.relative_to(ROOT)}:{node.lineno}", text))
    return found


def test_every_skip_says_what_why_and_what_runs_it() -> None:
    found = skips()
    assert len(found) >= 5  # the engine's, the two oracles' (three calls), /proc's: the scan sees them
    unexplained = [f"{where}: {text!r}" for where, text in found if ": " not in text or not RUNS_IT.search(text)]
    assert unexplained == [], "a skip's reason says what is not checked: why; and names what runs it"


def test_the_reasons_read_as_the_suite_prints_them() -> None:
    """The resolution above is what pytest shows (`-rs`): one of each kind, compared."""
    reasons = dict(skips())
    oracle = next(text for where, text in reasons.items() if "test_pipeline_oracle.py" in where)
    assert oracle.startswith("check-ci's resolver is not compared with gitlab-ci-local here: it is not installed")
    assert "`bash .ci/oracle` installs it" in oracle
    engine = next(text for where, text in reasons.items() if where.startswith("tests/conftest.py"))
    assert "scripts/engine/build" in engine
