"""Pools' candidates put together (pure): a platform's candidate is one run per GPU pool, its EUR/week their sum,
its merge-request waits all of theirs.

The target is a p95 over every merge-request job of the week (nearest rank): it holds when at most
`Target.allowed_over` jobs wait longer than it (a lost one among them: `infra.sim.verdict`), so a combination
meets it when the pools' jobs over the target add up to at most that, in every one of the variants
(`infra.sim.pool_runs.VARIANTS`: as estimated, jobs 10 % slower, nodes 5 min late). `cheapest` yields the
combinations whose waits stay within a level, cheapest first, by best-first search over the pools (a partial
combination's cost plus the cheapest run of each pool still to choose is a lower bound on every completion).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction

from infra.sim import verdict
from infra.sim.pool_runs import VARIANTS, PoolRun, Week


@dataclass(frozen=True)
class Target:
    """`platform.slo.merge_request_wait_minutes` over the week's merge-request jobs."""

    minutes: Fraction
    jobs: int
    """Merge-request jobs of the week."""

    @property
    def rank(self) -> int:
        """The p95's rank among the waits, smallest first (nearest rank, 1-based)."""
        return verdict.rank(self.jobs)

    @property
    def allowed_over(self) -> int:
        """How many merge-request jobs may wait longer than the p95 (a lost one among them)."""
        return verdict.allowed_over(self.jobs)


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

    def variant_p95(self, index: int) -> Fraction | None:
        """The merged p95 of one of `VARIANTS` (None: its rank is a lost job)."""
        return merged_percentile([run.weeks[index] for run in self.runs], self.rank)

    @property
    def p95s(self) -> tuple[Fraction | None, ...]:
        return tuple(self.variant_p95(index) for index in range(len(VARIANTS)))

    @property
    def p95(self) -> Fraction | None:
        return self.variant_p95(0)

    @property
    def slower_p95(self) -> Fraction | None:
        return self.variant_p95(1)

    @property
    def score(self) -> Fraction:
        """The p95 the target is judged on: the worst of the variants (a lost job at the rank: `LOST`)."""
        return max(LOST if p95 is None else p95 for p95 in self.p95s)

    @property
    def key(self) -> tuple[object, ...]:
        return tuple(run.levers for run in self.runs)

    def worse_week(self) -> list[tuple[str, Week]]:
        """Each pool's week of the variant whose merged p95 is the largest."""
        scores = [LOST if p95 is None else p95 for p95 in self.p95s]
        worst = scores.index(max(scores))
        return [(run.pool, run.weeks[worst]) for run in self.runs]


LOST = Fraction(10**9)
"""A p95 that is a lost job, for ordering: later than any wait (`infra.sim.verdict`)."""


def merged_percentile(weeks: Sequence[Week], rank: int) -> Fraction | None:
    """The `rank`-th smallest merge-request wait over the pools' weeks, a lost job ranked after every wait (None
    when the rank is one)."""
    merged = heapq.merge(*(week.waits for week in weeks))
    found = next(itertools.islice(merged, rank - 1, None), None)
    if found is None:
        return None if any(week.lost for week in weeks) else Fraction(0)
    return found[0]


def within(run: PoolRun, level: Fraction) -> tuple[int, ...]:
    """The run's merge-request jobs over `level`, per variant."""
    return run.overs(level)


Choice = tuple[Fraction, tuple[int, ...], PoolRun]
"""A pool's usable run: its EUR/week, its jobs over the level per variant, the run."""


def cheapest(
    pools: Sequence[Sequence[PoolRun]],
    level: Fraction,
    allowed_over: int,
    fixed_eur: Fraction,
    rank: int,
) -> Iterator[Combination]:
    """Combinations of one run per pool that fail no job and keep every merge-request wait but `allowed_over`
    within `level` (in every variant), cheapest first (ties: the fewer jobs over)."""
    choices: list[list[Choice]] = []
    for runs in pools:
        usable = []
        for run in runs:
            if run.failed:
                continue
            overs = within(run, level)
            if max(overs) <= allowed_over:
                usable.append((run.eur_per_week, overs, run))
        if not usable:
            return
        usable.sort(key=lambda item: (item[0], sum(item[1]), item[2].levers))
        choices.append(_frontier(usable))
    rest = [Fraction(0)] * (len(choices) + 1)
    for index in range(len(choices) - 1, -1, -1):
        rest[index] = rest[index + 1] + choices[index][0][0]
    counter = itertools.count()
    nothing = (0,) * len(VARIANTS)
    heap: list[tuple[Fraction, int, int, tuple[int, ...], tuple[int, ...]]] = [(rest[0], 0, next(counter), nothing, ())]
    while heap:
        least_cost, _, _, totals, picked = heapq.heappop(heap)
        depth = len(picked)
        if depth == len(choices):
            runs = tuple(choices[i][j][2] for i, j in enumerate(picked))
            yield Combination(runs, fixed_eur, rank)
            continue
        spent = least_cost - rest[depth]
        for index, (eur, overs, _) in enumerate(choices[depth]):
            added = tuple(a + b for a, b in zip(totals, overs, strict=True))
            if max(added) > allowed_over:
                continue
            cost = spent + eur + rest[depth + 1]
            heapq.heappush(heap, (cost, sum(added), next(counter), added, (*picked, index)))


def _frontier(usable: list[Choice]) -> list[Choice]:
    """The runs no cheaper-or-equal run beats on every count (sorted by cost): the others never help."""
    kept: list[Choice] = []
    for item in usable:
        if not any(all(a <= b for a, b in zip(k[1], item[1], strict=True)) for k in kept):
            kept.append(item)
    return kept


def first_valid(combinations: Iterator[Combination], valid: Callable[[Combination], bool]) -> Combination | None:
    """The first combination `valid` accepts (the spec and the policy pack judge the whole platform)."""
    return next((combination for combination in combinations if valid(combination)), None)
