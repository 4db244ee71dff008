"""`recommend`'s second step (pure): a local search over the finer levers, from the first step's winner and from a
warm schedule fitted to the bound's solution.

Why: the first step (`infra.sim.search`) tries whole windows of whole nodes, the hours the merge-request kinds
arrive in; what a cheaper platform changes is finer. Each move is a spec change `pulumi up` deploys:
- a warm window's count one lower over a band of the merge-request arrival profile (the workload's kinds: each run
  of half-hours with one arrival rate), or over its first or last half-hours (a ramp in before the peak, a ramp
  out): consecutive windows of different counts (`infra.model.warm`), on the half-hour grid, following the profile
  rather than the weeks' draws;
- `max_size` one lower, the sharing replicas one step, the held slots one step;
- the cluster's scale-down delay (`cluster.autoscaler.scale_down_unneeded_time`, one for every pool) to the next
  value of `SCALE_DOWN_SECONDS` either way.
Each move is screened on the first week in every variant (the moved pool simulated alone, the others' runs as
they are; the combination must meet the target there, or with `closest`, be no slower than the start), then the
whole combination confirmed over the weeks (`infra.sim.confirm`). Moves are tried largest saving first, and the
first cheaper one that holds is taken; the search goes on from it until no move is cheaper or the budget
(`max_screens` pool runs, `max_confirms` confirmations) is spent. It never enumerates combinations: each step
tries the moves of one state.

The seeds from the bound (`infra.sim.target_bound`): per pool, each half-hour of the merge-request kinds' hours
gets the nodes the clairvoyant platform had ready then, at the `confidence` quantile over the weeks and days (and
at their most); a seed that holds and is cheaper than the first step's winner starts the descent.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Protocol

from infra.config.schedule import MINUTES_PER_DAY, weekdays
from infra.model.platform import Platform
from infra.sim.combine import Combination, Target
from infra.sim.confirm import WeeksCheck
from infra.sim.levers import Levers, PoolSpace, Window, duration_text
from infra.sim.pool_runs import PoolRun
from infra.sim.target_bound import WeekFloor

SLOT = 30
"""Minutes of the warm schedule's grid."""
SLOTS = MINUTES_PER_DAY // SLOT
SCALE_DOWN_SECONDS = (60, 120, 180, 300, 600, 900, 1200, 1800)
"""The scale-down delays the search moves between (one step at a time)."""
MAX_SCREENS = 160
MAX_CONFIRMS = 16

Grid = dict[str, tuple[int, ...]]
"""A pool's warm schedule: per day group (`Mon-Fri`), the nodes of each half-hour of the day."""


class Searcher(Protocol):
    """What the refinement needs of the first step's search."""

    pools: list[str]
    target: Target
    fixed: Fraction
    spaces: dict[str, PoolSpace]
    weeks_check: WeeksCheck

    def run_levers(self, pool: str, levers: Levers) -> PoolRun | None:
        """The pool's run with `levers` (simulated once; None: the spec or the pack refuses them)."""

    def simulations(self) -> int:
        """Pool runs simulated so far (a cached one is not simulated again)."""

    def valid(self, combination: Combination) -> bool:
        """The whole platform with the combination's changes derives and the pack accepts it."""

    def replica_counts(self, pool: str) -> Sequence[int | None]:
        """The replica counts the spec accepts on the pool's node."""

    def eur_per_hour(self, pool: str) -> Fraction:
        """A node of the pool, an hour."""

    def arrival_rates(self, pool: str, weekday: int) -> tuple[Fraction, ...]:
        """The pool's merge-request jobs a minute in each half-hour of the weekday (0: Monday), by the workload."""


@dataclass
class Refined:
    """What the refinement did."""

    start: Combination
    best: Combination
    steps: list[str] = field(default_factory=list)
    """Each move taken, in order (`ci-training warm 10:00-11:00 3 -> 2`)."""
    screened: int = 0
    confirmed: int = 0
    seeds: list[str] = field(default_factory=list)
    """What became of each seed from the bound."""


def grid(warm: Sequence[Window]) -> Grid:
    """Windows as a per-day-group grid (a window's minutes rounded out to the half-hour)."""
    found: dict[str, list[int]] = {}
    for days, start, end, nodes in warm:
        counts = found.setdefault(days, [0] * SLOTS)
        first, last = _clock(start) // SLOT, -(-_clock(end) // SLOT)
        for slot in range(first, last):
            counts[slot] = max(counts[slot], nodes)
    return {days: tuple(counts) for days, counts in found.items()}


def windows(schedule: Grid) -> tuple[Window, ...]:
    """A grid as the spec's windows: per day group (in week order), each run of one count."""
    found: list[Window] = []
    for days in sorted(schedule, key=lambda d: min(weekdays(d))):
        counts = schedule[days]
        slot = 0
        while slot < SLOTS:
            if not counts[slot]:
                slot += 1
                continue
            end = slot
            while end < SLOTS and counts[end] == counts[slot]:
                end += 1
            found.append((days, _text(slot * SLOT), _text(end * SLOT), counts[slot]))
            slot = end
    return tuple(found)


def refine(
    searcher: Searcher,
    start: Combination,
    *,
    seeds: Sequence[Combination] = (),
    closest: bool = False,
    max_screens: int = MAX_SCREENS,
    max_confirms: int = MAX_CONFIRMS,
    progress: Callable[[int], None] | None = None,
) -> Refined:
    """Descend from `start` (or a cheaper seed that holds) by the moves of the module docstring."""
    state = _State(searcher, start.score if closest else None, max_screens, max_confirms, progress)
    done = Refined(start, start)
    current = start
    for seed in seeds:
        verdict = state.holds(seed)
        cheaper = seed.eur_per_week < current.eur_per_week
        done.seeds.append(f"{_describe(seed, start)}: {verdict or 'holds'}{', cheaper' if cheaper else ''}")
        if verdict is None and cheaper:
            current = seed
    failed: set[str] = set()
    while not state.spent:
        for _, label, build in sorted(_moves(searcher, current), key=lambda move: -move[0]):
            if state.spent:
                break
            if label in failed:
                continue
            simulated = searcher.simulations()
            candidate = build()
            if searcher.simulations() > simulated:  # a pool's run not simulated before: the budget's unit
                state.tried()
            if candidate is None or candidate.eur_per_week >= current.eur_per_week:
                continue
            if state.holds(candidate) is None:
                done.steps.append(f"{label} (-{float(current.eur_per_week - candidate.eur_per_week):.2f} EUR/week)")
                current = candidate
                break
            failed.add(label)  # the moves taken remove capacity: one that did not hold is not tried again
        else:
            break
    done.best, done.screened, done.confirmed = current, state.screens, state.confirms
    return done


class _State:
    def __init__(
        self,
        searcher: Searcher,
        score: Fraction | None,
        max_screens: int,
        max_confirms: int,
        progress: Callable[[int], None] | None,
    ) -> None:
        self.searcher, self.score = searcher, score
        self.max_screens, self.max_confirms, self.progress = max_screens, max_confirms, progress
        self.screens = self.confirms = 0
        self.verdicts: dict[tuple[object, ...], str | None] = {}

    @property
    def spent(self) -> bool:
        return self.screens >= self.max_screens or self.confirms >= self.max_confirms

    def tried(self) -> None:
        self.screens += 1
        if self.progress is not None:
            self.progress(self.screens)

    def holds(self, combination: Combination) -> str | None:
        """None when the combination holds (screen, spec and pack, weeks), else why not."""
        key = combination.key
        if key not in self.verdicts:
            self.verdicts[key] = self._verdict(combination)
        return self.verdicts[key]

    def _verdict(self, combination: Combination) -> str | None:
        searcher = self.searcher
        if combination.failed:
            return "fails jobs"
        if self.score is not None:
            return None if combination.score <= self.score and searcher.valid(combination) else "slower"
        allowed = searcher.target.allowed_over
        overs = [sum(run.overs(searcher.target.minutes)[i] for run in combination.runs) for i in range(3)]
        if max(overs) > allowed:
            return "misses the target on the first week"
        if not searcher.valid(combination):
            return "refused by the spec or the pack"
        self.confirms += 1
        confirmed = searcher.weeks_check.confirm(combination)
        return None if confirmed.ok else f"meets the target in {min(confirmed.met)} of {confirmed.weeks} weeks"


Move = tuple[Fraction, str, Callable[[], Combination | None]]
"""A move's estimated saving (EUR/week: the warm node-hours it removes), what it changes, and how to simulate
the combination it makes (None: the spec or the pack refuses it)."""


def _moves(searcher: Searcher, current: Combination) -> Iterable[Move]:
    """Every move of the module docstring from `current` (simulated only when tried)."""
    for index, run in enumerate(current.runs):
        price = searcher.eur_per_hour(run.pool)
        for label, levers, hours in _pool_moves(searcher, run.pool, run.levers):
            yield price * hours, label, _swap(searcher, current, index, levers)
    seconds = current.runs[0].levers.scale_down_seconds
    ladder = sorted({*SCALE_DOWN_SECONDS, seconds})
    at = ladder.index(seconds)
    for other in ladder[max(0, at - 1) : at] + ladder[at + 1 : at + 2]:
        yield Fraction(0), f"scale-down after {duration_text(other)}", _everywhere(searcher, current, other)


def _swap(searcher: Searcher, current: Combination, index: int, levers: Levers) -> Callable[[], Combination | None]:
    def build() -> Combination | None:
        run = searcher.run_levers(current.runs[index].pool, levers)
        if run is None:
            return None
        runs = list(current.runs)
        runs[index] = run
        return Combination(tuple(runs), searcher.fixed, current.rank)

    return build


def _everywhere(searcher: Searcher, current: Combination, seconds: int) -> Callable[[], Combination | None]:
    def build() -> Combination | None:
        runs = []
        for run in current.runs:
            moved = searcher.run_levers(run.pool, replace(run.levers, scale_down_seconds=seconds))
            if moved is None:
                return None
            runs.append(moved)
        return Combination(tuple(runs), searcher.fixed, current.rank)

    return build


def _pool_moves(searcher: Searcher, pool: str, levers: Levers) -> Iterable[tuple[str, Levers, Fraction]]:
    """The pool's moves: (what, the levers, the warm node-hours a week it removes)."""
    schedule = grid(levers.warm)
    for days, counts in schedule.items():
        day_count = len(weekdays(days))
        for first, last in _blocks(searcher.arrival_rates(pool, min(weekdays(days)))):
            lowered = (*counts[:first], *(max(0, n - 1) for n in counts[first:last]), *counts[last:])
            removed = sum(counts) - sum(lowered)
            if not removed:
                continue
            label = f"{pool} warm {days} {_text(first * SLOT)}-{_text(last * SLOT)} one node less"
            hours = Fraction(removed * SLOT * day_count, 60)
            yield label, replace(levers, warm=windows({**schedule, days: lowered})), hours
    most = max((n for counts in schedule.values() for n in counts), default=0)
    if levers.max_size - 1 >= max(1, most):
        yield f"{pool} max_size {levers.max_size - 1}", replace(levers, max_size=levers.max_size - 1), Fraction(0)
    accepted = list(searcher.replica_counts(pool))
    if levers.replicas in accepted:
        at = accepted.index(levers.replicas)
        for other in accepted[max(0, at - 1) : at] + accepted[at + 1 : at + 2]:
            yield f"{pool} replicas {other}", replace(levers, replicas=other), Fraction(0)
    for held in (levers.merge_request_slots - 1, levers.merge_request_slots + 1):
        if held >= 0:
            yield f"{pool} held slots {held}", replace(levers, merge_request_slots=held), Fraction(0)


EDGE_SLOTS = (1, 2, 3)
"""A band's first or last half-hours a move lowers (a ramp in, a ramp out)."""


def _blocks(rates: Sequence[Fraction]) -> list[tuple[int, int]]:
    """The half-hour ranges a move lowers, from the day's arrival profile (merge-request jobs a minute per
    half-hour): each band of one rate whole, and its first and last `EDGE_SLOTS` (fewer nodes where the profile
    says fewer jobs come, or where a merge request has less ahead of it to overlap: a ramp in and out). Never a
    range inside a band: the weeks' draws, not the profile, would pick it."""
    found: list[tuple[int, int]] = []
    for first, last in _bands(rates):
        found.append((first, last))
        for edge in EDGE_SLOTS:
            if edge < last - first:
                found += [(first, first + edge), (last - edge, last)]
    return list(dict.fromkeys(found))


def seed_levers(
    levers: Levers,
    floors: Sequence[WeekFloor],
    pool: str,
    groups: Sequence[tuple[str, tuple[Fraction, ...]]],
    quantile: Fraction,
) -> Levers:
    """`levers` with warm windows fitted to the bound's solution: per day group (its days and its arrival profile),
    each band of the profile (`_blocks`' whole bands) gets the nodes the clairvoyant platform had ready in it, at
    `quantile` over the band's half-hours of every day and week (at most max_size)."""
    schedule: Grid = {}
    for days, rates in groups:
        counts = [0] * SLOTS
        # each floor's segments as (ready, end) rounded out to whole minutes, which the half-hours' bounds are:
        # for a whole minute m, ready < m exactly when floor(ready) < m, end > m when ceil(end) > m
        spans = []
        for floor in floors:
            found = floor.pool(pool)
            spans.append([(math.floor(s.start + found.pool.boot), math.ceil(s.end)) for s in found.segments])
        for first, last in _bands(rates):
            ready = []
            for segments in spans:
                for day in sorted(weekdays(days)):
                    for slot in range(first, last):
                        low = day * MINUTES_PER_DAY + slot * SLOT
                        ready.append(sum(1 for up, end in segments if up < low + SLOT and end > low))
            ready.sort()
            nodes = min(levers.max_size, ready[max(0, math.ceil(quantile * len(ready)) - 1)]) if ready else 0
            counts[first:last] = [nodes] * (last - first)
        if any(counts):
            schedule[days] = tuple(counts)
    return replace(levers, warm=windows(schedule))


def _bands(rates: Sequence[Fraction]) -> list[tuple[int, int]]:
    """The runs of half-hours of one positive arrival rate."""
    found, slot = [], 0
    while slot < SLOTS:
        end = slot
        while end < SLOTS and rates[end] == rates[slot]:
            end += 1
        if rates[slot]:
            found.append((slot, end))
        slot = end
    return found


def arrival_rates(platform: Platform, pool: str, weekday: int) -> tuple[Fraction, ...]:
    """The pool's merge-request jobs a minute in each half-hour of `weekday` (0: Monday): each merge-request kind
    of its profiles spreads its `jobs_per_day` evenly over its hours (as `infra.sim.arrivals` draws them); the
    profile-level form over the whole day."""
    rates = [Fraction(0)] * SLOTS
    workload = platform.spec.workload
    for name in platform.pools[pool].profiles:
        load = workload.profiles.get(name) if workload is not None else None
        if load is None:
            continue
        if not load.kinds:
            per_minute = Fraction(load.jobs_per_day or 0, MINUTES_PER_DAY)
            rates = [rate + per_minute for rate in rates]
            continue
        for kind in load.kinds.values():
            if kind.job_class != "merge_request" or weekday not in weekdays(kind.days):
                continue
            start, end = _clock(kind.start), _clock(kind.end)
            per_minute = Fraction(kind.jobs_per_day, end - start)
            for slot in range(start // SLOT, -(-end // SLOT)):
                overlap = min(end, (slot + 1) * SLOT) - max(start, slot * SLOT)
                rates[slot] += per_minute * overlap / SLOT
    return tuple(rates)


def _describe(combination: Combination, start: Combination) -> str:
    changed = [
        f"{run.pool} {run.levers.describe()}"
        for run, other in zip(combination.runs, start.runs, strict=True)
        if run.levers != other.levers
    ]
    return "; ".join(changed) or "the first step's winner"


def _clock(text: str) -> int:
    hours, minutes = text.split(":")
    return int(hours) * 60 + int(minutes)


def _text(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"
