"""What a simulation run takes (pure): the pools, runners, jobs and upgrades of a `Scenario`, and its caps.

Plain frozen dataclasses, no Pulumi, no `infra.config`: `infra.sim.platform_scenario` builds them from the
derived platform. Times are minutes (int, float or Fraction; a float is read as the decimal it prints, 0.1
and not its binary neighbour), kept by the engine as whole milliseconds (`to_ms`), so ties are exact and a
run is deterministic.

The caps (`MAX_*`) bound every run: `check_scenario` refuses a scenario past them, or with a value the model
cannot mean, before anything runs (ValueError naming the field), so a run at the caps takes seconds.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from infra.quantity import exact_decimal
from infra.sim.boots import Boots
from infra.sim.memo import ByIdentity

MS_PER_MINUTE = 60_000
MAX_JOBS = 20_000
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
MAX_RETRIES = 2
"""GitLab's most for `retry: max`."""
MAX_WINDOWS = 200
"""Stock-out and warm windows of one pool (a week of two warm windows a day: 14)."""

Minutes = float | Fraction
"""A time or duration in minutes: a float is read as the decimal it prints, a Fraction exactly."""
Strategy = Literal["rolling", "recreate"]


@dataclass(frozen=True)
class SimPool:
    """A GPU node pool as the scheduler and the autoscaler see it."""

    name: str
    slots_per_node: int
    """Job pods a node schedules: GPUs x sharing replicas (1 per GPU without sharing), or fewer when CPU or
    memory fit fewer (a pool's jobs_per_node, infra/model/pools.py)."""
    gpus_per_node: int
    """Physical GPUs per node; a job lands on the GPU of its node with the fewest jobs."""
    max_nodes: int
    """The pool's max_size: the autoscaler never goes beyond it."""
    warm_nodes: int
    """The pool's min_size: nodes up and ready at minute 0, never removed."""
    cold_start_minutes: Minutes
    """From the autoscaler's trigger to a node ready to run a pod (instance boot, GPU operator, image pull): the
    median boot; every boot without the figures below."""
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
    stockouts: tuple[tuple[Minutes, Minutes], ...] = ()
    """[start, end) windows in which every scale-up of the pool fails (no stock, a zone incident): the
    autoscaler adds nodes again at `end`."""
    warm_windows: tuple[tuple[Minutes, Minutes, int], ...] = ()
    """[start, end, nodes): that many placeholder pods (warm capacity), one per node, each taking a slot of a
    ready node: the autoscaler adds a node for each one Pending, a node holding one is not scaled down, and a
    job that finds no free slot preempts one (which is recreated, Pending). Sorted, not overlapping."""
    cold_start_p90_minutes: Minutes | None = None
    """The p90 boot: each node's boot is then drawn (`infra.sim.boots`) from `cold_start_seed`'s stream."""
    cold_start_max_minutes: Minutes | None = None
    """The slowest boot seen: the draws' cut."""
    cold_start_seed: int = 0
    """The seed of the pool's boot draws (the k-th node created takes the k-th draw)."""
    cold_start_late_minutes: Minutes = 0
    """Every boot this much later than drawn (a what-if: nodes late)."""
    template_slots: int = 0
    """Job pods the autoscaler's template node of the pool holds when it sizes a scale-up: Scaleway builds it
    from the pool's capacity as its API reports it, the physical GPUs (`nvidia.com/gpu: 1`), not the sharing
    replicas the device plugin advertises once the node runs. 0: `slots_per_node`."""

    @property
    def full_gpu(self) -> int:
        """Jobs on the busiest GPU of a full node (the device plugin spreads them over the GPUs)."""
        return -(-self.slots_per_node // self.gpus_per_node)

    @property
    def replicas(self) -> int:
        return self.gpu_replicas or self.full_gpu

    @property
    def template(self) -> int:
        """Pods a node the autoscaler is about to add holds, as it counts them (`template_slots`)."""
        return self.template_slots or self.slots_per_node

    @property
    def boots(self) -> Boots:
        """The pool's boot figures (`infra.sim.boots`)."""
        return _boots(
            self.cold_start_minutes,
            self.cold_start_p90_minutes,
            self.cold_start_max_minutes,
            self.cold_start_late_minutes,
        )


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
    retry_max: int = 0
    """GitLab's `retry: max` (0-2): a failed attempt whose reason is in `retry_when` is retried as a new job."""
    retry_when: frozenset[str] = frozenset()
    """GitLab's `retry: when`: failure reasons that are retried (`runner_system_failure`, ...)."""

    @property
    def exact_utilization(self) -> Fraction | None:
        return None if self.gpu_utilization is None else _exact_minutes(self.gpu_utilization)


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


# --- input checks ---------------------------------------------------------------------------------------------


def to_ms(where: str, value: float | Fraction, *, positive: bool = False) -> int:
    """Minutes to whole milliseconds, refusing what the model cannot mean (one line naming the field)."""
    if type(value) is Fraction:  # the usual case, without the checks below (which a Fraction passes)
        numerator, denominator = value.numerator, value.denominator
    else:
        if isinstance(value, bool) or not isinstance(value, int | float | Fraction):
            raise ValueError(f"{where} must be a number of minutes, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{where} must be a finite number of minutes, got {value!r}")
        exact = _exact_minutes(value) if isinstance(value, float) else value
        numerator, denominator = (exact, 1) if isinstance(exact, int) else (exact.numerator, exact.denominator)
    if numerator < 0 or (positive and numerator == 0) or numerator > MAX_MINUTES * denominator:
        low = "> 0" if positive else ">= 0"
        raise ValueError(f"{where} must be {low} and <= {MAX_MINUTES} minutes, got {value!r}")
    # round(minutes x MS_PER_MINUTE) in integers, as Fraction.__round__ does it (half to even), without a Fraction
    ms, rest = divmod(numerator * MS_PER_MINUTE, denominator)
    if 2 * rest > denominator or (2 * rest == denominator and ms % 2):
        ms += 1
    return ms


@functools.lru_cache(maxsize=1024, typed=True)
def _boots(median: Minutes, p90: Minutes | None, most: Minutes | None, late: Minutes) -> Boots:
    return Boots(
        _exact_minutes(median),
        None if p90 is None else _exact_minutes(p90),
        None if most is None else _exact_minutes(most),
        _exact_minutes(late),
    )


@functools.lru_cache(maxsize=65536, typed=True)  # typed: 0.1 and Fraction(0.1) are equal keys, not values
def _exact_minutes(value: float | Fraction) -> Fraction:
    """exact_decimal, remembered: a week's jobs share their few durations (and utilizations), and the search
    re-reads them."""
    return exact_decimal(value)


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


def check_scenario(scenario: Scenario) -> None:
    """Refuse what the model cannot mean, before anything runs: ValueError, one line naming the field."""
    checked_job_times(scenario)


def checked_job_times(scenario: Scenario) -> list[tuple[int, int]]:
    """`check_scenario`, and each job's run time and creation in whole milliseconds, in `Scenario.jobs` order: the
    engine's, converted once (a run of the search's dispatches a week's hundred jobs, thousands of times)."""
    _check_caps(scenario)
    pool_names = _check_pools(scenario.pools)
    runner_names = _check_runners(scenario.runners, pool_names)
    times = _checked_jobs(scenario.jobs, pool_names)
    for upgrade in scenario.upgrades:
        to_ms("Upgrade.at_minute", upgrade.at_minute)
        if upgrade.runner is not None and upgrade.runner not in runner_names:
            raise ValueError(f"Upgrade.runner must name a runner in Scenario.runners, got {upgrade.runner!r}")
    to_ms("Scenario.manager_restart_minutes", scenario.manager_restart_minutes)
    return times


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
        _check_boots(where, pool)
        _count(f"{where}: template_slots", pool.template_slots, 0, pool.slots_per_node)
        to_ms(f"{where}: scale_down_unneeded_minutes", pool.scale_down_unneeded_minutes)
        to_ms(f"{where}: scale_down_delay_after_add_minutes", pool.scale_down_delay_after_add_minutes)
        if not isinstance(pool.eur_per_node_hour, int | Fraction) or pool.eur_per_node_hour < 0:
            raise ValueError(f"{where}: eur_per_node_hour must be a Fraction >= 0, got {pool.eur_per_node_hour!r}")
        _check_windows(f"{where}: stockouts", [(start, end) for start, end in pool.stockouts])
        _check_windows(f"{where}: warm_windows", [(start, end) for start, end, _ in pool.warm_windows], ordered=True)
        for _, _, nodes in pool.warm_windows:
            _count(f"{where}: warm_windows nodes", nodes, 1, pool.max_nodes)
    return pool_names


def _check_boots(where: str, pool: SimPool) -> None:
    """The boot figures in order (median <= p90 <= max), each a time; the seed an integer."""
    median = to_ms(f"{where}: cold_start_minutes", pool.cold_start_minutes)
    floor, floor_name = median, "cold_start_minutes"
    for name, value in (
        ("cold_start_p90_minutes", pool.cold_start_p90_minutes),
        ("cold_start_max_minutes", pool.cold_start_max_minutes),
    ):
        if value is None:
            continue
        if to_ms(f"{where}: {name}", value, positive=True) < floor:
            raise ValueError(f"{where}: {name} must be >= {floor_name}, got {value!r}")
        floor, floor_name = to_ms(name, value), name
    to_ms(f"{where}: cold_start_late_minutes", pool.cold_start_late_minutes)
    if isinstance(pool.cold_start_seed, bool) or not isinstance(pool.cold_start_seed, int):
        raise ValueError(f"{where}: cold_start_seed must be an integer, got {pool.cold_start_seed!r}")


def _check_windows(where: str, windows: list[tuple[Minutes, Minutes]], *, ordered: bool = False) -> None:
    if len(windows) > MAX_WINDOWS:
        raise ValueError(f"{where}: {len(windows)} windows, the simulation takes at most {MAX_WINDOWS}")
    previous_end = -1
    for start, end in windows:
        first, last = to_ms(f"{where} start", start), to_ms(f"{where} end", end)
        if last <= first:
            raise ValueError(f"{where}: a window must end after it starts, got {start}-{end}")
        if ordered and first < previous_end:
            raise ValueError(f"{where}: windows must be sorted and not overlap, got one starting at {start}")
        previous_end = last


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
        to_ms(f"{where}: poll_timeout_minutes", runner.poll_timeout_minutes, positive=True)
        to_ms(f"{where}: job_timeout_minutes", runner.job_timeout_minutes, positive=True)
        if runner.upgrade_strategy not in ("rolling", "recreate"):
            raise ValueError(f"{where}: upgrade_strategy must be rolling or recreate, got {runner.upgrade_strategy!r}")
    return runner_names


_CHECKED_JOBS: ByIdentity[tuple[SimJob, ...], list[tuple[int, int]]] = ByIdentity(512)
"""`_check_jobs`' answers by the jobs' tuple itself and the pools' names: the search dispatches one week's jobs
(the same tuple, `infra.sim.platform_scenario`) under hundreds of candidates."""


def _checked_jobs(jobs: tuple[SimJob, ...], pool_names: set[str]) -> list[tuple[int, int]]:
    """`_check_jobs`, remembered for a tuple of jobs (frozen, so its answer cannot change; a refused one is not
    remembered: it raises again)."""
    if type(jobs) is not tuple:
        return _check_jobs(jobs, pool_names)
    key = frozenset(pool_names)
    times = _CHECKED_JOBS.get(jobs, key)
    return times if times is not None else _CHECKED_JOBS.keep(jobs, _check_jobs(jobs, pool_names), key)


def _check_jobs(jobs: tuple[SimJob, ...], pool_names: set[str]) -> list[tuple[int, int]]:
    ids: set[int] = set()
    times = []
    for job in jobs:
        if isinstance(job.id, bool) or not isinstance(job.id, int) or job.id in ids:
            raise ValueError(f"SimJob.id must be a unique integer, got {job.id!r}")
        ids.add(job.id)
        try:  # each message names the job (`SimJob 3 (dqn): minutes must be ...`), made only when one is refused
            times.append(_check_job(job, pool_names))
        except ValueError as err:
            raise ValueError(f"SimJob {job.id!r} ({job.name}): {err}") from None
    return times


def _check_job(job: SimJob, pool_names: set[str]) -> tuple[int, int]:
    """The job's run time and creation, in milliseconds, once it is found sound."""
    if job.pool not in pool_names:
        raise ValueError(f"pool must be a known pool, got {job.pool!r}")
    work = to_ms("minutes", job.minutes, positive=True)
    created = to_ms("created_minute", job.created_minute)
    u = job.gpu_utilization
    if u is not None and (isinstance(u, bool) or not isinstance(u, int | float | Fraction) or not 0 < u <= 1):
        raise ValueError(f"gpu_utilization must be in (0, 1] or None, got {u!r}")
    _count("retry_max", job.retry_max, 0, MAX_RETRIES)
    return work, created
