"""A discrete-event simulation of GitLab handing CI jobs to Kubernetes runners on autoscaled GPU pools (pure).

Why: a job that a runner takes but the cluster cannot place fails after `poll_timeout`; a formula in waves
cannot see that. The engine replays what each component does, event by event, and reports who waited, who
failed and what the nodes billed. A `Scenario` in (`infra.sim.scenario`), a `SimResult` out
(`infra.sim.results`)::

    from infra.sim.engine import simulate
    from infra.sim.scenario import Scenario, Upgrade

    result = simulate(Scenario(pools=(...), runners=(...), jobs=(...), upgrades=(Upgrade(20, "ci-training"),)))
    result.failed_by_reason       # {"runner_system_failure": 4}
    result.makespan               # a Fraction of minutes (infra.sim.bound.bound_makespan: what the slots allow)
    result.eur, result.pool("ci-training").eur  # Fractions of EUR

Each component is its own object, each rule from the documented behaviour of GitLab 18.x, gitlab-runner 18.9
with the Kubernetes executor, kube-scheduler, the cluster-autoscaler and the NVIDIA device plugin
(docs/simulation.md says more): GitLab's queue (`infra.sim.gitlab`), the runners' managers and slots and
their upgrades (`infra.sim.runners`), the pools' nodes, scheduler, GPUs, autoscaler and billing
(`infra.sim.cluster`), all on one schedule (`infra.sim.schedule`). The engine ties them together:

- A free slot asks at once (long polling). When several managers could take jobs at the same instant, they
  take one job each in turn, in `Scenario.runners` order (older manager of a runner first).
- A job whose `pool` is not among the runner's `pools` is taken and fails at once, `runner_system_failure`
  (the executor refuses the node-selector overwrite while preparing).
- A pod not Running `poll_timeout_minutes` after it was taken fails the job, `runner_system_failure`, and
  frees the runner slot. A pod must be Running strictly before that deadline: with `poll_timeout` equal to the
  cold start, the first job on a cold pool fails (in the real cluster the node's readiness is followed by
  scheduling, image pull and container start, and the autoscaler's scan, all after the modelled instant).
- The job timeout counts from the moment the job is taken, Pending included (runner 18.9 reports the job
  running as soon as it has it): `job_execution_timeout`, whether the pod is still Pending or running.
- At one instant, deadlines (timeouts, drops) fire before jobs finish, nodes become ready or managers start;
  then the scheduler binds, runners take jobs, and the autoscaler looks.

Bounded by construction: at most MAX_JOBS jobs (and the other MAX_* caps, checked before anything runs,
ValueError naming the field); every job yields a bounded number of events (created, drop, poll and job
deadlines; its start and its end each re-rate at most the MAX_SLOTS_PER_GPU jobs on its GPU), a node is
created only for a Pending pod not yet covered by a booting node (so at most one per job), and an upgrade
yields at most one manager start per runner. A run at the caps takes seconds; the design pipeline, a
millisecond. The schedule's event budget turns a broken invariant into a RuntimeError rather than a hang.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from fractions import Fraction
from heapq import heappop

from infra.sim.cluster import Cluster
from infra.sim.gitlab import GitlabQueue
from infra.sim.memo import Memo
from infra.sim.results import JobResult, SimResult
from infra.sim.runners import ManagerState, RunnerState
from infra.sim.scenario import MS_PER_MINUTE, Scenario, Upgrade, checked_job_times, to_ms
from infra.sim.schedule import (
    CREATED,
    DROP,
    FINISH,
    JOB_DEADLINE,
    MANAGER_START,
    NODE_READY,
    POLL_DEADLINE,
    RESUME,
    SCALE_DOWN,
    UPGRADE,
    WARM,
    Schedule,
)
from infra.sim.state import JobState, NodeState, PoolState


def simulate(scenario: Scenario) -> SimResult:
    """Run the scenario to its end (every job ended, every scaled node removed); see the module docstring."""
    simulation = _Simulation(scenario, checked_job_times(scenario))
    simulation.run()
    return simulation.result()


def simulate_spec(scenario: Scenario) -> SimResult:
    """`simulate` of a scenario built from a spec (`infra.sim.platform_scenario.scenario`), the last runs remembered
    by their scenario (frozen: a run is a function of it). The plans of specs alike dispatch the same weeks, and
    hashing a week's scenario costs a twentieth of running it. Only for scenarios a spec builds: there a number is
    always of the same type, where two equal scenarios by hand could hold 0.1 and Fraction(0.1), equal but
    simulated apart (a float is read as the decimal it prints)."""
    found = _RESULTS.get(scenario)
    return found if found is not None else _RESULTS.keep(scenario, simulate(scenario))


_RESULTS: Memo[Scenario, SimResult] = Memo(128)


Dispatched = tuple[list[JobState], dict[str, PoolState]]
"""A run's records: every attempt's `JobState` in id order, and each pool's `PoolState`, by name."""


def simulate_states(scenario: Scenario) -> Dispatched:
    """`simulate` without its `SimResult`: every attempt's record (whole milliseconds) in id order and each pool's
    state at the end, for a caller that reads a few figures of many runs (`infra.sim.pool_runs`)."""
    simulation = _Simulation(scenario, checked_job_times(scenario))
    simulation.run()
    return sorted(simulation.jobs.values(), key=lambda j: j.spec.id), simulation.cluster.pools


class _Simulation:
    def __init__(self, scenario: Scenario, times: list[tuple[int, int]]) -> None:
        """`times`: each job's run time and creation in milliseconds, in `scenario.jobs` order (as
        `checked_job_times` found them)."""
        self.restart = to_ms("manager_restart_minutes", scenario.manager_restart_minutes)
        self.jobs = {}
        # jobs alike share `JobState.rates`: by the utilization as given (a float's hash is C's, a Fraction's Python's)
        tables: dict[tuple[object, str], dict[int, tuple[int, int]]] = {}
        for j, (work, created) in zip(scenario.jobs, times, strict=True):
            job = self.jobs[j.id] = JobState(j, work, j.exact_utilization, created, first_id=j.id)
            if job.utilization is not None:
                job.rates = tables.setdefault((j.gpu_utilization, j.pool), {})
        sharers = max(p.full_gpu for p in scenario.pools)
        attempts = len(self.jobs) * (1 + max((j.retry_max for j in scenario.jobs), default=0))
        budget = 16 + attempts * (12 + 2 * sharers)
        budget += sum(2 * len(p.warm_windows) + len(p.stockouts) for p in scenario.pools)
        budget += sum(3 * nodes for p in scenario.pools for _, _, nodes in p.warm_windows)  # their nodes' events
        budget += 4 * len(scenario.upgrades) * len(scenario.runners)
        budget += 2 * sum(p.max_nodes for p in scenario.pools)
        self.schedule = Schedule(budget)
        self.cluster = Cluster(scenario.pools, self.schedule)
        self.runners = [
            RunnerState(spec, to_ms("poll", spec.poll_timeout_minutes), to_ms("timeout", spec.job_timeout_minutes))
            for spec in scenario.runners
        ]
        self.queue = GitlabQueue(self.jobs, self.runners)
        self.next_id = max(self.jobs, default=0) + 1
        """GitLab's next build id: a retry is a new job at the end of the queue."""
        for job in self.jobs.values():
            self.schedule.push(job.created, CREATED, job)
        for upgrade in scenario.upgrades:
            self.schedule.push(to_ms("at", upgrade.at_minute), UPGRADE, upgrade)

    def run(self) -> None:
        """Every event due at an instant, in the schedule's order, then the instant settles; until none is left.
        (The loop pops the heap itself and ends a job's FINISH here, the most frequent event: a run handles
        a thousand events or more, each costing a few calls.)"""
        schedule = self.schedule
        heap, handle, end, bind, dispatch, autoscale = (
            schedule.heap,
            self._handle,
            self._end,
            self.cluster.bind,
            self._dispatch,
            self.cluster.autoscale,
        )
        budget, handled = schedule.budget, schedule.handled
        while heap:
            now = heap[0][0]
            changed = False
            while heap and heap[0][0] == now:
                _, kind, _, payload = heappop(heap)
                handled += 1
                if handled > budget:  # pragma: no cover - the bound in the module docstring
                    raise RuntimeError(f"simulation exceeded its event bound ({budget})")
                if kind == FINISH:  # a rescheduled job leaves stale finish events
                    job: JobState
                    version: int
                    job, version = payload  # type: ignore[misc]
                    if job.state == "running" and job.version == version:
                        end(job, now, None, None)
                        changed = True
                elif POLL_DEADLINE <= kind <= JOB_DEADLINE:  # the two deadlines (adjacent kinds: `infra.sim.schedule`)
                    # most are void (the job ran or ended): looked at here, without `_handle`'s call
                    state = payload.state  # type: ignore[attr-defined]
                    if state == "pending" or (kind == JOB_DEADLINE and state == "running"):
                        handle(now, kind, payload)
                        changed = True
                elif handle(now, kind, payload):
                    changed = True
            # the instant settles: the scheduler binds and the runners take jobs until neither can, then the
            # autoscaler looks. Where every event of the instant was void (a stale finish, a deadline of a job
            # gone on, a scale-down made void), nothing the settling reads has moved since the last instant
            # settled (it reads no clock: a stock-out's end is an event of its own), so it would change nothing:
            # most of a run's instants are such deadlines.
            if changed:
                while bind(now) | dispatch(now):
                    pass
                autoscale(now)
        schedule.handled = handled

    def _handle(self, now: int, kind: int, payload: object) -> bool:  # noqa: PLR0912 - one branch per kind
        """Handle one event of a kind but FINISH (`run`), in the order they are most often due; False when it was
        void and changed nothing (a deadline of a job gone on, a stale scale-down)."""
        if kind == CREATED:
            assert isinstance(payload, JobState)
            at, cause = self.queue.enqueue(payload, now)
            self.schedule.push(at, DROP, (payload, cause))
        elif kind == POLL_DEADLINE:
            assert isinstance(payload, JobState)
            if payload.state != "pending":
                return False
            self._end(payload, now, "runner_system_failure", "poll_timeout")
        elif kind == JOB_DEADLINE:
            assert isinstance(payload, JobState)
            if payload.state not in ("pending", "running"):
                return False
            self._end(payload, now, "job_execution_timeout", "job_timeout")
        elif kind == DROP:
            assert isinstance(payload, tuple)
            job, cause = payload
            if job.state != "queued":
                return False
            self._end(job, now, "stuck_or_timeout_failure", cause)
        elif kind == SCALE_DOWN:
            assert isinstance(payload, tuple)
            node, version = payload
            return self.cluster.scale_down(node, version, now)
        elif kind == NODE_READY:
            assert isinstance(payload, NodeState)
            self.cluster.node_ready(payload, now)
        elif kind == WARM:
            assert isinstance(payload, tuple)
            pool, nodes = payload
            self.cluster.warm(pool, nodes, now)
        elif kind == RESUME:
            pass  # a stock-out ended: the autoscaler looks again when the instant settles
        elif kind == UPGRADE:
            assert isinstance(payload, Upgrade)
            for runner in self.runners:
                if (payload.runner is None or runner.spec.name == payload.runner) and runner.upgrade():
                    self.schedule.push(now + self.restart, MANAGER_START, runner)
        elif kind == MANAGER_START:
            assert isinstance(payload, RunnerState)
            payload.start_manager()
        return True

    def _dispatch(self, now: int) -> bool:
        """Managers with a free slot take one job each in turn until none can take more."""
        took_any = False
        progress = True
        while progress:
            progress = False
            for runner in self.runners:
                if runner.starved:
                    continue
                concurrent = runner.spec.concurrent
                for manager in runner.managers:
                    if not (manager.accepting and manager.held < concurrent):  # `has_free_slot`, without the call
                        continue
                    job = self.queue.next_for(runner)
                    if job is None:
                        runner.starved = True  # until a job it matches is queued
                        break
                    self._take(manager, job, now)
                    progress = took_any = True
        return took_any

    def _take(self, manager: ManagerState, job: JobState, now: int) -> None:
        runner = manager.runner
        job.taken, job.manager = now, manager
        if job.spec.pool not in runner.spec.pools:
            job.state = "done"
            job.ended, job.reason, job.cause = now, "runner_system_failure", "refused"
            return
        job.state = "pending"
        manager.held += 1
        self.cluster.add_pod(job)
        self.schedule.push(now + runner.poll, POLL_DEADLINE, job)
        self.schedule.push(now + runner.timeout, JOB_DEADLINE, job)

    def _end(self, job: JobState, now: int, reason: str | None, cause: str | None) -> None:
        """A job ends (success when reason is None): free its GPU share, its node slot, its runner slot; a
        failure GitLab retries becomes a new job, queued now behind every job already queued."""
        previous = job.state
        job.state, job.ended, job.reason, job.cause = "done", now, reason, cause
        if reason is not None and reason in job.spec.retry_when and job.attempt < job.spec.retry_max:
            self._retry(job, now)
        if previous == "queued":
            return
        self.cluster.remove_pod(job, previous, now)
        manager = job.manager
        assert manager is not None
        if manager.runner.release(manager):
            self.schedule.push(now + self.restart, MANAGER_START, manager.runner)

    def _retry(self, job: JobState, now: int) -> None:
        job.retried = True
        retry = JobState(
            replace(job.spec, id=self.next_id, created_minute=Fraction(now, MS_PER_MINUTE)),
            job.work,
            job.utilization,
            now,
            first_id=job.first_id,
            attempt=job.attempt + 1,
            rates=job.rates,
        )
        self.jobs[retry.spec.id] = retry
        self.next_id += 1
        self.schedule.push(now, CREATED, retry)

    # results

    def result(self) -> SimResult:
        jobs = sorted(self.jobs.values(), key=lambda j: j.spec.id)
        ends = [j.ended for j in jobs if j.ended is not None]
        last_end = max(ends, default=0)
        first = min((j.created for j in jobs), default=0)
        end = max([last_end, *self.cluster.removals()])
        failed: dict[str, int] = {}
        retried: dict[str, int] = {}
        for job in jobs:
            if job.reason is not None:
                counts = retried if job.retried else failed
                counts[job.reason] = counts.get(job.reason, 0) + 1
        first_created = {j.spec.id: j.created for j in jobs if j.attempt == 0}
        waits = [j.started - first_created[j.first_id] for j in jobs if j.started is not None]
        return SimResult(
            jobs=tuple(_job_result(j) for j in jobs),
            pools=tuple(p.result(last_end) for p in self.cluster.pools.values()),
            makespan=ms_minutes(last_end - first) if jobs else Fraction(0),
            longest_wait=ms_minutes(max(waits)) if waits else None,
            failed_by_reason=failed,
            end=ms_minutes(end),
            retried_by_reason=retried,
        )


def _job_result(job: JobState) -> JobResult:
    assert job.ended is not None
    return JobResult(
        id=job.spec.id,
        name=job.spec.name,
        pool=job.spec.pool,
        created=ms_minutes(job.created),
        taken=None if job.taken is None else ms_minutes(job.taken),
        started=None if job.started is None else ms_minutes(job.started),
        finished=ms_minutes(job.ended),
        runner=None if job.manager is None else job.manager.runner.spec.name,
        manager=None if job.manager is None else job.manager.generation,
        node=None if job.node is None else job.node.name,
        outcome="success" if job.reason is None else "failed",
        reason=job.reason,
        cause=job.cause,
        first_id=job.first_id,
        attempt=job.attempt,
        retried=job.retried,
    )


@functools.lru_cache(maxsize=65536)
def ms_minutes(ms: int) -> Fraction:
    """Milliseconds as a Fraction of a minute (remembered: a week's times recur from candidate to candidate)."""
    return Fraction(ms, MS_PER_MINUTE)
