"""`recommend`'s search (pure): the cheapest platform whose merge-request p95 meets the target, by simulation.

Each GPU pool's candidates (`infra.sim.levers`) are derived by the spec (`derive`: a candidate it refuses is
never simulated, nor one the policy pack refuses with its default config: `pack_refusals`) and simulated alone
(`infra.sim.pool_runs`: pools do not interact, so the search simulates the sum of the pools' candidates, not
their product), as estimated and with jobs 10 % slower. Pools are then combined (`infra.sim.combine`).

The search takes the candidates cheapest first by their cost floor (`infra.sim.floors`) plus the other pools'
cheapest floors, and skips, before simulating, a candidate that:
- cannot beat the cheapest combination found that meets the target (its floor says so: the search stops);
- cannot meet the target in any combination (its slots, or a cold start, force more merge-request jobs past
  the target than the p95 allows);
- is beaten on cost and waits by a candidate of its pool already simulated;
- would run the week of a smaller `max_size` already simulated whose caps were never reached.
When no candidate meets the target, those that cannot meet it are simulated after all (fewest jobs certainly
over it first) to find the closest. At most `max_runs` candidates are simulated: past that the search stops
and says so (`cut`).
"""

from __future__ import annotations

import functools
import heapq
import itertools
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction
from typing import Any

from infra.config.errors import SpecError
from infra.config.pools import WarmWindowSpec
from infra.config.schedule import MINUTES_PER_WEEK, weekdays
from infra.model.platform import Platform, load_platform
from infra.model.pools import Pool
from infra.model.warm import week_spans
from infra.sim.arrivals import shared_week_jobs
from infra.sim.combine import Combination, Target, cheapest, first_valid
from infra.sim.confirm import WeeksCheck
from infra.sim.floors import WaitBounds, cost_floor, node_throughput, quiet_minutes, wait_bounds
from infra.sim.levers import (
    Levers,
    Window,
    apply,
    changes,
    pool_space,
    replica_values,
    today_levers,
    warm_value,
)
from infra.sim.platform_scenario import PlannedJob, sim_pools
from infra.sim.pool_runs import VARIANTS, PoolRun, PoolRuns
from infra.sim.refine import MAX_SCREENS, Refined, arrival_rates, refine, seed_levers
from infra.sim.search_report import MAX_RUNS, Candidate, SearchError, SearchReport, pack_refusals, pareto
from infra.sim.target_bound import WeekFloor
from infra.sim.target_cost import bound_pools, target_cost, week_bound
from infra.sim.verdict import exact_target

CANNOT_MEET = "cannot meet the target (slots or cold start)"
Progress = Callable[[int, int], None]
"""Called after each simulated candidate: (simulated, still queued)."""


def search(
    platform: Platform,
    raw: Any,
    *,
    max_runs: int = MAX_RUNS,
    progress: Progress | None = None,
    confidence: Fraction | None = None,
    weeks: int | None = None,
    keep_sizes: bool = False,
    max_refine: int = MAX_SCREENS,
) -> SearchReport:
    """Search the levers of `platform` (derived from the config object `raw`) for the cheapest spec that meets the
    target in at least `confidence` (default `slo.confidence`) of `weeks` (default `slo.weeks`), every pool's
    `max_size` as it is with `keep_sizes`, then refine it (at most `max_refine` moves tried); see the module
    docstring."""
    target_minutes = platform.spec.slo.merge_request_wait_minutes
    if target_minutes is None:
        raise SearchError("platform.slo.merge_request_wait_minutes is not set: there is no target to meet")
    if refused := pack_refusals(platform):
        raise SearchError(f"the policy pack refuses the spec as it stands: {refused[0]}")
    jobs = shared_week_jobs(platform)  # a tuple: `scenario` makes its jobs once for every candidate
    pools = [pool.name for pool in sim_pools(platform)]
    requests = sum(1 for job in jobs if job.job_class == "merge_request")
    if not requests:
        raise SearchError("platform.workload has no merge-request job in the week: there is nothing to meet")
    target = Target(Fraction(target_minutes).limit_denominator(1000), requests)
    state = _Search(
        platform, raw, jobs=jobs, pools=pools, target=target, max_runs=max_runs, progress=progress, keep=keep_sizes
    )
    state.weeks_check.weeks = platform.spec.slo.weeks if weeks is None else weeks
    state.weeks_check.confidence = exact_target(platform.spec.slo.confidence) if confidence is None else confidence
    state.max_refine = max_refine
    return state.run()


class _Search:
    def __init__(
        self,
        platform: Platform,
        raw: Any,
        *,
        jobs: tuple[PlannedJob, ...],
        pools: list[str],
        target: Target,
        max_runs: int,
        progress: Progress | None,
        keep: bool = False,
    ) -> None:
        self.platform, self.raw, self.pools, self.target = platform, raw, pools, target
        self.max_runs, self.progress, self.keep, self.max_refine = max_runs, progress, keep, MAX_SCREENS
        self.by_levers: dict[tuple[str, Levers], PoolRun | None] = {}
        self.runner = PoolRuns()
        self.skipped: dict[str, int] = {}
        self.runs: dict[str, list[PoolRun]] = {pool: [] for pool in pools}
        self.spaces_today = {pool: today_levers(platform, pool) for pool in pools}
        self.nodes = {pool: self._nodes(pool) for pool in pools}
        self.spaces = {
            pool: pool_space(
                platform, pool, jobs, {r: node.jobs_per_node for r, node in self.nodes[pool].items()}, keep_sizes=keep
            )
            for pool in pools
        }
        self.utilization = {pool: _least_utilization(platform, pool) for pool in pools}
        self.span_cache: dict[tuple[object, ...], tuple[tuple[int, int, int], ...]] = {}
        self.fixed = sum(
            (
                p.eur_per_hour * p.min_size * MINUTES_PER_WEEK / 60
                for p in platform.pools.values()
                if p.name not in pools
            ),
            Fraction(0),
        )
        spec = platform.spec
        simulated = sim_pools(platform)
        scale_down = max(max(p.scale_down_unneeded_minutes, p.scale_down_delay_after_add_minutes) for p in simulated)
        self.quiet = quiet_minutes(Fraction(spec.runner.job_timeout_seconds, 60), Fraction(scale_down))
        boots = {p.name: p.boots for p in simulated}  # a cold arrival waits at least the fastest boot drawn
        self.bounds: dict[str, tuple[WaitBounds, ...]] = {
            pool: tuple(
                wait_bounds(
                    self.spaces[pool].jobs,
                    target.minutes,
                    boots[pool].fastest + variant.late_boot,
                    variant.slower,
                    self.quiet,
                )
                for variant in VARIANTS
            )
            for pool in pools
        }
        self.valid_cache: dict[tuple[object, ...], bool] = {}
        self.weeks_check = WeeksCheck(platform, self.runner, target, tuple(pools))

    def _nodes(self, pool: str) -> dict[int | None, Pool]:
        """The pool derived with each replica count the spec accepts (its fit checks), today's first."""
        today = self.platform.pools[pool]
        found: dict[int | None, Pool] = {self.spaces_today[pool].replicas: today}
        for replicas in replica_values(self.platform, pool):
            if replicas in found:
                continue
            try:
                platform = load_platform(apply(self.raw, [(("pools", pool, "gpu_sharing", "replicas"), replicas)]))
            except SpecError:
                continue
            found[replicas] = platform.pools[pool]
        return found

    # the candidates

    def _candidates(self) -> list[Candidate]:
        """Every pool's candidates with their bounds (derived only when the search reaches them)."""
        found = []
        for pool in self.pools:
            space = self.spaces[pool]
            work = sum((job.minutes for job in space.jobs), Fraction(0))
            bounds = self.bounds[pool]
            for levers in space.candidates():
                node = self.nodes[pool][levers.replicas]
                spans = self._spans(node, levers.warm)
                floor = cost_floor(
                    eur_per_hour=node.eur_per_hour,
                    min_size=node.min_size,
                    throughput=node_throughput(node.jobs_per_node, node.node.gpus, self.utilization[pool]),
                    spans=spans,
                    work_minutes=work,
                    minutes_per_week=MINUTES_PER_WEEK,
                )
                slots = node.jobs_per_node * levers.max_size
                overs = tuple(bound.over(slots, spans, node.min_size, self.quiet) for bound in bounds)
                found.append(Candidate(pool, levers, floor, overs))
        return found

    def _spans(self, node: Pool, warm: tuple[Window, ...]) -> tuple[tuple[int, int, int], ...]:
        """The warm spans of the week the pool's nodes would be held up in (`infra.model.warm.week_spans`)."""
        key = (node.name, node.cold_start_minutes, warm)
        if key not in self.span_cache:
            windows = tuple(WarmWindowSpec.model_validate(window) for window in warm_value(warm))
            self.span_cache[key] = week_spans(replace(node, spec=node.spec.model_copy(update={"warm": windows})))
        return self.span_cache[key]

    def _derive(self, candidate: Candidate) -> Platform | None:
        """The platform with the candidate's changes, or None (counted) if the spec or the pack refuses it."""
        pool = candidate.pool
        try:
            platform = load_platform(apply(self.raw, changes(pool, self.spaces[pool].today, candidate.levers)))
        except SpecError:
            self._skip("refused by the spec")
            return None
        if pack_refusals(platform):
            self._skip("refused by the policy pack")
            return None
        return platform

    def _skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1

    # the search

    def run(self) -> SearchReport:
        candidates = self._candidates()
        today = {pool: self.spaces[pool].today for pool in self.pools}
        first = {c.pool: c for c in candidates if c.levers == today[c.pool]}
        for pool in self.pools:  # today's spec is always simulated: the front places it
            self._simulate(first[pool], self.platform)
        cheapest_floor = {pool: min(c.floor for c in candidates if c.pool == pool) for pool in self.pools}
        floors_total = sum(cheapest_floor.values(), Fraction(0))
        counter = itertools.count()
        queue = [
            (
                c.floor + floors_total - cheapest_floor[c.pool],
                len(changes(c.pool, today[c.pool], c.levers)),
                next(counter),
                c,
            )
            for c in candidates
            if c.levers != today[c.pool]
        ]
        heapq.heapify(queue)
        best = self._best(self.target.minutes, confirm=True)
        cut = False
        hopeless: list[Candidate] = []
        while queue:
            optimistic, _, _, candidate = heapq.heappop(queue)
            if best is not None and self.fixed + optimistic >= best.eur_per_week:
                self.skipped["cannot be cheaper than the recommendation"] = (
                    self.skipped.get("cannot be cheaper than the recommendation", 0) + 1 + len(queue)
                )
                break
            if (why := self._pruned(candidate)) is not None:
                self._skip(why)
                if why == CANNOT_MEET:
                    hopeless.append(candidate)
                continue
            if len(self._simulated()) >= self.max_runs:
                cut = True
                self._skip("past the budget")
                self.skipped["past the budget"] += len(queue)
                break
            platform = self._derive(candidate)
            if platform is None:
                continue
            run = self._simulate(candidate, platform)
            if self.progress is not None:
                self.progress(len(self._simulated()), len(queue))
            if not run.failed and max(run.overs(self.target.minutes)) <= self.target.allowed_over:
                best = self._best(self.target.minutes, confirm=True)
        if best is None and not cut:
            cut = self._closer(hopeless)
        return self._report(today, best, len(candidates), cut)

    # the second step (`infra.sim.refine`) asks these

    def run_levers(self, pool: str, levers: Levers) -> PoolRun | None:
        key = (pool, levers)
        if key not in self.by_levers:
            candidate = Candidate(pool, levers, Fraction(0), ())
            platform = self._derive(candidate)
            self.by_levers[key] = None if platform is None else self._simulate(candidate, platform)
        return self.by_levers[key]

    def valid(self, combination: Combination) -> bool:
        return self._valid(combination)

    def simulations(self) -> int:
        return len(self.by_levers)

    def replica_counts(self, pool: str) -> list[int | None]:
        return sorted(self.nodes[pool], key=lambda replicas: replicas or 0)

    def eur_per_hour(self, pool: str) -> Fraction:
        return self.platform.pools[pool].eur_per_hour

    def arrival_rates(self, pool: str, weekday: int) -> tuple[Fraction, ...]:
        return arrival_rates(self.platform, pool, weekday)

    def _tried(self, moves: int) -> None:
        if self.progress is not None:
            self.progress(len(self._simulated()), self.max_refine - moves)

    def _refine(self, best: Combination | None) -> tuple[Combination | None, Refined | None]:
        """The second step from the first's winner (or, without one, from the closest: no slower, cheaper)."""
        start = best if best is not None else self._closest()
        if start is None or not self.max_refine:
            return best, None
        seeds = []
        for quantile in (self.weeks_check.confidence, Fraction(1)):
            runs = []
            for run in start.runs:
                hours = dict.fromkeys(days for option in self.spaces[run.pool].warm_hours for days, _, _ in option)
                groups = [(days, self.arrival_rates(run.pool, min(weekdays(days)))) for days in hours]
                levers = seed_levers(run.levers, self.floors, run.pool, groups, quantile)
                runs.append(self.run_levers(run.pool, levers) if levers != run.levers else run)
            if all(r is not None for r in runs):
                seeds.append(Combination(tuple(r for r in runs if r is not None), self.fixed, self.target.rank))
        done = refine(self, start, seeds=seeds, closest=best is None, max_screens=self.max_refine, progress=self._tried)
        return (done.best if best is not None else best), done

    def _closer(self, hopeless: list[Candidate]) -> bool:
        """Without a candidate that meets the target, the ones that cannot meet it are simulated too (fewest jobs
        certainly over it first, within the budget), to find the closest; True when the budget cut it."""
        hopeless.sort(key=lambda c: (sum(c.overs), c.floor, c.levers))
        for index, candidate in enumerate(hopeless):
            if len(self._simulated()) >= self.max_runs:
                self._skip("past the budget")
                self.skipped["past the budget"] += len(hopeless) - index - 1
                return True
            if (why := self._pruned(candidate, bounds=False)) is not None:
                self._skip(why)
                self.skipped[CANNOT_MEET] -= 1
                continue
            platform = self._derive(candidate)
            self.skipped[CANNOT_MEET] -= 1
            if platform is not None:
                self._simulate(candidate, platform)
                if self.progress is not None:
                    self.progress(len(self._simulated()), len(hopeless) - index - 1)
        if not self.skipped.get(CANNOT_MEET):
            self.skipped.pop(CANNOT_MEET, None)
        return False

    def _simulate(self, candidate: Candidate, platform: Platform) -> PoolRun:
        space = self.spaces[candidate.pool]
        run = self.runner.run(platform, candidate.pool, candidate.levers, space.jobs)
        self.runs[candidate.pool].append(run)
        self.weeks_check.platforms[(candidate.pool, candidate.levers)] = platform
        return run

    def _simulated(self) -> list[PoolRun]:
        return [run for runs in self.runs.values() for run in runs]

    def _pruned(self, candidate: Candidate, *, bounds: bool = True) -> str | None:
        """Why the candidate need not be simulated, or None (see the module docstring); without `bounds`, only a
        run it would repeat."""
        allowed = self.target.allowed_over
        if bounds and max(candidate.overs) > allowed:
            return CANNOT_MEET
        levers = candidate.levers
        for run in self.runs[candidate.pool]:
            other = run.levers
            same_but_size = (other.replicas, other.merge_request_slots, other.warm) == (
                levers.replicas,
                levers.merge_request_slots,
                levers.warm,
            )
            if same_but_size and other.max_size < levers.max_size and not run.capped:
                return "same week as a smaller max_size"
            if (
                bounds
                and not run.failed
                and run.eur_per_week <= candidate.floor
                and all(a <= b for a, b in zip(run.overs(self.target.minutes), candidate.overs, strict=True))
            ):
                return "beaten by a candidate of its pool"
        return None

    def _best(self, level: Fraction, *, confirm: bool = False) -> Combination | None:
        """The cheapest valid combination of the runs so far whose waits stay within `level` on the first week;
        with `confirm`, also within the target in enough of the weeks (`infra.sim.confirm`)."""
        combos = cheapest(
            [self.runs[pool] for pool in self.pools], level, self.target.allowed_over, self.fixed, self.target.rank
        )
        if not confirm:
            return first_valid(combos, self._valid)
        return first_valid(combos, lambda c: self._valid(c) and self.weeks_check.confirm(c).ok)

    def _valid(self, combination: Combination) -> bool:
        """Whether the spec (every pool's changes at once: quota, manager pool, ...) and the pack accept it, its
        pools agreeing on the cluster's scale-down delay."""
        key = combination.key
        if len({run.levers.scale_down_seconds for run in combination.runs}) > 1:
            return False
        if key not in self.valid_cache:
            found = [c for run in combination.runs for c in changes(run.pool, self.spaces[run.pool].today, run.levers)]
            try:
                platform = load_platform(apply(self.raw, found))
            except SpecError:
                self.valid_cache[key] = False
            else:
                self.valid_cache[key] = not pack_refusals(platform)
        return self.valid_cache[key]

    # the report

    def _report(self, today: dict[str, Levers], best: Combination | None, candidates: int, cut: bool) -> SearchReport:
        first_runs = {pool: len(runs) for pool, runs in self.runs.items()}
        best, refined = self._refine(best)
        today_runs = tuple(next(r for r in self.runs[pool] if r.levers == today[pool]) for pool in self.pools)
        today_combination = Combination(today_runs, self.fixed, self.target.rank)
        self.weeks_check.confirm(today_combination, full=True)  # today's figures are shown whole
        unconfirmed = None if best is not None else self._best(self.target.minutes)
        if unconfirmed is not None:
            self.weeks_check.confirm(unconfirmed)
        closest = None if best is not None else (refined.best if refined is not None else self._closest())
        if closest is not None:
            self.weeks_check.confirm(closest, full=True)  # the best the levers do, over every week
        means = {
            c.key: self.weeks_check.mean_eur(c, self.fixed)
            for c in (today_combination, best, closest)
            if c is not None
            and (confirmed := self.weeks_check.confirmations.get(c.key)) is not None
            and confirmed.complete
        }
        return SearchReport(
            target=self.target,
            today=today_combination,
            recommended=best,
            closest=closest,
            front=self._front(best or closest, today_combination),
            pools=self.pools,
            spaces=self.spaces,
            candidates=candidates,
            simulated=len(self._simulated()),
            skipped=dict(sorted(self.skipped.items())),
            runs={pool: list(runs) for pool, runs in self.runs.items()},
            cut=cut,
            max_runs=self.max_runs,
            confirmations=dict(self.weeks_check.confirmations),
            weeks=self.weeks_check.weeks,
            confidence=self.weeks_check.confidence,
            unconfirmed=unconfirmed,
            bound=target_cost(self.floors) if self.floors else None,
            refined=refined,
            keep_sizes=self.keep,
            first_runs=first_runs,
            means=means,
        )

    @functools.cached_property
    def floors(self) -> list[WeekFloor]:
        """Each week's bound (`infra.sim.target_cost`), from today's spec: the bound is every spec's."""
        pools = bound_pools(self.platform)
        return [
            week_bound(self.platform, shared_week_jobs(self.platform, week=week), pools)
            for week in range(self.weeks_check.weeks)
        ]

    def _closest(self) -> Combination | None:
        """The combination with the lowest p95 (every variant), the cheapest of those."""
        levels = sorted(
            {wait[0] for run in self._simulated() if not run.failed for week in run.weeks for wait in week.waits}
        )
        low, high, found = 0, len(levels) - 1, None
        while low <= high:
            middle = (low + high) // 2
            combination = self._best(levels[middle])
            if combination is None:
                low = middle + 1
            else:
                found, high = combination, middle - 1
        return found

    def _front(self, anchor: Combination | None, today: Combination) -> list[Combination]:
        """The cheapest combination at each of a ladder of p95 levels, without those another beats."""
        target = self.target.minutes
        levels = {target * factor for factor in (Fraction(0), Fraction(1, 2), 1, 2, 3, 5, 10, 20)}
        levels |= {today.score}
        if anchor is not None:
            levels.add(anchor.score)
        found: dict[tuple[object, ...], Combination] = {}
        for level in sorted(levels):
            combination = self._best(level)
            if combination is not None:
                found.setdefault(combination.key, combination)
        return pareto(list(found.values()))


def _least_utilization(platform: Platform, pool: str) -> Fraction | None:
    """The smallest `gpu_utilization` of the pool's profiles (None if one has none: its sharing is free)."""
    workload = platform.spec.workload
    found = []
    for name in platform.pools[pool].profiles:
        load = workload.profiles.get(name) if workload is not None else None
        if load is None or load.gpu_utilization is None:
            return None
        found.append(Fraction(str(load.gpu_utilization)))
    return min(found, default=None)
