"""A combination of `recommend` over the weeks (pure): screened on the first week, confirmed on every one.

Why: one week is one sample of the arrivals, run times and boots; the target is promised for a share of the
weeks (`platform.slo.confidence` of `platform.slo.weeks`, `recommend --confidence`). `WeeksCheck.confirm`
dispatches each pool's candidate on weeks 1.. (`infra.sim.arrivals.week_jobs(week=w)`, its boots drawn for that
week: the same weeks for every candidate), under every one of `VARIANTS`, and counts the weeks in which every
pool's merge-request jobs together meet the target by the one rule (`infra.sim.verdict`) with no job lost. It
stops at the first week that leaves a variant short of the share, so a candidate that cannot reach it costs a few
weeks, not all of them. Pools do not interact, so a pool's week is simulated once per candidate and week
(`infra.sim.pool_runs.PoolRuns` caches it) and combined with the others' afterwards.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from infra.model.platform import Platform
from infra.sim.arrivals import week_jobs
from infra.sim.combine import Combination, Target
from infra.sim.levers import Levers
from infra.sim.platform_scenario import PlannedJob
from infra.sim.pool_runs import MINUTES_PER_WEEK, VARIANTS, PoolRun, PoolRuns, Variant, Week
from infra.sim.verdict import Waits, allowed_over


@dataclass(frozen=True)
class Confirmation:
    """A combination over the weeks (`weeks` of them, the first the screen's): per variant, the weeks it met the
    target in (with no job lost) and the p95 over all the weeks' merge-request jobs simulated."""

    weeks: int
    required: int
    met: tuple[int, ...]
    p95s: tuple[Fraction | None, ...]
    complete: bool
    """Every week simulated (False: stopped once a variant could no longer reach `required`)."""

    @property
    def ok(self) -> bool:
        return self.complete and min(self.met) >= self.required

    @property
    def share(self) -> Fraction:
        """The share of weeks met in the worst variant."""
        return Fraction(min(self.met), self.weeks)

    def margin(self, target: Fraction) -> Fraction | None:
        """The target less the worst variant's pooled p95 (None: a lost job at it)."""
        if any(p95 is None for p95 in self.p95s):
            return None
        return target - max(p95 for p95 in self.p95s if p95 is not None)


@dataclass
class WeeksCheck:
    """The weeks a search's combinations are confirmed on, and what it found for each (by combination key)."""

    platform: Platform
    runner: PoolRuns
    target: Target
    pools: tuple[str, ...]
    """The GPU pools the search varies."""
    weeks: int = 1
    confidence: Fraction = Fraction(9, 10)
    platforms: dict[tuple[str, Levers], Platform] = field(default_factory=dict)
    """Each simulated candidate's platform (the spec changed by its levers)."""
    confirmations: dict[tuple[object, ...], Confirmation] = field(default_factory=dict)
    week_jobs: dict[int, dict[str, tuple[PlannedJob, ...]]] = field(default_factory=dict)
    pool_weeks: dict[tuple[str, Levers, int, str], Week] = field(default_factory=dict)
    """Each candidate pool run's week, by its pool, levers, week and variant: asked again for every combination
    it is in, without building its scenario again to find it in the runner's cache."""

    def confirm(self, combination: Combination, *, full: bool = False) -> Confirmation:
        """The combination over the weeks, every variant: a week meets the target when its merge-request jobs
        over it (every pool's, a lost one among them) are within the p95's allowance and no job is lost; it
        stops at the first week that leaves a variant short of the share (`Confirmation.complete` False), unless
        `full`."""
        key = combination.key
        if key in self.confirmations and (self.confirmations[key].complete or not full):
            return self.confirmations[key]
        required = math.ceil(self.confidence * self.weeks)
        met = [0] * len(VARIANTS)
        totals: list[list[Fraction]] = [[] for _ in VARIANTS]
        lost = [0] * len(VARIANTS)
        complete = True
        for week in range(self.weeks):
            for index, variant in enumerate(VARIANTS):
                runs = [self._pool_week(run, week, variant) for run in combination.runs]
                requests = sum(r.requests for r in runs)
                over = sum(r.over(self.target.minutes) for r in runs)
                if not any(r.failed for r in runs) and requests and over <= allowed_over(requests):
                    met[index] += 1
                for r in runs:
                    totals[index] += r.totals
                    lost[index] += r.lost
            if not full and any(week + 1 - m > self.weeks - required for m in met):
                complete = week + 1 == self.weeks
                break
        found = Confirmation(
            weeks=self.weeks,
            required=required,
            met=tuple(met),
            p95s=tuple(Waits.of(t, n).percentile() for t, n in zip(totals, lost, strict=True)),
            complete=complete,
        )
        self.confirmations[key] = found
        return found

    def mean_eur(self, combination: Combination, fixed_eur: Fraction) -> Fraction:
        """The combination's mean EUR/week over the weeks, as estimated (each pool's week simulated once)."""
        total = Fraction(0)
        for run in combination.runs:
            pool = self.platform.pools[run.pool]
            always_on = Fraction(pool.min_size * MINUTES_PER_WEEK)
            for week in range(self.weeks):
                billed = Fraction(self._pool_week(run, week, VARIANTS[0]).scaled_node_minutes) + always_on
                total += billed * pool.eur_per_hour / 60
        return fixed_eur + total / self.weeks

    def _pool_week(self, run: PoolRun, week: int, variant: Variant) -> Week:
        if week == 0:
            return run.weeks[VARIANTS.index(variant)]
        key = (run.pool, run.levers, week, variant.name)
        found = self.pool_weeks.get(key)
        if found is None:
            found = self.pool_weeks[key] = self._simulated_week(run, week, variant)
        return found

    def _simulated_week(self, run: PoolRun, week: int, variant: Variant) -> Week:
        if week not in self.week_jobs:
            jobs = week_jobs(self.platform, week=week)
            pool_of = {
                p: [j for j in jobs if (j.pool or self.platform.profiles[j.profile].pool) == p] for p in self.pools
            }
            self.week_jobs[week] = {p: tuple(found) for p, found in pool_of.items()}
        platform = self.platforms.get((run.pool, run.levers), self.platform)
        return self.runner.week(platform, run.pool, self.week_jobs[week][run.pool], variant, week=week)
