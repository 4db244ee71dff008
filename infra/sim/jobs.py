"""One job's state through a run (pure): scheduled -> queued (GitLab) -> pending (its pod) -> running -> done.

Shared by the queue, the runners and the cluster; times are whole milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from infra.sim.scenario import SimJob

if TYPE_CHECKING:
    from infra.sim.cluster import NodeState
    from infra.sim.runners import ManagerState


@dataclass(eq=False)
class JobState:
    spec: SimJob
    work: int
    """Its run time alone on its GPU."""
    utilization: Fraction | None
    created: int
    state: str = "scheduled"  # scheduled -> queued -> pending -> running -> done
    taken: int | None = None
    started: int | None = None
    ended: int | None = None
    manager: ManagerState | None = None
    node: NodeState | None = None
    gpu: int = 0
    remaining: Fraction = Fraction(0)
    """Work left, in milliseconds alone on its GPU, as of `since`."""
    since: int = 0
    rate_slowdown: Fraction = Fraction(1)
    version: int = 0
    """Bumped when its finish time changes: a finish event of an older version is stale."""
    reason: str | None = None
    cause: str | None = None
