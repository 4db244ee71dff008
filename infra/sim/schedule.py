"""The simulation's schedule (pure): a heap of `(at, kind, seq, payload)` events, popped one instant at a time.

At one instant, events are handled in `kind` order (the constants below: deadlines before jobs finish, nodes
become ready or managers start; scale-down last), then in the order they were pushed (`seq`): a run is
deterministic. The event budget turns a broken invariant of the model into a RuntimeError, never a hang.
"""

from __future__ import annotations

import itertools
from heapq import heappush

# Event kinds, in the order they are handled at one instant (deadlines first, scale-down last). RESUME (a
# stock-out ends) only makes the autoscaler look again; WARM starts or ends a pool's warm window.
(
    DROP,
    POLL_DEADLINE,
    JOB_DEADLINE,
    FINISH,
    NODE_READY,
    RESUME,
    WARM,
    UPGRADE,
    MANAGER_START,
    CREATED,
    SCALE_DOWN,
) = range(11)


class Schedule:
    """Future events by time (whole milliseconds), at most `budget` of them handled: the engine's loop
    (`infra.sim.engine`) pops them off `heap` and counts them in `handled`."""

    def __init__(self, budget: int) -> None:
        self.heap: list[tuple[int, int, int, object]] = []
        self.seq = itertools.count(1)
        """The push order, 1, 2, ...: ties of time and kind are handled in it."""
        self.handled = 0
        self.budget = budget

    def push(self, at: int, kind: int, payload: object) -> None:
        heappush(self.heap, (at, kind, next(self.seq), payload))
