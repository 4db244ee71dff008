"""What keeps a candidate from the target (pure): per pool, how its merge-request jobs over the target waited.

A job's wait is split as the simulation sees it: waiting in GitLab for a runner slot, then, taken, waiting for
a node (`infra.sim.results.JobResult`). Over the target, mostly slot waits mean the pool's slots are taken
(by the jobs ahead: their length sets how long); mostly node waits that stay within a cold start mean the
first jobs of a burst wait for a node to boot; longer node waits, that the nodes it may start are full.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from infra.sim.combine import Combination


@dataclass(frozen=True)
class Binding:
    """One pool's merge-request jobs over the target, in the worse of the two weeks."""

    pool: str
    jobs: int
    slot_minutes: Fraction
    node_minutes: Fraction
    longest_slot_wait: Fraction
    longest_node_wait: Fraction
    cold_start: Fraction
    longest_job: Fraction

    @property
    def what(self) -> str:
        """`slots`, `cold start` or `nodes`: the part of the wait that dominates."""
        if self.slot_minutes >= self.node_minutes:
            return "slots"
        return "cold start" if self.longest_node_wait <= self.cold_start else "nodes"

    def describe(self) -> str:
        if self.what == "slots":
            return (
                f"{self.pool}: slots: {self.jobs} merge-request jobs over the target wait mostly for a runner slot "
                f"(up to {_min(self.longest_slot_wait)} min) behind jobs of up to {_min(self.longest_job)} min "
                "(job length): more slots (max_size, replicas), slots held for merge requests, or shorter jobs"
            )
        if self.what == "cold start":
            return (
                f"{self.pool}: cold start: {self.jobs} merge-request jobs over the target wait mostly for a node to "
                f"boot (up to {_min(self.longest_node_wait)} min, a cold start is {_min(self.cold_start)} min): warm "
                "windows in their hours, or a shorter cold start"
            )
        return (
            f"{self.pool}: nodes: {self.jobs} merge-request jobs over the target wait mostly for a node (up to "
            f"{_min(self.longest_node_wait)} min, longer than a cold start of {_min(self.cold_start)} min): the "
            "nodes the pool may start are full: more nodes or replicas"
        )


def bindings(combination: Combination, target: Fraction, cold_starts: dict[str, Fraction]) -> list[Binding]:
    """Per pool with merge-request jobs over `target`, what they waited for."""
    found = []
    for pool, week in combination.worse_week():
        over = [wait for wait in week.waits if wait[0] > target]
        if not over:
            continue
        found.append(
            Binding(
                pool=pool,
                jobs=len(over),
                slot_minutes=sum((slot for _, slot, _ in over), Fraction(0)),
                node_minutes=sum((node for _, _, node in over), Fraction(0)),
                longest_slot_wait=max(slot for _, slot, _ in over),
                longest_node_wait=max(node for _, _, node in over),
                cold_start=cold_starts[pool],
                longest_job=week.longest_job,
            )
        )
    return found


def _min(value: Fraction) -> str:
    return f"{float(value):.1f}"
