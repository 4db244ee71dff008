"""A discrete-event simulation of GitLab handing CI jobs to Kubernetes runners on autoscaled GPU pools (pure).

Why: a job that a runner takes but the cluster cannot place fails after `poll_timeout`; a formula in waves
cannot see that. This module replays what each component does, event by event, and reports who waited,
who failed and what the nodes billed. No Pulumi, no `infra.config`: plain frozen dataclasses in, a
`SimResult` out; an adapter builds the `Scenario` from the platform model (pools, runners, workload).

Calling it::

    from infra.simulate import Scenario, SimJob, SimPool, SimRunner, Upgrade, bound_makespan, simulate

    result = simulate(Scenario(pools=(...), runners=(...), jobs=(...), upgrades=(Upgrade(20, "ci-training"),)))
    result.failed_by_reason       # {"runner_system_failure": 4}
    result.makespan, bound_makespan(scenario)   # Fractions of minutes
    result.eur, result.pool("ci-training").eur  # Fractions of EUR
    result.as_json()              # rounded figures for a report

Times are minutes (int, float or Fraction; a float is read as the decimal it prints, 0.1 and not its binary
neighbour), kept internally as whole milliseconds, so ties are exact and a run is deterministic (nothing
here is random). Results are exact Fractions of a minute and of a euro.

The model (each rule from the documented behaviour of GitLab 18.x, gitlab-runner 18.9 with the Kubernetes
executor, kube-scheduler, the cluster-autoscaler and the NVIDIA device plugin; docs/simulation.md says more):

- GitLab's queue. A job becomes pending at `created_minute`. A runner manager with a free slot (of its
  `concurrent`) asks for work and gets the lowest-id pending job whose tags are a non-empty subset of the
  runner's tags (project runners order the queue by build id; a runner without `run_untagged` never takes an
  untagged job). A free slot asks at once (long polling). When several managers could take jobs at the same
  instant, they take one job each in turn, in `Scenario.runners` order (older manager of a runner first).
- A taken job holds its manager's slot until it ends, its pod's Pending time included (a worker holds its
  slot through the whole build). A job whose `pool` is not among the runner's `pools` is taken and fails at
  once, `runner_system_failure` (the executor refuses the node-selector overwrite while preparing).
- A pending job is dropped with `stuck_or_timeout_failure` 24 h after its creation, or 1 h after it when no
  runner's tags match it (GitLab's stuck-builds worker; runners that long-poll count as online).
- A taken job's pod is Pending until a ready node of its pool has a free slot. The scheduler binds Pending
  pods in creation order (taken order), each on the ready node with the most free slots (kube-scheduler's
  default LeastAllocated scoring spreads pods of the same size), and within the node on the GPU with the
  fewest jobs (the device plugin's distributed allocation of shared replicas). A bound pod runs at once.
- The cluster-autoscaler: whenever a pool has Pending pods beyond the slots of its nodes still booting, it
  adds enough nodes to hold them, up to `max_nodes`; each is ready `cold_start_minutes` after the trigger.
  A node whose pods have gone (timed out) still comes up and idles until scale-down.
- A pod not Running `poll_timeout_minutes` after it was taken fails the job, `runner_system_failure`, and
  frees the runner slot. A pod must be Running strictly before that deadline: with `poll_timeout` equal to the
  cold start, the first job on a cold pool fails (in the real cluster the node's readiness is followed by
  scheduling, image pull and container start, and the autoscaler's scan, all after the modelled instant).
- The job timeout counts from the moment the job is taken, Pending included (runner 18.9 reports the job
  running as soon as it has it): `job_execution_timeout`, whether the pod is still Pending or running.
- At one instant, deadlines (timeouts, drops) fire before jobs finish, nodes become ready or managers start;
  then the scheduler binds, runners take jobs, and the autoscaler looks.
- A running job needs `minutes` of its GPU alone. It progresses at rate 1/slowdown, re-evaluated at every
  change on its GPU (processor sharing): time-slicing slowdown = max(1, u x n), n = jobs on that GPU now;
  MPS slowdown = max(1, u x replicas) always (each client is capped at 1/replicas of the GPU), replicas =
  `gpu_replicas` (default: slots_per_node / gpus_per_node, rounded up); without a `gpu_utilization` u: 1
  (sharing assumed free). Each job uses its own u (the rule of infra/cost.py); jobs of one profile share a
  pool, so u is normally uniform on a GPU.
- Scale-down: a ready node of a pool, not warm, empty since t is removed at max(t + scale_down_unneeded,
  creation + scale_down_delay_after_add) if still empty and no pod of its pool is Pending. The real
  autoscaler's delay-after-add counts from the last scale-up anywhere in the cluster; the model counts it per
  node (as infra/cost.py does).
- Billing: per started minute per node, from its creation (the cold start is billed) to its removal. Warm
  nodes (`warm_nodes`, the pool's min_size) are up from minute 0 and billed to the last job's end; a day's
  cost bills them 24 h instead (they are up anyway).
- A manager upgrade at minute M (`Upgrade`): `rolling` (a Deployment RollingUpdate, the chart's default): the
  new manager pod is ready at M + manager_restart_minutes; then the old one gets SIGQUIT, stops taking jobs
  and drains its own (they keep their slots), while the new one takes jobs with a full `concurrent`: the
  pool can be oversubscribed. `recreate`: the old manager stops taking jobs at M, drains its running and
  Pending jobs; manager_restart_minutes after the last of them ends the new one starts; queued jobs wait in
  GitLab meanwhile. An upgrade that arrives while a recreate is in progress is merged into it.

Bounded by construction: at most MAX_JOBS jobs (and the other MAX_* caps, checked before anything runs,
ValueError naming the field); every job yields a bounded number of events (created, drop, poll and job
deadlines; its start and its end each re-rate at most the MAX_SLOTS_PER_GPU jobs on its GPU), a node is
created only for a Pending pod not yet covered by a booting node (so at most one per job), and an upgrade
yields at most one manager start per runner. A run at the caps takes seconds; the design pipeline, a
millisecond. An internal event budget turns a broken invariant into a RuntimeError rather than a hang.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

from infra.quantity import exact_decimal

MS_PER_MINUTE = 60_000
MAX_JOBS = 10_000
MAX_POOLS = 50
MAX_RUNNERS = 50
MAX_UPGRADES = 100
MAX_NODES_PER_POOL = 200
MAX_SLOTS_PER_NODE = 64
MAX_SLOTS_PER_GPU = 16
"""Jobs sharing one GPU: every change on a GPU re-rates its jobs, so this bounds the work per job."""
MAX_CONCURRENT = 1_000
MAX_MINUTES = 30 * 24 * 60
"""Any time or duration in a scenario (30 days)."""

GITLAB_PENDING_OUTDATED_MINUTES = 24 * 60
GITLAB_PENDING_STUCK_MINUTES = 60

Minutes = float | Fraction
"""A time or duration in minutes: a float is read as the decimal it prints, a Fraction exactly."""
Strategy = Literal["rolling", "recreate"]
Outcome = Literal["success", "failed"]

# Event kinds, in the order they are handled at one instant (deadlines first, scale-down last).
_DROP, _POLL_DEADLINE, _JOB_DEADLINE, _FINISH, _NODE_READY, _UPGRADE, _MANAGER_START, _CREATED, _SCALE_DOWN = range(9)


@dataclass(frozen=True)
class SimPool:
    """A GPU node pool as the scheduler and the autoscaler see it."""

    name: str
    slots_per_node: int
    """Job pods a node schedules: GPUs x sharing replicas (1 per GPU without sharing), or fewer when CPU or
    memory fit fewer (infra/capacity.py's jobs_per_node)."""
    gpus_per_node: int
    """Physical GPUs per node; a job lands on the GPU of its node with the fewest jobs."""
    max_nodes: int
    """The pool's max_size: the autoscaler never goes beyond it."""
    warm_nodes: int
    """The pool's min_size: nodes up and ready at minute 0, never removed."""
    cold_start_minutes: Minutes
    """From the autoscaler's trigger to a node ready to run a pod (instance boot, GPU operator, image pull)."""
    eur_per_node_hour: Fraction
    """The node type's price per hour, billed per started minute."""
    scale_down_unneeded_minutes: Minutes
    """The autoscaler's scale_down_unneeded_time: how long a node stays empty before removal."""
    scale_down_delay_after_add_minutes: Minutes
    """The autoscaler's scale_down_delay_after_add: no removal sooner than this after the node's creation."""
    mps: bool = False
    """GPU sharing by MPS: each job is capped at 1/replicas of its GPU (else time-slicing, or no sharing)."""
    gpu_replicas: int = 0
    """The sharing replicas per GPU (MPS's cap); 0: ceil(slots_per_node / gpus_per_node)."""


@dataclass(frozen=True)
class SimRunner:
    """A runner (one token, one Helm release): what it takes and how many jobs it holds at once."""

    name: str
    tags: frozenset[str]
    """The runner's tags; it takes jobs whose tags are a non-empty subset of these (never untagged jobs)."""
    pools: frozenset[str]
    """Pools its job pods may be sent to (node_selector_overwrite_allowed); a job for another pool fails."""
    concurrent: int
    """Slots per manager (config.toml `concurrent`); a slot is held while the pod is Pending too."""
    poll_timeout_minutes: Minutes
    """[runners.kubernetes] poll_timeout: how long a pod may stay Pending before the job fails."""
    job_timeout_minutes: Minutes
    """The job timeout (project or runner maximum), counted from the moment the job is taken."""
    upgrade_strategy: Strategy = "rolling"
    """The manager Deployment's strategy: `rolling` (chart default) or `recreate`."""


@dataclass(frozen=True)
class SimJob:
    """One CI job as GitLab queues it."""

    id: int
    """GitLab build id: the hand-out order (ids follow the YAML order within a stage)."""
    name: str
    tags: frozenset[str]
    pool: str
    """Where its pod is sent (its node selector)."""
    minutes: Minutes
    """Run time alone on its GPU."""
    gpu_utilization: float | Fraction | None = None
    """The fraction of its GPU the job keeps busy when alone (0 < u <= 1); None: sharing is free."""
    created_minute: Minutes = 0
    """When the job becomes pending in GitLab (a pipeline's stage, a burst of the day)."""


@dataclass(frozen=True)
class Upgrade:
    """A manager upgrade (helm upgrade that changes the manager pod) at a minute, of one runner or all."""

    at_minute: Minutes
    runner: str | None = None


@dataclass(frozen=True)
class Scenario:
    """Everything a run needs."""

    pools: tuple[SimPool, ...]
    runners: tuple[SimRunner, ...]
    jobs: tuple[SimJob, ...]
    upgrades: tuple[Upgrade, ...] = ()
    manager_restart_minutes: Minutes = 1
    """From the manager pod's creation to it taking jobs (image pull, registration check)."""


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


# --- input checks ----------------------------------------------------------------------------------------------


def _ms(where: str, value: float | Fraction, *, positive: bool = False) -> int:
    """Minutes to whole milliseconds, refusing what the model cannot mean (one line naming the field)."""
    if isinstance(value, bool) or not isinstance(value, int | float | Fraction):
        raise ValueError(f"{where} must be a number of minutes, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where} must be a finite number of minutes, got {value!r}")
    minutes = exact_decimal(value)
    if minutes < 0 or (positive and minutes == 0) or minutes > MAX_MINUTES:
        low = "> 0" if positive else ">= 0"
        raise ValueError(f"{where} must be {low} and <= {MAX_MINUTES} minutes, got {value!r}")
    return round(minutes * MS_PER_MINUTE)


def _count(where: str, value: int, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{where} must be an integer from {low} to {high}, got {value!r}")
    return value


def _check_caps(scenario: Scenario) -> None:
    """The size caps first, before any per-item work: an oversized scenario is refused at once."""
    for where, items, cap in (
        ("Scenario.jobs", scenario.jobs, MAX_JOBS),
        ("Scenario.pools", scenario.pools, MAX_POOLS),
        ("Scenario.runners", scenario.runners, MAX_RUNNERS),
        ("Scenario.upgrades", scenario.upgrades, MAX_UPGRADES),
    ):
        if len(items) > cap:
            raise ValueError(f"{where}: {len(items)} entries, the simulation takes at most {cap}")


def _check(scenario: Scenario) -> None:
    _check_caps(scenario)
    pool_names = _check_pools(scenario.pools)
    runner_names = _check_runners(scenario.runners, pool_names)
    _check_jobs(scenario.jobs, pool_names)
    for upgrade in scenario.upgrades:
        _ms("Upgrade.at_minute", upgrade.at_minute)
        if upgrade.runner is not None and upgrade.runner not in runner_names:
            raise ValueError(f"Upgrade.runner must name a runner in Scenario.runners, got {upgrade.runner!r}")
    _ms("Scenario.manager_restart_minutes", scenario.manager_restart_minutes)


def _check_pools(pools: tuple[SimPool, ...]) -> set[str]:
    if not pools:
        raise ValueError("Scenario.pools must name at least one pool, got none")
    pool_names: set[str] = set()
    for pool in pools:
        where = f"SimPool {pool.name!r}"
        if not pool.name or pool.name in pool_names:
            raise ValueError(f"SimPool.name must be non-empty and unique, got {pool.name!r}")
        pool_names.add(pool.name)
        _count(f"{where}: slots_per_node", pool.slots_per_node, 1, MAX_SLOTS_PER_NODE)
        _count(f"{where}: gpus_per_node", pool.gpus_per_node, 1, MAX_SLOTS_PER_NODE)
        if pool.slots_per_node > pool.gpus_per_node * MAX_SLOTS_PER_GPU:
            raise ValueError(
                f"{where}: slots_per_node must be at most {MAX_SLOTS_PER_GPU} per GPU "
                f"({pool.gpus_per_node} GPUs), got {pool.slots_per_node}"
            )
        _count(f"{where}: gpu_replicas", pool.gpu_replicas, 0, MAX_SLOTS_PER_GPU)
        _count(f"{where}: max_nodes", pool.max_nodes, 0, MAX_NODES_PER_POOL)
        _count(f"{where}: warm_nodes", pool.warm_nodes, 0, pool.max_nodes)
        _ms(f"{where}: cold_start_minutes", pool.cold_start_minutes)
        _ms(f"{where}: scale_down_unneeded_minutes", pool.scale_down_unneeded_minutes)
        _ms(f"{where}: scale_down_delay_after_add_minutes", pool.scale_down_delay_after_add_minutes)
        if not isinstance(pool.eur_per_node_hour, int | Fraction) or pool.eur_per_node_hour < 0:
            raise ValueError(f"{where}: eur_per_node_hour must be a Fraction >= 0, got {pool.eur_per_node_hour!r}")
    return pool_names


def _check_runners(runners: tuple[SimRunner, ...], pool_names: set[str]) -> set[str]:
    runner_names: set[str] = set()
    for runner in runners:
        where = f"SimRunner {runner.name!r}"
        if not runner.name or runner.name in runner_names:
            raise ValueError(f"SimRunner.name must be non-empty and unique, got {runner.name!r}")
        runner_names.add(runner.name)
        unknown = sorted(set(runner.pools) - pool_names)
        if not runner.pools or unknown:
            raise ValueError(f"{where}: pools must name known pools, got {sorted(runner.pools)!r}")
        _count(f"{where}: concurrent", runner.concurrent, 1, MAX_CONCURRENT)
        _ms(f"{where}: poll_timeout_minutes", runner.poll_timeout_minutes, positive=True)
        _ms(f"{where}: job_timeout_minutes", runner.job_timeout_minutes, positive=True)
        if runner.upgrade_strategy not in ("rolling", "recreate"):
            raise ValueError(f"{where}: upgrade_strategy must be rolling or recreate, got {runner.upgrade_strategy!r}")
    return runner_names


def _check_jobs(jobs: tuple[SimJob, ...], pool_names: set[str]) -> None:
    ids: set[int] = set()
    for job in jobs:
        where = f"SimJob {job.id!r} ({job.name})"
        if isinstance(job.id, bool) or not isinstance(job.id, int) or job.id in ids:
            raise ValueError(f"SimJob.id must be a unique integer, got {job.id!r}")
        ids.add(job.id)
        if job.pool not in pool_names:
            raise ValueError(f"{where}: pool must be a known pool, got {job.pool!r}")
        _ms(f"{where}: minutes", job.minutes, positive=True)
        _ms(f"{where}: created_minute", job.created_minute)
        u = job.gpu_utilization
        if u is not None and (isinstance(u, bool) or not isinstance(u, int | float | Fraction) or not 0 < u <= 1):
            raise ValueError(f"{where}: gpu_utilization must be in (0, 1] or None, got {u!r}")


# --- the model's state -----------------------------------------------------------------------------------------


def slowdown(utilization: Fraction | None, sharers: int, *, mps: bool, replicas: int) -> Fraction:
    """How much longer a job takes: time-slicing max(1, u x jobs on its GPU); MPS max(1, u x replicas)."""
    if utilization is None:
        return Fraction(1)
    return max(Fraction(1), utilization * (replicas if mps else sharers))


@dataclass(eq=False)
class _Job:
    spec: SimJob
    work: int
    utilization: Fraction | None
    created: int
    state: str = "scheduled"  # scheduled -> queued -> pending -> running -> done
    taken: int | None = None
    started: int | None = None
    ended: int | None = None
    manager: _Manager | None = None
    node: _Node | None = None
    gpu: int = 0
    remaining: Fraction = Fraction(0)
    since: int = 0
    rate_slowdown: Fraction = Fraction(1)
    version: int = 0
    reason: str | None = None
    cause: str | None = None


@dataclass(eq=False)
class _Node:
    pool: _Pool
    name: str
    created: int
    ready_at: int
    warm: bool
    gpus: list[list[_Job]]
    ready: bool = False
    removed: int | None = None
    empty_since: int | None = None
    version: int = 0
    used: int = 0
    """Jobs running on it."""


@dataclass(eq=False)
class _Pool:
    spec: SimPool
    cold: int
    unneeded: int
    delay_after_add: int
    nodes: list[_Node] = field(default_factory=list)
    live: list[_Node] = field(default_factory=list)
    """Nodes up or booting, oldest first (at most max_nodes)."""
    pending: deque[_Job] = field(default_factory=deque)
    pending_count: int = 0
    pods: int = 0
    peak_pods: int = 0
    peak_nodes: int = 0

    @property
    def replicas(self) -> int:
        return _replicas(self.spec)


@dataclass(eq=False)
class _Manager:
    runner: _Runner
    generation: int
    accepting: bool = True
    held: int = 0


@dataclass(eq=False)
class _Runner:
    spec: SimRunner
    poll: int
    timeout: int
    managers: list[_Manager] = field(default_factory=list)
    groups: list[list[int]] = field(default_factory=list)
    """The queue heaps (job ids) of the tag sets this runner matches."""
    generations: int = 1
    starved: bool = False
    """Nothing queued matches it: skip it until a matching job is queued."""
    recreating: bool = False
    """A recreate upgrade is draining the old manager or waiting for the new one."""


class _Simulation:
    def __init__(self, scenario: Scenario) -> None:
        self.restart = _ms("manager_restart_minutes", scenario.manager_restart_minutes)
        self.pools = {
            p.name: _Pool(
                p,
                _ms("cold", p.cold_start_minutes),
                _ms("unneeded", p.scale_down_unneeded_minutes),
                _ms("delay", p.scale_down_delay_after_add_minutes),
            )
            for p in scenario.pools
        }
        self.jobs = {
            j.id: _Job(
                j,
                _ms("minutes", j.minutes),
                _utilization(j),
                _ms("created", j.created_minute),
            )
            for j in scenario.jobs
        }
        self.queues: dict[frozenset[str], list[int]] = {tags: [] for tags in {j.tags for j in scenario.jobs if j.tags}}
        self.runners: list[_Runner] = []
        for spec in scenario.runners:
            runner = _Runner(spec, _ms("poll", spec.poll_timeout_minutes), _ms("timeout", spec.job_timeout_minutes))
            runner.groups = [heap for tags, heap in self.queues.items() if tags <= spec.tags]
            runner.managers.append(_Manager(runner, 0))
            self.runners.append(runner)
        self.matchers = {tags: [r for r in self.runners if tags <= r.spec.tags] for tags in self.queues}
        self.heap: list[tuple[int, int, int, object]] = []
        self.recheck: list[_Node] = []
        self.seq = 0
        self.events = 0
        sharers = max(_full_gpu(p) for p in scenario.pools)
        self.event_budget = 16 + len(self.jobs) * (12 + 2 * sharers)
        self.event_budget += 4 * len(scenario.upgrades) * len(scenario.runners)
        self.event_budget += 2 * sum(p.spec.max_nodes for p in self.pools.values())
        for pool in self.pools.values():
            for _ in range(pool.spec.warm_nodes):
                node = self._add_node(pool, 0, warm=True)
                node.ready = True
        for job in self.jobs.values():
            self._push(job.created, _CREATED, job)
        for upgrade in scenario.upgrades:
            self._push(_ms("at", upgrade.at_minute), _UPGRADE, upgrade)

    # events

    def _push(self, at: int, kind: int, payload: object) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (at, kind, self.seq, payload))

    def run(self) -> None:
        while self.heap:
            now = self.heap[0][0]
            while self.heap and self.heap[0][0] == now:
                _, kind, _, payload = heapq.heappop(self.heap)
                self.events += 1
                if self.events > self.event_budget:  # pragma: no cover - the bound in the module docstring
                    raise RuntimeError(f"simulation exceeded its event bound ({self.event_budget})")
                self._handle(now, kind, payload)
            self._settle(now)

    def _handle(self, now: int, kind: int, payload: object) -> None:  # noqa: PLR0912 - one branch per event kind
        if kind == _CREATED:
            assert isinstance(payload, _Job)
            self._created(now, payload)
        elif kind == _DROP:
            assert isinstance(payload, tuple)
            job, cause = payload
            if job.state == "queued":
                self._end(job, now, "stuck_or_timeout_failure", cause)
        elif kind == _POLL_DEADLINE:
            assert isinstance(payload, _Job)
            if payload.state == "pending":
                self._end(payload, now, "runner_system_failure", "poll_timeout")
        elif kind == _JOB_DEADLINE:
            assert isinstance(payload, _Job)
            if payload.state in ("pending", "running"):
                self._end(payload, now, "job_execution_timeout", "job_timeout")
        elif kind == _FINISH:
            assert isinstance(payload, tuple)
            job, version = payload
            if job.state == "running" and job.version == version:
                self._end(job, now, None, None)
        elif kind == _NODE_READY:
            assert isinstance(payload, _Node)
            payload.ready = True
            self._maybe_idle(payload, now)
        elif kind == _SCALE_DOWN:
            assert isinstance(payload, tuple)
            node, version = payload
            if node.version == version and node.removed is None and node.used == 0:
                if node.pool.pending_count:  # a Pending pod is bound to it at this instant: look again after
                    node.empty_since = None
                    self.recheck.append(node)
                else:
                    node.removed = now
                    node.pool.live.remove(node)
        elif kind == _UPGRADE:
            assert isinstance(payload, Upgrade)
            self._upgrade(now, payload)
        elif kind == _MANAGER_START:
            assert isinstance(payload, _Runner)
            self._start_manager(payload)

    # GitLab's queue and the runners

    def _created(self, now: int, job: _Job) -> None:
        job.state = "queued"
        tags = job.spec.tags
        matched = bool(tags) and bool(self.matchers[tags])
        if tags:
            heapq.heappush(self.queues[tags], job.spec.id)
            for runner in self.matchers[tags]:
                runner.starved = False
        if matched:
            self._push(now + GITLAB_PENDING_OUTDATED_MINUTES * MS_PER_MINUTE, _DROP, (job, "outdated"))
        else:
            self._push(now + GITLAB_PENDING_STUCK_MINUTES * MS_PER_MINUTE, _DROP, (job, "stuck"))

    def _next_job(self, runner: _Runner) -> _Job | None:
        """The lowest-id queued job among the tag sets the runner matches (GitLab: build_id ASC)."""
        best: list[int] | None = None
        for heap in runner.groups:
            while heap and self.jobs[heap[0]].state != "queued":
                heapq.heappop(heap)
            if heap and (best is None or heap[0] < best[0]):
                best = heap
        return self.jobs[heapq.heappop(best)] if best is not None else None

    def _dispatch(self, now: int) -> bool:
        """Managers with a free slot take one job each in turn until none can take more."""
        took_any = False
        progress = True
        while progress:
            progress = False
            for runner in self.runners:
                if runner.starved:
                    continue
                for manager in runner.managers:
                    if not manager.accepting or manager.held >= runner.spec.concurrent:
                        continue
                    job = self._next_job(runner)
                    if job is None:
                        runner.starved = True  # until a job it matches is queued
                        break
                    self._take(manager, job, now)
                    progress = took_any = True
        return took_any

    def _take(self, manager: _Manager, job: _Job, now: int) -> None:
        runner = manager.runner
        job.taken, job.manager = now, manager
        if job.spec.pool not in runner.spec.pools:
            job.state = "done"
            job.ended, job.reason, job.cause = now, "runner_system_failure", "refused"
            return
        job.state = "pending"
        manager.held += 1
        pool = self.pools[job.spec.pool]
        pool.pending.append(job)
        pool.pending_count += 1
        pool.pods += 1
        pool.peak_pods = max(pool.peak_pods, pool.pods)
        self._push(now + runner.poll, _POLL_DEADLINE, job)
        self._push(now + runner.timeout, _JOB_DEADLINE, job)

    def _end(self, job: _Job, now: int, reason: str | None, cause: str | None) -> None:
        """A job ends (success when reason is None): free its GPU share, its node slot, its runner slot."""
        previous = job.state
        job.state, job.ended, job.reason, job.cause = "done", now, reason, cause
        if previous == "queued":
            return
        pool = self.pools[job.spec.pool]
        pool.pods -= 1
        if previous == "pending":
            pool.pending_count -= 1
        elif previous == "running":
            assert job.node is not None
            sharers = job.node.gpus[job.gpu]
            self._advance(sharers, now)
            sharers.remove(job)
            job.node.used -= 1
            self._reschedule(sharers, pool, now)
            self._maybe_idle(job.node, now)
        manager = job.manager
        assert manager is not None
        manager.held -= 1
        runner = manager.runner
        drained = not any(m.accepting or m.held for m in runner.managers)
        if runner.recreating and drained:
            self._push(now + self.restart, _MANAGER_START, runner)

    def _upgrade(self, now: int, upgrade: Upgrade) -> None:
        for runner in self.runners:
            if upgrade.runner is not None and runner.spec.name != upgrade.runner:
                continue
            if runner.spec.upgrade_strategy == "rolling":
                self._push(now + self.restart, _MANAGER_START, runner)
            elif not runner.recreating:
                runner.recreating = True
                for manager in runner.managers:
                    manager.accepting = False
                if sum(m.held for m in runner.managers) == 0:
                    self._push(now + self.restart, _MANAGER_START, runner)

    def _start_manager(self, runner: _Runner) -> None:
        """The new manager pod is up: it takes jobs, every older one stops taking (SIGQUIT) and drains."""
        for manager in runner.managers:
            manager.accepting = False
        runner.managers = [m for m in runner.managers if m.held]  # drained ones are gone
        runner.managers.append(_Manager(runner, runner.generations))
        runner.generations += 1
        runner.recreating = False

    # the scheduler, the GPUs and the autoscaler

    def _settle(self, now: int) -> None:
        while self._bind(now) | self._dispatch(now):
            pass
        self._autoscale(now)
        for node in self.recheck:
            self._maybe_idle(node, now)
        self.recheck.clear()

    def _bind(self, now: int) -> bool:
        bound = False
        for pool in self.pools.values():
            while pool.pending_count:
                job = pool.pending[0]
                if job.state != "pending":
                    pool.pending.popleft()
                    continue
                node = self._least_allocated(pool)
                if node is None:
                    break
                pool.pending.popleft()
                self._start(job, pool, node, now)
                bound = True
        return bound

    @staticmethod
    def _least_allocated(pool: _Pool) -> _Node | None:
        """The ready node with the most free slots, the oldest on a tie (None: no free slot)."""
        best, best_used = None, pool.spec.slots_per_node
        for node in pool.live:
            used = node.used
            if node.ready and used < best_used:
                best, best_used = node, used
        return best

    def _start(self, job: _Job, pool: _Pool, node: _Node, now: int) -> None:
        pool.pending_count -= 1
        gpu = min(range(len(node.gpus)), key=lambda i: (len(node.gpus[i]), i))
        job.state, job.started, job.node, job.gpu = "running", now, node, gpu
        job.remaining, job.since = Fraction(job.work), now
        node.empty_since = None
        node.version += 1
        node.used += 1
        sharers = node.gpus[gpu]
        self._advance(sharers, now)
        sharers.append(job)
        self._reschedule(sharers, pool, now)

    @staticmethod
    def _advance(sharers: list[_Job], now: int) -> None:
        """Count the work done on a GPU since the last change, at each job's rate then."""
        for job in sharers:
            job.remaining -= Fraction(now - job.since) / job.rate_slowdown
            job.since = now

    def _reschedule(self, sharers: list[_Job], pool: _Pool, now: int) -> None:
        """New rates on a GPU; a job whose rate is unchanged keeps its finish event (same instant, exactly)."""
        for job in sharers:
            rate = slowdown(job.utilization, len(sharers), mps=pool.spec.mps, replicas=pool.replicas)
            if rate == job.rate_slowdown and job.version:
                continue
            job.rate_slowdown = rate
            job.version += 1
            left = max(Fraction(0), job.remaining) * job.rate_slowdown
            self._push(now + math.ceil(left), _FINISH, (job, job.version))

    def _maybe_idle(self, node: _Node, now: int) -> None:
        if node.warm or not node.ready or node.removed is not None or node.used or node.empty_since is not None:
            return
        node.empty_since = now
        node.version += 1
        pool = node.pool
        at = max(now + pool.unneeded, node.created + pool.delay_after_add)
        self._push(at, _SCALE_DOWN, (node, node.version))

    def _add_node(self, pool: _Pool, now: int, *, warm: bool) -> _Node:
        node = _Node(
            pool,
            f"{pool.spec.name}-{len(pool.nodes) + 1}",
            now,
            now if warm else now + pool.cold,
            warm,
            [[] for _ in range(pool.spec.gpus_per_node)],
        )
        pool.nodes.append(node)
        pool.live.append(node)
        pool.peak_nodes = max(pool.peak_nodes, len(pool.live))
        return node

    def _autoscale(self, now: int) -> None:
        """Enough new nodes for the Pending pods that booting nodes will not hold, up to max_nodes."""
        for pool in self.pools.values():
            if not pool.pending_count:
                continue
            live = pool.live
            booting = sum(pool.spec.slots_per_node for n in live if not n.ready)
            uncovered = pool.pending_count - booting
            if uncovered <= 0:
                continue
            wanted = math.ceil(uncovered / pool.spec.slots_per_node)
            for _ in range(min(wanted, pool.spec.max_nodes - len(live))):
                node = self._add_node(pool, now, warm=False)
                self._push(node.ready_at, _NODE_READY, node)

    # results

    def result(self) -> SimResult:
        jobs = sorted(self.jobs.values(), key=lambda j: j.spec.id)
        ends = [j.ended for j in jobs if j.ended is not None]
        last_end = max(ends, default=0)
        first = min((j.created for j in jobs), default=0)
        removals = [n.removed for p in self.pools.values() for n in p.nodes if n.removed is not None]
        end = max([last_end, *removals])
        failed: dict[str, int] = {}
        for job in jobs:
            if job.reason is not None:
                failed[job.reason] = failed.get(job.reason, 0) + 1
        waits = [j.started - j.created for j in jobs if j.started is not None]
        return SimResult(
            jobs=tuple(self._job_result(j) for j in jobs),
            pools=tuple(self._pool_result(p, last_end) for p in self.pools.values()),
            makespan=_minutes(last_end - first) if jobs else Fraction(0),
            longest_wait=_minutes(max(waits)) if waits else None,
            failed_by_reason=failed,
            end=_minutes(end),
        )

    @staticmethod
    def _job_result(job: _Job) -> JobResult:
        assert job.ended is not None
        return JobResult(
            id=job.spec.id,
            name=job.spec.name,
            pool=job.spec.pool,
            created=_minutes(job.created),
            taken=None if job.taken is None else _minutes(job.taken),
            started=None if job.started is None else _minutes(job.started),
            finished=_minutes(job.ended),
            runner=None if job.manager is None else job.manager.runner.spec.name,
            manager=None if job.manager is None else job.manager.generation,
            node=None if job.node is None else job.node.name,
            outcome="success" if job.reason is None else "failed",
            reason=job.reason,
            cause=job.cause,
        )

    @staticmethod
    def _pool_result(pool: _Pool, last_end: int) -> PoolResult:
        scaled = warm = 0
        for node in pool.nodes:
            if node.warm:
                warm += _started_minutes(last_end - node.created)
            else:
                assert node.removed is not None
                scaled += _started_minutes(node.removed - node.created)
        return PoolResult(
            name=pool.spec.name,
            nodes_created=sum(1 for n in pool.nodes if not n.warm),
            peak_nodes=pool.peak_nodes,
            peak_pods=pool.peak_pods,
            capacity=pool.spec.slots_per_node * pool.spec.max_nodes,
            scaled_node_minutes=scaled,
            warm_node_minutes=warm,
            eur=Fraction(scaled + warm) * Fraction(pool.spec.eur_per_node_hour) / 60,
        )


def _full_gpu(pool: SimPool) -> int:
    """Jobs on the busiest GPU of a full node (the device plugin spreads them over the GPUs)."""
    return -(-pool.slots_per_node // pool.gpus_per_node)


def _replicas(pool: SimPool) -> int:
    return pool.gpu_replicas or _full_gpu(pool)


def _utilization(job: SimJob) -> Fraction | None:
    return None if job.gpu_utilization is None else exact_decimal(job.gpu_utilization)


def _minutes(ms: int) -> Fraction:
    return Fraction(ms, MS_PER_MINUTE)


def _started_minutes(ms: int) -> int:
    """Billing per started minute."""
    return -(-ms // MS_PER_MINUTE)


def simulate(scenario: Scenario) -> SimResult:
    """Run the scenario to its end (every job ended, every scaled node removed); see the module docstring."""
    _check(scenario)
    simulation = _Simulation(scenario)
    simulation.run()
    return simulation.result()


def bound_makespan(scenario: Scenario) -> Fraction:
    """The makespan the slots allow (minutes), the figure a good dispatch reaches within 1.1x.

    Per pool: its cold start (none with a warm node) + ceil(jobs / (slots_per_node x max_nodes)) waves of its
    longest job, counted from the pool's first job's creation; the largest over pools, from the first job's
    creation. With a `gpu_utilization` a wave lasts as long as that job takes sharing its GPU: a full wave
    with ceil(slots_per_node / gpus_per_node) jobs per GPU, a last partial wave spread as thin as the nodes
    and GPUs allow (MPS: max(1, u x replicas) always). A pool with max_nodes 0 and jobs has no bound: its
    jobs never run (ValueError).
    """
    _check(scenario)
    if not scenario.jobs:
        return Fraction(0)
    first = min(exact_decimal(j.created_minute) for j in scenario.jobs)
    bound = Fraction(0)
    for pool in scenario.pools:
        jobs = [j for j in scenario.jobs if j.pool == pool.name]
        if not jobs:
            continue
        if pool.max_nodes == 0:
            raise ValueError(f"SimPool {pool.name!r}: max_nodes is 0 but {len(jobs)} job(s) need it")

        def wave(sharers: int, jobs: list[SimJob] = jobs, pool: SimPool = pool) -> Fraction:
            return max(
                exact_decimal(j.minutes) * slowdown(_utilization(j), sharers, mps=pool.mps, replicas=_replicas(pool))
                for j in jobs
            )

        full_waves, rest = divmod(len(jobs), pool.slots_per_node * pool.max_nodes)
        length = full_waves * wave(_full_gpu(pool))
        if rest:
            length += wave(-(-rest // (pool.max_nodes * pool.gpus_per_node)))
        cold = Fraction(0) if pool.warm_nodes else exact_decimal(pool.cold_start_minutes)
        start = min(exact_decimal(j.created_minute) for j in jobs) - first
        bound = max(bound, start + cold + length)
    return bound
