"""The simulation's schedule (pure): a heap of `(at, kind, seq, payload)` events, popped one instant at a time.

At one instant, events are handled in `kind` order (the constants below: deadlines before jobs finish, nodes
become ready or managers start; scale-down last), then in the order they were pushed (`seq`): a run is
deterministic. The event budget turns a broken invariant of the model into a RuntimeError, never a hang.
"""

from __future__ import annotations

import heapq

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
    """Future events by time (whole milliseconds), at most `budget` of them handled."""

    def __init__(self, budget: int) -> None:
        self.heap: list[tuple[int, int, int, object]] = []
        self.seq = 0
        self.handled = 0
        self.budget = budget

    def push(self, at: int, kind: int, payload: object) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (at, kind, self.seq, payload))

    def next_time(self) -> int | None:
        """When the next event is due (None: the run is over)."""
        return self.heap[0][0] if self.heap else None

    def pop(self) -> tuple[int, object]:
        """The next event due, as (kind, payload) (the schedule is not empty)."""
        _, kind, _, payload = heapq.heappop(self.heap)
        self.handled += 1
        if self.handled > self.budget:  # pragma: no cover - the bound in infra.sim.engine's docstring
            raise RuntimeError(f"simulation exceeded its event bound ({self.budget})")
        return kind, payload

    def pop_at(self, now: int) -> tuple[int, object] | None:
        """The next event due at `now`, as (kind, payload); None when the instant holds no more."""
        if not self.heap or self.heap[0][0] != now:
            return None
        _, kind, _, payload = heapq.heappop(self.heap)
        self.handled += 1
        if self.handled > self.budget:  # pragma: no cover - the bound in infra.sim.engine's docstring
            raise RuntimeError(f"simulation exceeded its event bound ({self.budget})")
        return kind, payload
