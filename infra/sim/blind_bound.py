"""The least a platform that cannot see merge requests coming spends meeting the target (pure): a bound on the
average week, for the target as `recommend` holds it (every boot `LATE_BOOT` late).

Why: the target's bound (`infra.sim.target_bound`) knows every arrival, so where a boot outlasts the target it boots
each node just before the jobs that need it, which no autoscaler can do. This bound drops that knowledge and
nothing else a real platform has: it knows the workload spec (each merge-request kind's pipelines a day, its
window, its jobs' run-time spread), everything that already happened, and every run time; it does not know when
the next pipeline comes. Its pipelines come as the simulation draws them: a kind's pipelines of a day at minutes
drawn independently over its window, so at each minute the pipelines still to come are equally likely at any of
its remaining minutes.

What it must do, per pool whose every boot outlasts the target (`BoundPool.boot > target`) and whose merge-request
jobs each run longer than the target:

- **readiness**: a merge-request job queued at `t` starts by `t + W` on a slot of a node that already exists at `t`
  (one started later is not ready in time), free at `t` or freed by a job ending within `(t, t + W]` (a job runs
  longer than `W`, so a slot serves one job of the pipeline). So at each minute the platform holds `r` slots ready
  (`r` chosen knowing only the past), and a pipeline queued then has its jobs beyond `r` over the target;
- **the slots' bill**: a node bills its `S` slots (the most any sharing setting gives it) each minute it exists,
  and each slot-minute is busy (the week's jobs hold at least their run time alone, `J`) or free. A slot counted
  ready at a minute is free then, or frees within `W` (at most `W` minutes a job), or is taken at that minute (at
  most once a job), or its node goes within the minute (once a node, which lives at least a boot `b`): so `S x
  node-minutes x (1 + 1/b) >= J + ready slot-minutes - (W + 1) x jobs` (each job run once);
- **the target's allowance**: a week meets the target when at most `allowed_over` of its merge-request jobs are
  over it, in at least `confidence` of the weeks. The least expected readiness under that is bounded by Lagrange's
  weak duality: for any price `l`, no policy spends less than `min E[readiness + l x (week over)] - l x (1 -
  confidence)`, the minimum worked out exactly by dynamic programming over the minutes of the week (state: the
  day's pipelines come so far, the week's jobs over the target so far, capped at one past the allowance).

Every step is a relaxation (more knowledge, instant readiness, a second pipeline queued in the same minute let
off free, each merge-request kind alone with the whole allowance), so no platform of these pools, meeting the
target as `recommend` holds it, spends less on average than this. Kinds of the profile-level form come at fixed
times (no uncertainty): they add no readiness. The work floor (`J / throughput`) is the other bound: the ready
pools take the larger of the two, the other pools the work floor.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from dataclasses import dataclass, replace
from fractions import Fraction
from operator import add
from statistics import NormalDist
from typing import TYPE_CHECKING

from infra.config.workload import Z99, KindLoadSpec
from infra.sim.memo import Memo
from infra.sim.pool_runs import LATE_BOOT
from infra.sim.target_bound import BoundPool
from infra.sim.target_cost import bound_pools, fixed_eur
from infra.sim.verdict import allowed_over, exact_target

if TYPE_CHECKING:
    from infra.model.platform import Platform

_NORMAL = NormalDist()
_TOP = _NORMAL.cdf(Z99)
STEPS_BUDGET = 5_000_000
"""The most inner steps of the programme one bound takes (the dev stack's: 0.8 million, each of the four programmes it
runs); a stream past it is left out (no readiness from it: a weaker bound, still one), as a workload
of hundreds of merge-request pipelines a day or an allowance of hundreds of jobs would be."""
_STEPS = 512
"""Run-time quantiles summed for a kind's mean run (left sums of an increasing function: a lower bound)."""
PRICES = (Fraction(1), Fraction(11, 10), Fraction(5, 4))
"""The Lagrange prices tried, as multiples of the readiness that lets no week over: each gives a valid bound, the
largest is kept (the dual's maximum lies a little above that readiness: a week let off saves at most all of it)."""


@dataclass(frozen=True)
class Stream:
    """One merge-request kind's pipelines: `pipelines` a day over each `[start, end)` of `days` (minutes of the
    week), the `rank`-th of a day (0 first) holding `needs[rank]` jobs per pool that must find slots ready."""

    kind: str
    days: tuple[tuple[int, int], ...]
    pipelines: int
    needs: tuple[tuple[tuple[str, int], ...], ...]


@dataclass(frozen=True)
class BlindBound:
    """The bound, EUR per average week, and what it is made of."""

    eur: float
    fixed_eur: float
    """The pools outside the bound: their always-on nodes."""
    slots_eur: float
    """The ready pools' jobs' slot-minutes, less what a ready slot may share with them ((W + 1) a job)."""
    ready_eur: float
    """The readiness the target forces (the dual bound of the dynamic programme)."""
    work_eur: float
    """The other pools' work at their most throughput (every pool's where no readiness binds)."""
    ready_slot_minutes: tuple[tuple[str, float], ...]
    """Per pool, the slot-minutes a week held ready by the cheapest policy at the chosen price."""
    kind: str
    """The merge-request kind whose readiness binds."""
    boots: tuple[tuple[str, Fraction], ...]
    """Per pool in the readiness, its fastest boot (late as the bound takes it)."""
    late: Fraction = LATE_BOOT
    """How much later than estimated every boot is taken."""

    def ratio(self, eur: Fraction | float) -> float:
        """A spec's EUR/week over the bound."""
        return float(eur) / self.eur if self.eur else math.inf

    def ready_hours(self) -> float:
        """The slot-hours a week held ready, every pool."""
        return sum(minutes for _, minutes in self.ready_slot_minutes) / 60

    def as_json(self, eur_per_week: Fraction | None = None) -> dict[str, object]:
        """JSON-ready; `ratio`: `eur_per_week` over the bound."""
        found: dict[str, object] = {
            "eur_per_week": self.eur,
            "ready_slot_hours": {name: round(minutes / 60, 2) for name, minutes in self.ready_slot_minutes},
            "boot_minutes": {name: float(boot) for name, boot in self.boots},
        }
        if eur_per_week is not None and self.eur:
            found["ratio"] = round(self.ratio(eur_per_week), 4)
        return found


def blind_bound(
    platform: Platform, *, late_boot: Fraction = LATE_BOOT, cold_start_minutes: Fraction | None = None
) -> BlindBound | None:
    """The bound of `platform`'s average week with every boot `late_boot` later (or `cold_start_minutes` long, then
    late), its pools as `infra.sim.target_cost.bound_pools` sees them; None without a target or a merge-request job."""
    pools = bound_pools(platform, late_boot=late_boot, cold_start_minutes=cold_start_minutes)
    spec = platform.spec
    target = spec.slo.merge_request_wait_minutes
    workload = spec.workload
    if target is None or workload is None:
        return None
    by_name = {pool.name: pool for pool in pools}
    jobs, minutes, requests = _week_counts(platform, by_name)
    if not requests:
        return None
    exact, confidence, fixed = exact_target(target), exact_target(spec.slo.confidence), fixed_eur(platform, pools)
    ready = {name: pool for name, pool in by_name.items() if pool.boot > exact}
    streams = _streams(platform, ready, exact)
    key = (
        tuple(sorted((p.name, p.eur_per_hour, p.slots, p.throughput, p.boot) for p in pools)),
        tuple(sorted(jobs.items())),
        tuple(sorted(minutes.items())),
        requests,
        streams,
        exact,
        confidence,
        fixed,
    )
    found = _BOUNDS.get(key)
    if found is None:
        found = _BOUNDS.keep(
            key,
            _bound(
                by_name,
                jobs=jobs,
                minutes=minutes,
                requests=requests,
                streams=streams,
                target=exact,
                confidence=confidence,
                fixed=fixed,
            ),
        )
    return replace(found, late=late_boot)


_BOUNDS: Memo[tuple[object, ...], BlindBound] = Memo(64)
"""Bounds by what they are worked out from: a plan, its weeks and a search's candidates of the same pools and
workload ask for the same one (some hundred thousand steps of the programme each)."""


def _bound(
    pools: dict[str, BoundPool],
    *,
    jobs: dict[str, int],
    minutes: dict[str, float],
    requests: int,
    streams: tuple[Stream, ...],
    target: Fraction,
    confidence: Fraction,
    fixed: Fraction,
) -> BlindBound:
    # a ready slot-minute's price: a node exists over each whole minute it is counted ready at but its last, and
    # lives at least a boot `b`, so its instants are at most its minutes x (1 + 1/b)
    slot_eur = {n: float(p.eur_per_hour) / 60 / p.slots * float(p.boot / (p.boot + 1)) for n, p in pools.items()}
    work = {n: minutes.get(n, 0.0) / float(p.throughput) * float(p.eur_per_hour) / 60 for n, p in pools.items()}
    share = float(target) + 1
    allowance = allowed_over(requests)
    found = BlindBound(_down(float(fixed) + sum(work.values())), float(fixed), 0.0, 0.0, sum(work.values()), (), "", ())
    spent = 0
    for steps, stream in sorted(((_steps(stream, allowance), stream) for stream in streams), key=lambda s: s[0]):
        spent += steps
        if spent > STEPS_BUDGET:  # left out: the bound stays one, weaker
            break
        ready_pools = sorted({name for need in stream.needs for name, _ in need})
        ready, held = _readiness(stream, slot_eur, allowance, float(confidence))
        # not clipped at 0 per pool: the inequalities add up as they are (a pool of short jobs may take some off)
        slots = sum((minutes.get(n, 0.0) - share * jobs.get(n, 0)) * slot_eur[n] for n in ready_pools)
        rest = sum((eur for name, eur in work.items() if name not in ready_pools), 0.0)
        if slots + ready <= sum(work[n] for n in ready_pools):
            continue
        eur = _down(float(fixed) + rest + slots + ready)
        if eur > found.eur:
            found = BlindBound(
                eur=eur,
                fixed_eur=float(fixed),
                slots_eur=slots,
                ready_eur=ready,
                work_eur=rest,
                ready_slot_minutes=tuple(sorted(held.items())),
                kind=stream.kind,
                boots=tuple((n, pools[n].boot) for n in ready_pools),
            )
    return found


def _down(eur: float) -> float:
    """A float sum rounded down past its rounding error: the bound stays a bound."""
    return math.floor(eur * (1 - 1e-9) * 100) / 100


def _steps(stream: Stream, allowance: int) -> int:
    """The programme's inner steps for the stream: per minute, per pipelines come so far, per jobs over so far, its
    choices and the arrival odds."""
    states = allowance + 2
    minutes = sum(end - start for start, end in stream.days)
    per_minute = sum(
        states * (min(sum(n for _, n in need) + 1, states) + stream.pipelines - rank)
        for rank, need in enumerate(stream.needs)
    )
    return minutes * per_minute


def _readiness(
    stream: Stream, slot_eur: dict[str, float], allowance: int, confidence: float
) -> tuple[float, dict[str, float]]:
    """The stream's dual bound on the expected readiness EUR/week, and the slot-minutes each pool holds ready under
    the cheapest policy at the best price."""
    tables = [_deficits(need, slot_eur) for need in stream.needs]
    strict = _programme(stream, tables, allowance, None)[0]
    if strict <= 0:
        return 0.0, {}
    found: tuple[float, list[list[list[list[int]]]]] = (0.0, [])
    for price in PRICES:
        value, choices = _programme(stream, tables, allowance, float(price) * strict, record=True)
        value -= float(price) * strict * (1 - confidence)
        if value > found[0]:
            found = (value, choices)
    value, choices = found
    return (value, _held(stream, tables, allowance, choices)) if choices else (0.0, {})


_NEVER = 1e12
"""The price of a week over the allowance where none may be: finite (an infinite one times a zero chance is NaN), and
far above any week's readiness, so the cheapest policy never risks one."""

Deficits = tuple[tuple[float, ...], tuple[tuple[tuple[str, int], ...], ...]]
"""Per jobs over the target `d` (0..all of a pipeline's): the least EUR a minute of readiness with `d` fewer slots,
and the slots held per pool then (the dearest slots given up first)."""


def _deficits(need: tuple[tuple[str, int], ...], slot_eur: dict[str, float]) -> Deficits:
    slots = sorted((slot_eur[name], name) for name, count in need for _ in range(count))
    slots.reverse()  # dearest first: the first given up
    costs, held = [], []
    for dropped in range(len(slots) + 1):
        kept = slots[dropped:]
        costs.append(sum(c for c, _ in kept))
        counts: dict[str, int] = defaultdict(int)
        for _, name in kept:
            counts[name] += 1
        held.append(tuple(sorted(counts.items())))
    return tuple(costs), tuple(held)


def _programme(
    stream: Stream, tables: list[Deficits], allowance: int, price: float | None, *, record: bool = False
) -> tuple[float, list[list[list[list[int]]]]]:
    """The least expected readiness EUR/week plus `price` per week over the allowance (None: no week may be over),
    backwards over the stream's days and minutes; with `record`, each minute's choice per (day, minute, rank,
    jobs over)."""
    top = allowance + 1
    over = _NEVER if price is None else price
    after = [0.0] * top + [over]
    count = stream.pipelines
    choices: list[list[list[list[int]]]] = []
    for start, end in reversed(stream.days):
        width = end - start
        by_minute = _arrival_odds(width, count)
        values = [list(after) for _ in range(count + 1)]
        day_choices: list[list[list[int]]] = [[] for _ in range(width)] if record else []
        for minute in range(width - 1, -1, -1):
            new: list[list[float]] = [[] for _ in range(count)] + [values[count]]
            picks: list[list[int]] = []
            for come in range(count):
                rest = count - come
                odds = by_minute[minute][come]
                stay = values[come]
                arrive = [odds[1] * v for v in values[come + 1]]
                for k in range(2, rest + 1):
                    weight = odds[k]
                    arrive = [a + weight * v for a, v in zip(arrive, values[come + k], strict=True)]
                costs = tables[come][0]
                deepest = len(costs) - 1
                row, pick = [], []
                last = arrive[top]
                for m in range(top + 1):
                    below = min(deepest + 1, top - m)
                    options = list(map(add, costs[:below], arrive[m : m + below]))
                    if deepest >= top - m:  # every d from top - m on ends over alike: the deepest is the cheapest
                        options.append(costs[deepest] + last)
                    best = min(options)
                    row.append(odds[0] * stay[m] + best)
                    if record:
                        chosen = options.index(best)
                        pick.append(chosen if chosen < below else deepest)
                new[come] = row
                picks.append(pick)
            values = new
            if record:
                day_choices[minute] = picks
        after = values[0]
        if record:
            choices.append(day_choices)
    choices.reverse()
    return after[0], choices


def _held(
    stream: Stream, tables: list[Deficits], allowance: int, choices: list[list[list[list[int]]]]
) -> dict[str, float]:
    """Per pool, the expected slot-minutes a week the policy of `choices` holds ready (forwards over the minutes
    with the state's odds)."""
    top = allowance + 1
    count = stream.pipelines
    held: dict[str, float] = defaultdict(float)
    odds_week = [1.0] + [0.0] * top
    for (start, end), day in zip(stream.days, choices, strict=True):
        width = end - start
        by_minute = _arrival_odds(width, count)
        state = [[0.0] * (top + 1) for _ in range(count + 1)]
        state[0] = odds_week
        for minute in range(width):
            new = [[0.0] * (top + 1) for _ in range(count + 1)]
            new[count] = list(state[count])
            for come in range(count):
                rest = count - come
                odds = by_minute[minute][come]
                for m in range(top + 1):
                    p = state[come][m]
                    if p == 0:
                        continue
                    d = day[minute][come][m]
                    for name, slots in tables[come][1][d]:
                        held[name] += p * slots
                    new[come][m] += p * odds[0]
                    for k in range(1, rest + 1):
                        new[come + k][min(top, m + d)] += p * odds[k]
            state = new
        odds_week = state[count]
    return dict(held)


@functools.lru_cache(maxsize=16)
def _arrival_odds(width: int, count: int) -> tuple[tuple[tuple[float, ...], ...], ...]:
    """Per minute of a window `width` long and per pipelines come so far (of `count` a day), the odds that 0, 1, ...
    of those still to come come that minute: each of them independently, by its draw's chance there over its chance
    at that minute or later."""
    chance = _minute_chances(width)
    left = [0.0] * (width + 1)
    for minute in range(width - 1, -1, -1):
        left[minute] = left[minute + 1] + chance[minute]
    found = []
    for minute in range(width):
        hazard = chance[minute] / left[minute] if left[minute] > 0 else 1.0
        found.append(
            tuple(
                tuple(math.comb(rest, k) * hazard**k * (1 - hazard) ** (rest - k) for k in range(rest + 1))
                for rest in range(count, 0, -1)
            )
        )
    return tuple(found)


def _minute_chances(width: int) -> list[float]:
    """The chance a pipeline's draw falls on each minute of a window `width` long: `min(width - 1,
    round(u x width))` for `u` uniform in [0, 1) (`infra.sim.arrivals`): half a minute's on the first, one and a
    half on the last."""
    if width == 1:
        return [1.0]
    chances = [1.0 / width] * width
    chances[0] = 0.5 / width
    chances[-1] = 1.5 / width
    return chances


def _streams(platform: Platform, ready: dict[str, BoundPool], target: Fraction) -> tuple[Stream, ...]:
    """The merge-request kinds' pipelines, one stream per kind name, window, days and pipelines a day (the draws of
    a kind's name and day: the same kind in two profiles so alike is one pipeline), needing slots ready only in
    `ready` pools and only for jobs that run longer than the target."""
    workload = platform.spec.workload
    assert workload is not None
    groups: dict[tuple[str, tuple[tuple[int, int], ...], int], list[tuple[str, KindLoadSpec, int]]] = defaultdict(list)
    for name, load in sorted(workload.profiles.items()):
        if name not in platform.profiles or not load.kinds:
            continue
        families = len(platform.profiles[name].families)
        for kind_name, kind in sorted(load.kinds.items()):
            if kind.job_class != "merge_request":
                continue
            pipelines = math.ceil(kind.jobs_per_day / families)
            groups[(kind_name, tuple(kind.intervals()), pipelines)].append((name, kind, families))
    streams = []
    for (kind_name, days, pipelines), members in sorted(groups.items()):
        needs = []
        for rank in range(pipelines):
            need: dict[str, int] = defaultdict(int)
            for profile, kind, families in members:
                pool = platform.profiles[profile].pool
                if pool in ready and _shortest_run(kind) > target:
                    need[pool] += max(0, min(families, kind.jobs_per_day - rank * families))
            needs.append(tuple(sorted((p, n) for p, n in need.items() if n)))
        if any(needs) and days:
            streams.append(Stream(kind_name, days, pipelines, tuple(needs)))
    return tuple(streams)


def _week_counts(platform: Platform, pools: dict[str, BoundPool]) -> tuple[dict[str, int], dict[str, float], int]:
    """Per pool of `pools`, its jobs a week and their run minutes alone (a lower bound of the mean: `_mean_run`);
    and the week's merge-request jobs."""
    workload = platform.spec.workload
    assert workload is not None
    jobs: dict[str, int] = defaultdict(int)
    minutes: dict[str, float] = defaultdict(float)
    requests = 0
    for name, load in sorted(workload.profiles.items()):
        if name not in platform.profiles:
            continue
        pool = platform.profiles[name].pool
        if load.kinds:
            for kind in load.kinds.values():
                count = kind.jobs_per_day * len(kind.intervals())
                requests += count if kind.job_class == "merge_request" else 0
                if pool in pools:
                    jobs[pool] += count
                    minutes[pool] += count * _mean_run(kind)
        else:
            assert load.jobs_per_day is not None and load.minutes_per_job is not None
            count = load.jobs_per_day * 7
            requests += count
            if pool in pools:
                jobs[pool] += count
                minutes[pool] += count * load.minutes_per_job
    return dict(jobs), dict(minutes), requests


def _mean_run(kind: KindLoadSpec) -> float:
    """A lower bound of a kind's mean run time as `infra.sim.arrivals.run_minutes` draws it: the left sum of its
    quantile function over `_STEPS` (it increases), less the draw's rounding to 0.1 min."""
    return _mean_of(kind.minutes_per_job, kind.sigma)


@functools.lru_cache(maxsize=256)
def _mean_of(median: float, sigma: float) -> float:
    if not sigma:
        return median
    total = 0.0
    for step in range(_STEPS):
        quantile = min(max(step / _STEPS, 1 - _TOP), _TOP)
        total += median * math.exp(sigma * _NORMAL.inv_cdf(quantile))
    return max(0.0, total / _STEPS - 0.05)


def _shortest_run(kind: KindLoadSpec) -> Fraction:
    """The shortest run time a draw gives (its p1, rounded down past the draw's 0.1 min)."""
    if not kind.sigma:
        return Fraction(str(kind.minutes_per_job))
    return Fraction(math.floor(kind.minutes_per_job * math.exp(-kind.sigma * Z99) * 10), 10) - Fraction(1, 10)
