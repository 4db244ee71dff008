"""The merge-request target's one rule (pure), for `plan`, the simulated weeks and `recommend` alike.

`platform.slo.merge_request_wait_minutes` is a p95 by nearest rank over every merge-request job. A job lost for
good never started: it waited longer than any target, so it is ranked after every wait, not dropped (dropping it
would lower the p95 by losing jobs). The target is met when at most `allowed_over(jobs)` jobs are over it, the
lost ones among them; the p95 is None when its rank falls on a lost job (or no job ran).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from infra.sim.scenario import MS_PER_MINUTE

PERCENTILE = 95


def sorted_exact(values: Iterable[Fraction]) -> list[Fraction]:
    """`sorted(values)`, the very same list (a stable sort by a key in the same order), a few times faster:
    a time of whole milliseconds is keyed by its int count of them, not compared as a Fraction (a Fraction's
    comparison is Python code: a week's waits sorted cost more than its simulation)."""
    items = list(values)
    try:
        return sorted(items, key=_ms_key)
    except _NotExactError:
        return sorted(items)


class _NotExactError(Exception):
    """A value neither an int nor a Fraction: sorted as it is."""


def _ms_key(value: Fraction) -> Fraction | int:
    """The value in milliseconds, exactly: an int where it is whole (ints compare with the Fractions exactly)."""
    if type(value) is Fraction:
        denominator = value.denominator
        return (
            value.numerator * (MS_PER_MINUTE // denominator)
            if not MS_PER_MINUTE % denominator
            else value * MS_PER_MINUTE
        )
    if type(value) is int:
        return value * MS_PER_MINUTE
    raise _NotExactError


def rank(jobs: int, q: int = PERCENTILE) -> int:
    """The percentile's rank among `jobs` values, smallest first (nearest rank, 1-based)."""
    return max(1, math.ceil(q * jobs / 100))


def allowed_over(jobs: int) -> int:
    """How many of `jobs` merge-request jobs may wait longer than the target."""
    return jobs - rank(jobs) if jobs else 0


@dataclass(frozen=True)
class Waits:
    """A class's jobs over a run (or several): the waits of those that ran, sorted, and how many were lost."""

    waits: tuple[Fraction, ...]
    lost: int = 0

    @staticmethod
    def of(waits: Iterable[Fraction], lost: int = 0) -> Waits:
        return Waits(tuple(sorted_exact(waits)), lost)

    @staticmethod
    def pooled(parts: Sequence[Waits]) -> Waits:
        """Several runs' jobs as one (the weeks pooled)."""
        return Waits.of((wait for part in parts for wait in part.waits), sum(part.lost for part in parts))

    @property
    def jobs(self) -> int:
        return len(self.waits) + self.lost

    def percentile(self, q: int = PERCENTILE) -> Fraction | None:
        """The nearest-rank percentile, a lost job ranked last: None when no job ran or the rank is a lost job."""
        if not self.waits:
            return None
        at = rank(self.jobs, q)
        return self.waits[at - 1] if at <= len(self.waits) else None

    @property
    def p95_lost(self) -> bool:
        """Whether the p95's rank falls on a lost job."""
        return bool(self.lost) and rank(self.jobs) > len(self.waits)

    def over(self, target: Fraction) -> int:
        """Jobs over the target: those that waited longer, and every lost one."""
        return self.lost + len(self.waits) - bisect_right(self.waits, target)

    def met(self, target: Fraction) -> bool | None:
        """Within the target by the rule above (None: no job to judge)."""
        if not self.jobs:
            return None
        return self.over(target) <= allowed_over(self.jobs)


def exact_target(minutes: float) -> Fraction:
    """The spec's target as the exact number it prints (15.0 -> 15, 0.04 -> 1/25)."""
    return Fraction(minutes).limit_denominator(1000)
