"""Pure work done on the second core while the first imports the SDKs (`plan`'s simulated weeks).

Why: `plan` runs the program under mocks, most of its time importing the Pulumi SDKs on one core; the simulated
weeks (`infra.sim.weeks`, about half a second on the dev stack) need none of that. `in_background` forks before
the imports, the child computes and pickles the result back through a pipe, and `Pending.result()` reads it: on
two cores the weeks cost no wall time. Where the SDKs are imported already, nothing is left to overlap, and where
there is no `fork` (or it fails), the work runs in `result()`, inline.
The child only runs pure code and leaves with `os._exit`, whatever happens (no atexit hook, no buffered output of
the parent's written twice); a child that fails yields None, and the caller computes inline.
"""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Pending(Generic[T]):
    """A result being computed in a child process, or to compute inline."""

    def __init__(self, function: Callable[[], T], pid: int | None, read: int | None) -> None:
        self.function, self.pid, self.read = function, pid, read

    def result(self) -> T:
        """The child's result (waiting for it), or the function run here when the child gave none."""
        if self.pid is None or self.read is None:
            return self.function()
        with os.fdopen(self.read, "rb") as pipe:
            data = pipe.read()
        _, status = os.waitpid(self.pid, 0)
        self.pid = self.read = None
        if status != 0 or not data:
            return self.function()
        found: T = pickle.loads(data)  # our own child's pickle, through our own pipe
        return found


def in_background(function: Callable[[], T], *, while_importing: str | None = None) -> Pending[T]:
    """Start `function` in a forked child (see the module docstring); inline instead where the module named
    `while_importing` is imported already: the child would overlap nothing (a second plan in one process, as the
    tests run it), and forking a large process costs the parent a copy of every page it then writes."""
    if not hasattr(os, "fork") or (while_importing is not None and while_importing in sys.modules):
        return Pending(function, None, None)
    read, write = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return Pending(function, None, None)
    if pid == 0:  # the child: compute, write, leave
        code = 1
        try:
            os.close(read)
            data = pickle.dumps(function())
            with os.fdopen(write, "wb") as pipe:
                pipe.write(data)
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    return Pending(function, pid, read)
