"""How long each scale-up's node takes to boot (pure): a pool's cold start as measured figures, drawn per node.

Why: a fixed cold start makes every merge-request wait that ends with a boot exactly the assumed figure, and a
p95 equal to it says nothing about a node that boots a minute late. A pool states its boots as the median
(`cold_start_minutes`), optionally the p90 and the slowest seen (`cold_start_p90_minutes`, `_max_minutes`):
- median alone: every boot takes it (the model before the figures);
- with the p90: log-normal through the median and the p90, cut at the max if given, else at its own p99, and
  never below its p1 (a boot faster than that is a measurement error, not the pool);
- a max without a p90: log-normal through the median with its p99 at the max (a worst of some hundred boots).
Each draw is to 0.1 min, from the pool's own seeded stream (`seed`): the k-th node created in a run takes the
k-th draw, so two specs simulated on the same week boot their k-th node alike (common random numbers).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from random import Random
from statistics import NormalDist

_NORMAL = NormalDist()
Z90 = _NORMAL.inv_cdf(0.9)
Z99 = _NORMAL.inv_cdf(0.99)


@dataclass(frozen=True)
class Boots:
    """A pool's boot figures in minutes, and `late`: every boot that much later than drawn (a what-if)."""

    median: Fraction
    p90: Fraction | None = None
    most: Fraction | None = None
    late: Fraction = Fraction(0)
    ms: dict[int | None, int] = field(default_factory=dict, compare=False, repr=False)
    """A boot in milliseconds by its draw in tenths of a minute (None: the median's), as `BootDraws.next_ms` found
    it: the runs of one pool's figures share them (the figures are frozen, the conversion exact)."""

    @property
    def sigma(self) -> float:
        """The log-normal's spread (0: every boot takes the median)."""
        if self.median <= 0:
            return 0.0
        if self.p90 is not None:
            return math.log(self.p90 / self.median) / Z90
        if self.most is not None:
            return math.log(self.most / self.median) / Z99
        return 0.0

    @property
    def fastest(self) -> Fraction:
        """The quickest boot a draw gives (the p1 of the spread, or the median), lateness included."""
        if not self.sigma:
            return self.median + self.late
        return _tenth(float(self.median) * math.exp(-self.sigma * Z99)) + self.late

    @property
    def slowest(self) -> Fraction:
        """The slowest boot a draw gives (the max, else the spread's p99, else the median), lateness included."""
        if not self.sigma:
            return self.median + self.late
        top = self.most if self.most is not None else _tenth(float(self.median) * math.exp(self.sigma * Z99))
        return top + self.late

    def draws(self, seed: int) -> BootDraws:
        return BootDraws(self, Random(seed) if self.sigma else None)


class BootDraws:
    """One run's stream of boot times: `next_minutes()` for each node created, in creation order."""

    def __init__(self, boots: Boots, generator: Random | None) -> None:
        self.boots, self.generator = boots, generator
        self.low, self.high = boots.fastest - boots.late, boots.slowest - boots.late
        self.sigma, self.median = boots.sigma, float(boots.median)

    def next_minutes(self) -> Fraction:
        return self._minutes(self._next_tenths())

    def next_ms(self, to_ms: Callable[[Fraction], int]) -> int:
        """`to_ms(self.next_minutes())`, the same draw, its conversion remembered by the draw's tenths."""
        tenths = self._next_tenths()
        known = self.boots.ms.get(tenths)
        if known is None:
            known = self.boots.ms[tenths] = to_ms(self._minutes(tenths))
        return known

    def _next_tenths(self) -> int | None:
        """The next draw in tenths of a minute, before its cut (None: no spread, every boot the median)."""
        if self.generator is None:
            return None
        z = _NORMAL.inv_cdf(min(max(self.generator.random(), 1e-12), 1 - 1e-12))
        return round(self.median * math.exp(self.sigma * z) * 10)  # `_tenth`'s

    def _minutes(self, tenths: int | None) -> Fraction:
        boots = self.boots
        if tenths is None:
            return boots.median + boots.late
        return min(max(Fraction(tenths, 10), self.low), self.high) + boots.late


def _tenth(minutes: float) -> Fraction:
    return Fraction(round(minutes * 10), 10)
