"""Pools' candidates put together (pure): a platform's candidate is one run per GPU pool, its EUR/week their sum,
its merge-request waits all of theirs.

The target is a p95 over every merge-request job of the week (nearest rank): it holds when at most
`Target.allowed_over` jobs wait longer than it, so a combination meets it when the pools' jobs over the target
add up to at most that, as estimated and with jobs 10 % slower. `cheapest` yields the combinations whose
waits stay within a bound, cheapest first, by best-first search over the pools (a partial combination's cost
plus the cheapest run of each pool still to choose is a lower bound on every completion).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction

from infra.sim.pool_runs import PoolRun, Week

PERCENTILE = 95


@dataclass(frozen=True)
class Target:
    """`platform.slo.merge_request_wait_minutes` over the week's merge-request jobs."""

    minutes: Fraction
    jobs: int
    """Merge-request jobs of the week."""

    @property
    def rank(self) -> int:
        """The p95's rank among the waits, smallest first (nearest rank, 1-based)."""
        return max(1, math.ceil(PERCENTILE * self.jobs / 100))

    @property
    def allowed_over(self) -> int:
        """How many merge-request jobs may wait longer than the p95."""
        return self.jobs - self.rank


@dataclass(frozen=True)
class Combination:
    """One run per GPU pool (in the platform's pool order) and the pools nobody varies."""

    runs: tuple[PoolRun, ...]
    fixed_eur: Fraction
    """What the other pools bill a week (always-on nodes)."""
    rank: int

    @property
    def eur_per_week(self) -> Fraction:
        return self.fixed_eur + sum((run.eur_per_week for run in self.runs), Fraction(0))

    @property
    def failed(self) -> int:
        return sum(run.failed for run in self.runs)

    @property
    def p95(self) -> Fraction:
        return merged_percentile([run.week for run in self.runs], self.rank)

    @property
    def slower_p95(self) -> Fraction:
        return merged_percentile([run.slower for run in self.runs], self.rank)

    @property
    def score(self) -> Fraction:
        """The p95 the target is judged on: the worse of the week as estimated and 10 % slower."""
        return max(self.p95, self.slower_p95)

    @property
    def key(self) -> tuple[object, ...]:
        return tuple(run.levers for run in self.runs)

    def worse_week(self) -> list[tuple[str, Week]]:
        """Each pool's week of the run (as estimated, or slower) whose merged p95 is the larger."""
        slower = self.slower_p95 > self.p95
        return [(run.pool, run.slower if slower else run.week) for run in self.runs]


def merged_percentile(weeks: Sequence[Week], rank: int) -> Fraction:
    """The `rank`-th smallest merge-request wait over the pools' weeks."""
    merged = heapq.merge(*(week.waits for week in weeks))
    found = next(itertools.islice(merged, rank - 1, None), None)
    return Fraction(0) if found is None else found[0]


def within(run: PoolRun, bound: Fraction) -> tuple[int, int]:
    """The run's merge-request jobs over `bound`: as estimated, and slower."""
    return run.week.over(bound), run.slower.over(bound)


def cheapest(
    pools: Sequence[Sequence[PoolRun]],
    bound: Fraction,
    allowed_over: int,
    fixed_eur: Fraction,
    rank: int,
) -> Iterator[Combination]:
    """Combinations of one run per pool that fail no job and keep every merge-request wait but `allowed_over`
    within `bound` (both weeks), cheapest first (ties: the fewer jobs over)."""
    choices: list[list[tuple[Fraction, int, int, PoolRun]]] = []
    for runs in pools:
        usable = []
        for run in runs:
            if run.failed:
                continue
            over, slower = within(run, bound)
            if over <= allowed_over and slower <= allowed_over:
                usable.append((run.eur_per_week, over, slower, run))
        if not usable:
            return
        usable.sort(key=lambda item: (item[0], item[1] + item[2], item[3].levers))
        choices.append(_frontier(usable))
    rest = [Fraction(0)] * (len(choices) + 1)
    for index in range(len(choices) - 1, -1, -1):
        rest[index] = rest[index + 1] + choices[index][0][0]
    counter = itertools.count()
    heap: list[tuple[Fraction, int, int, int, tuple[int, ...]]] = [(rest[0], 0, 0, next(counter), ())]
    while heap:
        bound_cost, over, _, _, picked = heapq.heappop(heap)
        depth = len(picked)
        if depth == len(choices):
            runs = tuple(choices[i][j][3] for i, j in enumerate(picked))
            yield Combination(runs, fixed_eur, rank)
            continue
        spent = bound_cost - rest[depth]
        for index, (eur, run_over, run_slower, _) in enumerate(choices[depth]):
            total_over = over + run_over
            total_slower = _slower_sum(choices, picked) + run_slower
            if total_over > allowed_over or total_slower > allowed_over:
                continue
            heapq.heappush(
                heap, (spent + eur + rest[depth + 1], total_over, total_slower, next(counter), (*picked, index))
            )


def _slower_sum(choices: Sequence[Sequence[tuple[Fraction, int, int, PoolRun]]], picked: tuple[int, ...]) -> int:
    return sum(choices[i][j][2] for i, j in enumerate(picked))


def _frontier(usable: list[tuple[Fraction, int, int, PoolRun]]) -> list[tuple[Fraction, int, int, PoolRun]]:
    """The runs no cheaper-or-equal run beats on both counts (sorted by cost): the others never help."""
    kept: list[tuple[Fraction, int, int, PoolRun]] = []
    for item in usable:
        if not any(k[1] <= item[1] and k[2] <= item[2] for k in kept):
            kept.append(item)
    return kept


def first_valid(combinations: Iterator[Combination], valid: Callable[[Combination], bool]) -> Combination | None:
    """The first combination `valid` accepts (the spec and the policy pack judge the whole platform)."""
    return next((combination for combination in combinations if valid(combination)), None)
