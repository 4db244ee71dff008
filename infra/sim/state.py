"""The records of a run (pure): each job through GitLab's queue and its pod, each node, each pool's pods.

A job and its node refer to each other, so they live together; the components that change them are the
queue (`infra.sim.gitlab`), the runners (`infra.sim.runners`) and the cluster (`infra.sim.cluster`). Times are
whole milliseconds.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from fractions import Fraction

from infra.sim.boots import BootDraws
from infra.sim.results import PoolResult
from infra.sim.runners import ManagerState
from infra.sim.scenario import MS_PER_MINUTE, SimJob, SimPool

FULL_SPEED = Fraction(1)
"""The slowdown of a job alone on its GPU (or of one without a utilization)."""
FULL_RATE = (1, 1)
"""`FULL_SPEED` as a job's `rate`, (numerator, denominator)."""


@dataclass(eq=False)
class JobState:
    """One job: scheduled -> queued (GitLab) -> pending (its pod) -> running -> done."""

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
    remaining: int = 0
    """Work left as of `since`, in milliseconds alone on its GPU times `scale`: exact in integers (the work a
    slowdown a/b does in a millisecond, scale x b / a, is whole because a divides `scale`), as a Fraction would
    be, several times cheaper."""
    scale: int = 1
    """What `remaining` is counted in: a multiple of the numerator of every slowdown the job has run at."""
    since: int = 0
    rate: tuple[int, int] = FULL_RATE
    """Its slowdown now, as (numerator, denominator)."""
    step: int = 1
    """The work it does in a millisecond at `rate`, in `scale` units: scale x denominator / numerator."""
    rates: dict[int, tuple[int, int]] = field(default_factory=dict)
    """Its slowdown by the jobs on its GPU, as found (`infra.sim.cluster.slowdown`): one table for the jobs of a
    run with its utilization and pool, so a rate is looked up by an int, not worked out and hashed again."""
    version: int = 0
    """Bumped when its finish time changes: a finish event of an older version is stale."""
    reason: str | None = None
    cause: str | None = None
    first_id: int = 0
    """The id of its first attempt (its own, unless it is a retry)."""
    attempt: int = 0
    retried: bool = False


@dataclass(eq=False)
class NodeState:
    pool: PoolState
    name: str
    created: int
    ready_at: int
    warm: bool
    gpus: list[list[JobState]]
    ready: bool = False
    removed: int | None = None
    empty_since: int | None = None
    version: int = 0
    used: int = 0
    """Jobs running on it."""
    placeholder: bool = False
    """A warm window's placeholder pod holds one of its slots (one per node: anti-affinity)."""

    @property
    def taken(self) -> int:
        """Slots used as the scheduler counts them: its jobs and its placeholder."""
        return self.used + self.placeholder


@dataclass(eq=False)
class PoolState:
    spec: SimPool
    draws: BootDraws
    """The boot of each node it adds, in order (`infra.sim.boots`)."""
    unneeded: int
    delay_after_add: int
    nodes: list[NodeState] = field(default_factory=list)
    live: list[NodeState] = field(default_factory=list)
    """Nodes up or booting, oldest first (at most max_nodes)."""
    pending: deque[JobState] = field(default_factory=deque)
    pending_count: int = 0
    pods: int = 0
    peak_pods: int = 0
    peak_nodes: int = 0
    stockouts: list[tuple[int, int]] = field(default_factory=list)
    """[start, end) in ms: scale-ups fail."""
    warm_target: int = 0
    """Placeholder pods of the warm window now in force (its Deployment's replicas: one per node)."""
    placed: int = 0
    """Placeholders bound to a node (the others are Pending)."""

    @property
    def pending_placeholders(self) -> int:
        return self.warm_target - self.placed

    def in_stockout(self, now: int) -> bool:
        return any(start <= now < end for start, end in self.stockouts)

    def least_allocated(self, *, placeholder: bool = False) -> NodeState | None:
        """The ready node with the most free slots (its jobs and placeholder count), the oldest on a tie (None:
        no free slot); for a placeholder, only nodes without one (anti-affinity)."""
        best, best_taken = None, self.spec.slots_per_node
        for node in self.live:
            taken = node.used + node.placeholder  # `taken`, without the property's call
            if node.ready and taken < best_taken and not (placeholder and node.placeholder):
                best, best_taken = node, taken
        return best

    def preemptible(self) -> NodeState | None:
        """The oldest ready node whose last free slot a placeholder holds: a job preempts it there."""
        return next((n for n in self.live if n.ready and n.placeholder and n.used < self.spec.slots_per_node), None)

    def result(self, last_end: int) -> PoolResult:
        """What the pool's nodes billed; warm nodes to the last job's end."""
        scaled = warm = 0
        for node in self.nodes:
            if node.warm:
                warm += _started_minutes(last_end - node.created)
            else:
                assert node.removed is not None
                scaled += _started_minutes(node.removed - node.created)
        boots = tuple(
            (n.name, Fraction(n.created, MS_PER_MINUTE), Fraction(n.ready_at, MS_PER_MINUTE))
            for n in self.nodes
            if not n.warm
        )
        return PoolResult(
            name=self.spec.name,
            nodes_created=sum(1 for n in self.nodes if not n.warm),
            peak_nodes=self.peak_nodes,
            peak_pods=self.peak_pods,
            capacity=self.spec.slots_per_node * self.spec.max_nodes,
            scaled_node_minutes=scaled,
            warm_node_minutes=warm,
            eur=Fraction(scaled + warm) * Fraction(self.spec.eur_per_node_hour) / 60,
            boots=boots,
        )


def _started_minutes(ms: int) -> int:
    """Billing per started minute."""
    return -(-ms // MS_PER_MINUTE)
