"""What a simulation run reports (pure): per job, per pool, and the headline figures, as exact Fractions of a
minute and of a euro (`as_json` rounds them for a report)."""

from __future__ import annotations

from dataclasses import dataclass, field
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
    first_id: int = 0
    """The id of the job's first attempt (its own id unless it is a retry)."""
    attempt: int = 0
    """0: the first attempt; 1, 2: GitLab's retries of it (each a new job, with a higher id)."""
    retried: bool = False
    """This attempt failed and GitLab retried it: the job's outcome is its last attempt's."""

    @property
    def slot_wait(self) -> Fraction:
        """Queued in GitLab until a runner took it (the whole attempt if none did)."""
        return (self.taken if self.taken is not None else self.finished) - self.created

    @property
    def node_wait(self) -> Fraction:
        """Taken until its pod ran (the rest of the attempt if it never did)."""
        if self.taken is None:
            return Fraction(0)
        return (self.started if self.started is not None else self.finished) - self.taken


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
    boots: tuple[tuple[str, Fraction, Fraction], ...] = field(default=(), compare=False)
    """Each node the autoscaler added: (name, created, ready), minutes."""

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
    """Jobs whose last attempt failed, by GitLab's failure reason (a retried job counts once)."""
    end: Fraction
    """When the last job ended or the last scaled node was removed, whichever is later."""
    retried_by_reason: dict[str, int] = field(default_factory=dict)
    """Attempts that failed and were retried, by reason."""

    @property
    def failed(self) -> tuple[JobResult, ...]:
        """The jobs that failed for good: failed attempts that were not retried."""
        return tuple(j for j in self.jobs if j.outcome == "failed" and not j.retried)

    @property
    def finals(self) -> tuple[JobResult, ...]:
        """Each job's last attempt, in the order of the jobs' first ids (one per job of the scenario)."""
        last: dict[int, JobResult] = {}
        for job in self.jobs:
            last[job.first_id] = job
        return tuple(last[first] for first in sorted(last))

    def waits(self) -> dict[int, tuple[Fraction, Fraction]]:
        """Per job (by first id): (waiting for a slot, waiting for a node) over all its attempts, until its last
        attempt ran or ended."""
        sums: dict[int, tuple[Fraction, Fraction]] = {}
        for job in self.jobs:
            earlier = sums.get(job.first_id)
            if earlier is None:  # its first attempt
                sums[job.first_id] = (job.slot_wait, job.node_wait)
            else:
                sums[job.first_id] = (earlier[0] + job.slot_wait, earlier[1] + job.node_wait)
        return sums

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
            "jobs": len(self.finals),
            "failed": len(self.failed),
            "failed_by_reason": dict(sorted(self.failed_by_reason.items())),
            **({"retried_by_reason": dict(sorted(self.retried_by_reason.items()))} if self.retried_by_reason else {}),
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
