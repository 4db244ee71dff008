"""The suite does not depend on the day it runs (tests/support/day.py): its own environment carries the suite's
day, and so does every environment a test builds from scratch for a subprocess (a dict that sets `PATH`: the
plan-diff and preview jobs' scripts, the engine's CLI and language host)."""

from __future__ import annotations

import ast
import os

from support.day import SUITE_DAY, SUITE_DAY_ENV, TODAY_VARIABLE
from support.paths import ROOT, TESTS

from infra.config.checks import versions


def _scratch_environments() -> list[tuple[str, bool]]:
    """(where, carries the day) of each dict literal in the tests that sets `PATH`."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if '"PATH"' not in text:  # no environment dict: not parsed
            continue
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Dict):
                continue
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            if "PATH" not in keys:
                continue
            spread = [ast.unparse(v) for k, v in zip(node.keys, node.values, strict=True) if k is None]
            found.append(
                (f"{path.relative_to(ROOT)}:{node.lineno}", "SUITE_DAY_ENV" in spread or TODAY_VARIABLE in keys)
            )
    return found


def test_the_suite_runs_on_its_day() -> None:
    assert TODAY_VARIABLE == versions.TODAY_VARIABLE
    assert os.environ[TODAY_VARIABLE] == SUITE_DAY
    assert SUITE_DAY_ENV == {TODAY_VARIABLE: SUITE_DAY}


def test_every_environment_built_from_scratch_carries_the_suite_day() -> None:
    found = _scratch_environments()
    assert len(found) >= 6  # the plan-diff job's, the preview job's, the up job's and the pack's, the engine's
    assert [where for where, carries in found if not carries] == []
