"""`plan`'s weeks on the other core: the child's result is the function's; a child that fails, or a platform without
`fork`, computes inline."""

from __future__ import annotations

import os
import sys
from fractions import Fraction

import pytest
from support import imports

from infra.cli import background
from infra.cli.background import in_background


def test_the_childs_result_is_the_functions() -> None:
    pending = in_background(lambda: {"weeks": 20, "p95": Fraction(153, 10), "pid": os.getpid()})
    found = pending.result()
    assert found["weeks"] == 20 and found["p95"] == Fraction(153, 10)
    assert found["pid"] != os.getpid()  # computed in the child


def test_a_child_that_fails_is_computed_inline() -> None:
    calls = []

    def flaky() -> int:
        calls.append(os.getpid())
        if len(calls) == 1 and os.getpid() != parent:
            raise RuntimeError("the child fails")
        return 7

    parent = os.getpid()
    assert in_background(flaky).result() == 7
    assert calls == [parent]  # the parent's own call; the child's list died with it


def test_without_fork_the_work_runs_inline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(background.os, "fork")
    pending = in_background(os.getpid)
    assert pending.pid is None and pending.result() == os.getpid()


def test_where_the_imports_are_done_the_work_runs_inline() -> None:
    """Nothing left to overlap (the module already imported, as in a second plan of one process): no fork."""
    assert "json" in sys.modules
    pending = in_background(os.getpid, while_importing="json")
    assert pending.pid is None and pending.result() == os.getpid()
    forked = in_background(os.getpid, while_importing="a_module_no_one_imported")
    assert forked.pid is not None and forked.result() != os.getpid()


def test_a_plan_in_a_fresh_process_forks_its_weeks() -> None:
    """`python -m infra plan` has not imported the program's components when it starts the weeks: no import of
    `infra.__main__` or `infra.cli.plan` leads to them, wherever it sits (the program's own `__main__.py` runs them,
    later)."""
    from infra.cli import plan

    known = imports.modules()
    seen, todo = set(), ["infra.__main__", "infra.cli.plan"]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += imports.ours(name, known[name], known)
    assert plan.PROGRAM_COMPONENTS in known and plan.PROGRAM_COMPONENTS not in seen
