"""What a simulation run reports (pure): per job, per pool, and the headline figures, as exact Fractions of a
minute and of a euro (`as_json` rounds them for a report)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

Outcome = Literal["success", "failed"]


@dataclass(frozen=True)
class JobResult:
    """What happened to one job. Times in minutes from 0; None where the step never happened."""

    id: int
    name: str
    pool: str
    created: Fraction
    taken: Fraction | None
    started: Fraction | None
    finished: Fraction
    """When it ended, whatever the outcome."""
    runner: str | None
    manager: int | None
    """The runner's manager generation that took it (0: the first, 1: after the first upgrade...)."""
    node: str | None
    outcome: Outcome
    reason: str | None
    """GitLab's failure_reason: runner_system_failure, job_execution_timeout, stuck_or_timeout_failure."""
    cause: str | None
    """What the model saw: refused (pool not served), poll_timeout, job_timeout, stuck, outdated."""


@dataclass(frozen=True)
class PoolResult:
    """One pool's nodes over the run."""

    name: str
    nodes_created: int
    """Nodes the autoscaler added (warm nodes not counted)."""
    peak_nodes: int
    """Most nodes up or booting at once, warm ones included."""
    peak_pods: int
    """Most job pods (Pending or running) at once: beyond `capacity` the pool is oversubscribed."""
    capacity: int
    """slots_per_node x max_nodes."""
    scaled_node_minutes: int
    warm_node_minutes: int
    eur: Fraction

    @property
    def node_minutes(self) -> int:
        return self.scaled_node_minutes + self.warm_node_minutes

    @property
    def oversubscribed(self) -> bool:
        return self.peak_pods > self.capacity


@dataclass(frozen=True)
class SimResult:
    """A run's outcome: per job, per pool, and the headline figures."""

    jobs: tuple[JobResult, ...]
    """In id order."""
    pools: tuple[PoolResult, ...]
    makespan: Fraction
    """From the first job created to the last one ended (minutes)."""
    longest_wait: Fraction | None
    """The longest time from created to running, over the jobs that ran."""
    failed_by_reason: dict[str, int]
    end: Fraction
    """When the last job ended or the last scaled node was removed, whichever is later."""

    @property
    def failed(self) -> tuple[JobResult, ...]:
        return tuple(j for j in self.jobs if j.outcome == "failed")

    @property
    def eur(self) -> Fraction:
        """Every pool's GPU nodes over the run."""
        return sum((p.eur for p in self.pools), Fraction(0))

    def job(self, job_id: int) -> JobResult:
        return next(j for j in self.jobs if j.id == job_id)

    def pool(self, name: str) -> PoolResult:
        return next(p for p in self.pools if p.name == name)

    def as_json(self) -> dict[str, object]:
        """JSON-ready figures (minutes to 0.01, EUR to 1/10000 of a cent)."""
        return {
            "jobs": len(self.jobs),
            "failed": len(self.failed),
            "failed_by_reason": dict(sorted(self.failed_by_reason.items())),
            "makespan_minutes": round(float(self.makespan), 2),
            "longest_wait_minutes": None if self.longest_wait is None else round(float(self.longest_wait), 2),
            "eur": round(float(self.eur), 6),
            "pools": [
                {
                    "pool": p.name,
                    "nodes_created": p.nodes_created,
                    "peak_nodes": p.peak_nodes,
                    "peak_pods": p.peak_pods,
                    "capacity": p.capacity,
                    "node_minutes": p.node_minutes,
                    "eur": round(float(p.eur), 6),
                }
                for p in self.pools
            ],
            "failed_jobs": [
                {
                    "id": j.id,
                    "name": j.name,
                    "reason": j.reason,
                    "cause": j.cause,
                    "at_minute": round(float(j.finished), 2),
                }
                for j in self.failed
            ],
        }
