"""`plan`'s weeks on the other core: the child's result is the function's; a child that fails, or a platform without
`fork`, computes inline."""

from __future__ import annotations

import os
from fractions import Fraction

import pytest

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
