"""The runners (pure): each runner's managers and their job slots, and how an upgrade replaces a manager.

A taken job holds its manager's slot until it ends, its pod's Pending time included (a worker holds its slot
through the whole build). A manager upgrade at minute M: `rolling` (a Deployment RollingUpdate, the chart's
default): the new manager pod is ready at M + manager_restart_minutes; then the old one gets SIGQUIT, stops
taking jobs and drains its own (they keep their slots), while the new one takes jobs with a full
`concurrent`: the pool can be oversubscribed. `recreate`: the old manager stops taking jobs at M and drains
its running and Pending jobs; manager_restart_minutes after the last of them ends the new one starts; queued
jobs wait in GitLab meanwhile. An upgrade that arrives while a recreate is in progress is merged into it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from infra.sim.scenario import SimRunner


@dataclass(eq=False)
class ManagerState:
    """One manager pod of a runner: whether it takes jobs, and the slots its jobs hold."""

    runner: RunnerState
    generation: int
    """0: the first manager, 1: after the first upgrade..."""
    accepting: bool = True
    held: int = 0

    @property
    def has_free_slot(self) -> bool:
        return self.accepting and self.held < self.runner.spec.concurrent


@dataclass(eq=False)
class RunnerState:
    spec: SimRunner
    poll: int
    """poll_timeout in milliseconds."""
    timeout: int
    """The job timeout in milliseconds."""
    managers: list[ManagerState] = field(default_factory=list)
    groups: list[list[int]] = field(default_factory=list)
    """The queue heaps (job ids) of the tag sets this runner matches (`infra.sim.gitlab`)."""
    generations: int = 1
    starved: bool = False
    """Nothing queued matches it: skip it until a matching job is queued."""
    recreating: bool = False
    """A recreate upgrade is draining the old manager or waiting for the new one."""

    def __post_init__(self) -> None:
        self.managers.append(ManagerState(self, 0))

    @property
    def drained(self) -> bool:
        return not any(m.accepting or m.held for m in self.managers)

    def release(self, manager: ManagerState) -> bool:
        """A job of `manager` ended: its slot is free. True when a recreate may now start the new manager."""
        manager.held -= 1
        return self.recreating and self.drained

    def upgrade(self) -> bool:
        """An upgrade starts; True when the new manager is to start after the restart delay now (a rolling one,
        or a recreate with nothing to drain)."""
        if self.spec.upgrade_strategy == "rolling":
            return True
        if self.recreating:
            return False  # merged into the recreate in progress
        self.recreating = True
        for manager in self.managers:
            manager.accepting = False
        return sum(m.held for m in self.managers) == 0

    def start_manager(self) -> None:
        """The new manager pod is up: it takes jobs, every older one stops taking (SIGQUIT) and drains."""
        for manager in self.managers:
            manager.accepting = False
        self.managers = [m for m in self.managers if m.held]  # drained ones are gone
        self.managers.append(ManagerState(self, self.generations))
        self.generations += 1
        self.recreating = False
