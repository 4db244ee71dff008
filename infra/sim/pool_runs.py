"""One GPU pool's week under one candidate of `recommend` (pure): simulated alone, as estimated and slower.

Pools do not interact in the dispatch (each runner serves one pool, a job's tags reach only its pool's
runners, nodes and billing are per pool), so a pool's jobs dispatched with only its own pool and runners run
exactly as they do in the whole platform's week: the search simulates each pool's candidates once and
combines pools afterwards (EUR adds up, the waits merge). `PoolRuns` caches runs by their scenario, so a
candidate that builds a scenario already run is not run again.

Each candidate runs under every one of `VARIANTS` (as estimated, jobs 10 % slower, nodes 5 min late): the target
must survive all three. A run also says whether a larger `max_size` could change anything: when neither the node
cap nor the shared runner's slots were ever reached (`capped` is False), a larger max_size dispatches the same week.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction

from infra.model.platform import Platform
from infra.sim.arrivals import DAYS
from infra.sim.engine import Dispatched, ms_minutes, simulate_states
from infra.sim.levers import Levers
from infra.sim.memo import ByIdentity, Memo
from infra.sim.platform_scenario import PlannedJob, scenario
from infra.sim.scenario import MS_PER_MINUTE, Scenario, SimJob
from infra.sim.state import JobState

MINUTES_PER_WEEK = DAYS * 24 * 60
SLOWER = Fraction(11, 10)
"""The target must hold with jobs this much slower than estimated too."""
LATE_BOOT = Fraction(5)
"""...and with every node booting this many minutes later than its figures draw (a node late is not a miss)."""


@dataclass(frozen=True)
class Variant:
    """One way the week may turn out that the target must survive: jobs `slower`, boots `late_boot` later."""

    name: str
    slower: Fraction = Fraction(1)
    late_boot: Fraction = Fraction(0)


VARIANTS = (
    Variant("as estimated"),
    Variant("jobs 10 % slower", slower=SLOWER),
    Variant("nodes 5 min late", late_boot=LATE_BOOT),
)
"""The weeks every candidate is judged on, in this order (`PoolRun.weeks`)."""

Wait = tuple[Fraction, Fraction, Fraction]
"""A merge-request job's wait: (total, for a slot, for a node)."""


@dataclass(frozen=True)
class Week:
    """One pool's week, one run: its merge-request waits, failures, billing and whether a cap was reached."""

    waits: tuple[Wait, ...]
    """Merge-request jobs' waits over their attempts, sorted by total (of those that ran)."""
    failed: int
    scaled_node_minutes: int
    capped: bool
    """The node cap or the shared runner's slots were reached at some point."""
    longest_job: Fraction
    """The longest run (as run) of the pool's jobs."""
    lost: int = 0
    """Merge-request jobs lost for good: each over any target (`infra.sim.verdict`)."""
    totals: tuple[Fraction, ...] = field(default=(), compare=False)
    """The waits' totals, sorted (for `over`)."""
    totals_ms: tuple[int, ...] | None = field(default=None, compare=False, repr=False)
    """The same in whole milliseconds (None: one is not whole): `over` compares ints, not Fractions (the search
    asks it of every run at every level, some 400,000 times for the dev stack)."""

    def __post_init__(self) -> None:
        totals = tuple(total for total, _, _ in self.waits)
        object.__setattr__(self, "totals", totals)
        if self.totals_ms is None and all(MS_PER_MINUTE % total.denominator == 0 for total in totals):
            object.__setattr__(
                self, "totals_ms", tuple(total.numerator * (MS_PER_MINUTE // total.denominator) for total in totals)
            )

    @property
    def requests(self) -> int:
        """The pool's merge-request jobs of the week."""
        return len(self.waits) + self.lost

    def over(self, target: Fraction) -> int:
        """Merge-request jobs over `target`: those that waited longer, and every lost one."""
        if self.totals_ms is None:
            return self.lost + len(self.totals) - bisect_right(self.totals, target)
        # a total of t ms is within the target when t <= target x MS_PER_MINUTE, that is t <= its floor (t whole)
        within = target.numerator * MS_PER_MINUTE // target.denominator
        return self.lost + len(self.totals_ms) - bisect_right(self.totals_ms, within)


@dataclass(frozen=True)
class PoolRun:
    """A pool's candidate: its EUR/week (as estimated) and its week under each of `VARIANTS`."""

    pool: str
    levers: Levers
    eur_per_week: Fraction
    weeks: tuple[Week, ...]

    @property
    def week(self) -> Week:
        """As estimated."""
        return self.weeks[0]

    @property
    def slower(self) -> Week:
        """Jobs 10 % slower."""
        return self.weeks[1]

    @property
    def failed(self) -> int:
        return sum(week.failed for week in self.weeks)

    @property
    def capped(self) -> bool:
        return any(week.capped for week in self.weeks)

    def overs(self, target: Fraction) -> tuple[int, ...]:
        """Merge-request jobs over `target`, per variant."""
        return tuple(week.over(target) for week in self.weeks)


class PoolRuns:
    """Runs pools' candidates, each scenario once in the process: the pool weeks are kept for every search (the
    `--keep-sizes` search of a stack dispatches many of the weeks its full search did, and `recommend --write`
    searches the stack `recommend` did)."""

    def __init__(self) -> None:
        self.simulated = 0
        """Scenarios this one dispatched (a cached one is not counted again)."""

    @staticmethod
    def _hash(built: Scenario) -> int:
        """`hash(built)`'s equal: a scenario's parts hashed, its jobs' tuple once (equal scenarios hash alike)."""
        jobs = built.jobs
        jobs_hash = _JOB_HASHES.get(jobs)
        if jobs_hash is None:
            jobs_hash = _JOB_HASHES.keep(jobs, hash(jobs))
        return hash((built.pools, built.runners, jobs_hash, built.upgrades, built.manager_restart_minutes))

    @staticmethod
    def _classes(jobs: Sequence[PlannedJob]) -> tuple[str, ...]:
        """The jobs' classes, once per jobs tuple: every candidate of a week asks with the same tuple."""
        if not isinstance(jobs, tuple):
            return tuple(job.job_class for job in jobs)
        known = _JOB_CLASSES.get(jobs)
        return known if known is not None else _JOB_CLASSES.keep(jobs, tuple(job.job_class for job in jobs))

    def run(
        self, platform: Platform, pool: str, levers: Levers, jobs: Sequence[PlannedJob], *, week: int = 0
    ) -> PoolRun:
        """`pool` of `platform` (the candidate's, derived) over its `jobs` of week number `week`, each variant."""
        derived = platform.pools[pool]
        weeks = tuple(self.week(platform, pool, jobs, variant, week=week) for variant in VARIANTS)
        always_on = Fraction(derived.min_size * MINUTES_PER_WEEK)
        eur = (Fraction(weeks[0].scaled_node_minutes) + always_on) * derived.eur_per_hour / 60
        return PoolRun(pool, levers, eur, weeks)

    def week(
        self, platform: Platform, pool: str, jobs: Sequence[PlannedJob], variant: Variant, *, week: int = 0
    ) -> Week:
        """One variant of the pool's week (dispatched once per scenario and jobs' classes: a week reads which of
        its jobs are merge requests)."""
        built = pool_scenario(platform, pool, jobs, variant, week=week)
        classes = self._classes(jobs)
        key = self._hash(built)
        bucket = _POOL_WEEKS.get(key) or []
        for scenario_run, classes_run, cached in bucket:
            if scenario_run == built and classes_run == classes:
                return cached
        self.simulated += 1
        found = week_of(built, jobs, simulate_states(built))
        _POOL_WEEKS.keep(key, [*bucket, (built, classes, found)])
        return found


_KEPT = 4096
"""Pool weeks kept (a search of the dev stack dispatches some 1,800; a week is a few kilobytes)."""
_POOL_WEEKS: Memo[int, list[tuple[Scenario, tuple[str, ...], Week]]] = Memo(_KEPT)
"""The pool weeks dispatched, by the scenario's hash (`PoolRuns._hash`): kept for every search in the process."""
_JOB_HASHES: ByIdentity[tuple[SimJob, ...], int] = ByIdentity(_KEPT)
"""Each jobs tuple's hash: `scenario` hands every candidate of a week the same tuple, whose hash walks every job's
Fractions."""
_JOB_CLASSES: ByIdentity[tuple[PlannedJob, ...], tuple[str, ...]] = ByIdentity(_KEPT)


def pool_scenario(
    platform: Platform, pool: str, jobs: Sequence[PlannedJob], variant: Variant = VARIANTS[0], *, week: int = 0
) -> Scenario:
    """The platform's scenario of `jobs` with only `pool` and its runners."""
    built = scenario(platform, jobs, slower=variant.slower, late_boot=variant.late_boot, week=week)
    return replace(
        built,
        pools=tuple(p for p in built.pools if p.name == pool),
        runners=tuple(r for r in built.runners if pool in r.pools),
    )


def week_of(built: Scenario, jobs: Sequence[PlannedJob], states: Dispatched) -> Week:
    """What the search keeps of a pool's run, read off the run's records in whole milliseconds (each figure the
    one `simulate`'s `SimResult` gives: the same sums and orders, in integers, made minutes at the end)."""
    records, pools = states
    sums: dict[int, tuple[int, int]] = {}
    last: dict[int, JobState] = {}
    for job in records:  # in id order: a job's later attempt comes after its earlier ones
        assert job.ended is not None
        slot = (job.taken if job.taken is not None else job.ended) - job.created
        node = 0 if job.taken is None else (job.started if job.started is not None else job.ended) - job.taken
        earlier = sums.get(job.first_id)
        sums[job.first_id] = (slot, node) if earlier is None else (earlier[0] + slot, earlier[1] + node)
        last[job.first_id] = job
    finals = [last[first] for first in sorted(last)]
    requests = [final for job, final in zip(jobs, finals, strict=True) if job.job_class == "merge_request"]
    waits = sorted(
        (slot + node, slot, node)
        for final in requests
        if final.reason is None
        for slot, node in (sums[final.first_id],)
    )
    (pool,) = built.pools
    shared = next(r for r in built.runners if r.name == pool.name)  # the held slots' runner is `<pool>-mr`
    simulated = pools[pool.name]
    scaled = 0
    for n in simulated.nodes:
        if not n.warm:
            assert n.removed is not None
            scaled += -(-(n.removed - n.created) // MS_PER_MINUTE)  # billed per started minute
    held_by_shared = _peak([j for j in records if j.manager is not None and j.manager.runner.spec.name == shared.name])
    runs = [j.ended - j.started for j in records if j.started is not None and j.reason is None and j.ended is not None]
    return Week(
        waits=tuple((ms_minutes(total), ms_minutes(slot), ms_minutes(node)) for total, slot, node in waits),
        totals_ms=tuple(total for total, _, _ in waits),
        failed=sum(1 for j in records if j.reason is not None and not j.retried),
        scaled_node_minutes=scaled,
        capped=simulated.peak_nodes >= pool.max_nodes or held_by_shared >= shared.concurrent,
        longest_job=ms_minutes(max(runs, default=0)),
        lost=len(requests) - len(waits),
    )


def _peak(held_jobs: Sequence[JobState]) -> int:
    """The most jobs the runner held at once (taken, not ended)."""
    takes = sorted(job.taken for job in held_jobs if job.taken is not None)
    ends = sorted(job.ended for job in held_jobs if job.taken is not None and job.ended is not None)
    held = most = ended = 0
    for taken in takes:  # at one instant the ends come before the takes
        while ended < len(ends) and ends[ended] <= taken:
            held, ended = held - 1, ended + 1
        held += 1
        most = max(most, held)
    return most
