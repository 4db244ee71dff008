"""The least a week meeting the merge-request target can cost (pure): a lower bound no dispatch can beat.

Why: `recommend` finds the cheapest spec its levers reach; nothing said how far that is from the cheapest platform
that could meet the target at all. This bound answers for one week of jobs (arrivals and run times known, as the
simulation draws them). It relaxes the platform to a clairvoyant one of the same pools and prices: it knows every
arrival and run time, starts and stops nodes at any instant (paying only each node's fastest boot and its minutes
up), places work anywhere its nodes have room, and is limited only by a node's most jobs and throughput. What it
must still do, per pool:

- **start each merge-request job within the target** (`W`): the job runs at least its length alone (`m`), so from
  `a + W` to `a + m` it certainly holds a slot, whenever it started: at each instant `ceil(C / S)` nodes must be
  ready (`C` such jobs, `S` the most jobs a node holds under any sharing setting the pool's strategy allows: the
  node's CPU and memory by the jobs' requests, its GPUs x the strategy's most replicas);
- **pay for readiness**: a node ready at `x` was started (billed) at least a boot (`b`, the pool's fastest draw)
  before; so for the `k`-th node the billed time covers every `[x - b, y)` of the times `k` nodes must be ready
  (a gap shorter than a boot is cheaper kept up than rebooted);
- **do the work**: a ready node gets through at most `T` minutes of work alone a minute (`floors.node_throughput`:
  its jobs, at most 1/u per GPU when they share it), so the ready node-minutes are at least the week's work / `T`
  (and its longest job: no job runs faster than alone), and each merge-request burst's work must be done within
  its window (a job starts by `a + W` and runs at most `stretch` times its length: the slowest a full GPU makes
  it).

More ready time is bought cheapest first (an LP over the levels, solved exactly by a greedy: keeping a node up over
a gap `g` of its level buys `g + b` ready minutes for `g`, anything else a minute for a minute). Every step only
drops constraints a real dispatch obeys, so any spec that meets the target on the week (no job lost) bills at least
this much: the simulation bills whole minutes, boots at least as slowly, and obeys all of them.

The target is a p95: `allowed_over` merge-request jobs may start later. Either of two valid reliefs is taken (the
larger bound): each such job is let off at most `b + max(m - W, m / T)` node-minutes (a node of its own covers what
it forced), the `allowed_over` dearest let off; or at every instant `allowed_over` fewer jobs hold slots.
"""

from __future__ import annotations

import heapq
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

ZERO = Fraction(0)


@dataclass(frozen=True)
class BoundPool:
    """A GPU pool as the bound sees it: the most any of its settings allows."""

    name: str
    eur_per_hour: Fraction
    boot: Fraction
    """The fastest boot a node of the pool takes (minutes)."""
    slots: int
    """The most jobs a node holds under any sharing setting its strategy allows."""
    throughput: Fraction
    """The most minutes of work alone a node gets through a minute."""
    stretch: Fraction = Fraction(1)
    """The most times its length a job can take (sharing its GPU at the slots' most)."""


@dataclass(frozen=True)
class BoundJob:
    created: Fraction
    minutes: Fraction
    merge_request: bool


@dataclass(frozen=True)
class Segment:
    """A span in which the `level`-th node is up: booting from `start` (minutes of the week), ready from
    `start + boot` to `end`."""

    level: int
    start: Fraction
    end: Fraction


@dataclass(frozen=True)
class PoolFloor:
    """One pool's bound on one week, and what makes it."""

    pool: BoundPool
    node_minutes: Fraction
    segments: tuple[Segment, ...]
    """The nodes the target forces up (before any ready time bought for the work)."""
    forced_minutes: Fraction
    """Node-minutes the target forces (the segments': boots, ready time, gaps kept up)."""
    work_minutes: Fraction
    """The week's work (minutes of jobs alone), the bought ready time's reason."""
    reliefs: tuple[int, ...] = ()
    """Per merge-request job, the most node-milliseconds letting it start late can save (the module docstring)."""

    @property
    def eur(self) -> Fraction:
        return self.node_minutes * self.pool.eur_per_hour / 60

    @property
    def boots(self) -> int:
        """Node starts the target forces."""
        return len(self.segments)


@dataclass(frozen=True)
class WeekFloor:
    """A week's bound: per pool with every merge-request job started within the target (`strict`) and with
    `allowed_over` of them at any instant let off (`spared`), the fixed pools' cost, the p95's relief."""

    strict: tuple[PoolFloor, ...]
    spared: tuple[PoolFloor, ...]
    fixed_eur: Fraction
    relief_eur: Fraction
    """What the `allowed_over` dearest jobs' reliefs add up to."""

    @property
    def strict_eur(self) -> Fraction:
        """Every merge-request job started within the target."""
        return self.fixed_eur + sum((p.eur for p in self.strict), ZERO)

    @property
    def eur(self) -> Fraction:
        """The bound for a week that meets the target (a p95): the larger of the two reliefs'."""
        spared = self.fixed_eur + sum((p.eur for p in self.spared), ZERO)
        return max(spared, self.strict_eur - self.relief_eur)

    @property
    def forced_minutes(self) -> Fraction:
        return sum((p.forced_minutes for p in self.strict), ZERO)

    @property
    def boots(self) -> int:
        return sum(p.boots for p in self.strict)

    def pool(self, name: str) -> PoolFloor:
        return next(p for p in self.strict if p.pool.name == name)


MS = 60_000
"""Times are whole milliseconds inside (the engine's unit): sweeps and sorts on integers."""
WEEK_MINUTES = 7 * 24 * 60
"""A pool's bound is at most a node up all week: a platform with an always-on node (`min_size`) pays that much
whatever it runs, one without one pays for every minute it boots and runs (the simulation bills a `min_size`
node for the week, booted before it and up after it)."""


def pool_floor(pool: BoundPool, jobs: Sequence[BoundJob], target: Fraction, *, spare: int = 0) -> PoolFloor:
    """The least node-minutes `pool` bills for `jobs` with every merge-request job started within `target`, but
    `spare` of them at any instant (and the `spare` longest of each burst's work freed of its window)."""
    boot, wait, rate = _ms(pool.boot), _ms(target), pool.throughput
    requests = [(_ms(job.created), _ms(job.minutes)) for job in jobs if job.merge_request]
    held = [(created + wait, created + minutes) for created, minutes in requests if minutes > wait]
    segments, gaps = _segments(_levels(held, pool.slots, spare), boot)
    work = sum(_ms(job.minutes) for job in jobs)  # the sum of jobs' minutes alone
    forced = sum(end - start for _, start, end in segments)
    ready = [(start + boot, end) for _, start, end in segments]
    needed = _due([_ms(job.minutes) for job in jobs], rate)
    if segments:
        windows = _windows(requests, wait, pool.stretch, spare, rate)
        bought = _buy(windows, ready, _pieces(gaps, boot), needed, rate.numerator)
    else:  # no level forced: one node at least, booted once
        bought = Fraction(needed, rate.numerator) + boot if needed else ZERO
    p, q = rate.numerator, rate.denominator
    reliefs = tuple(boot + max(minutes - wait, -(-minutes * q // p)) for _, minutes in requests)
    return PoolFloor(
        pool,
        min((forced + bought) / MS, Fraction(WEEK_MINUTES)),
        tuple(Segment(level, Fraction(start, MS), Fraction(end, MS)) for level, start, end in segments),
        Fraction(forced, MS),
        Fraction(work, MS),
        reliefs,
    )


def week_floor(
    pools: Sequence[BoundPool],
    jobs: Sequence[tuple[str, BoundJob]],
    target: Fraction,
    *,
    allowed_over: int,
    fixed_eur: Fraction = ZERO,
) -> WeekFloor:
    """The week's bound over its pools (`jobs`: each job's pool and the job), with `allowed_over` merge-request
    jobs allowed past the target (the p95's share)."""
    by_pool = {pool.name: [job for name, job in jobs if name == pool.name] for pool in pools}
    strict = tuple(pool_floor(pool, by_pool[pool.name], target) for pool in pools)
    if not allowed_over:
        return WeekFloor(strict, strict, fixed_eur, ZERO)
    prices = {pool.name: pool.eur_per_hour / 60 / MS for pool in pools}
    relief = sum(heapq.nlargest(allowed_over, (r * prices[f.pool.name] for f in strict for r in f.reliefs)), ZERO)
    spared = tuple(pool_floor(pool, by_pool[pool.name], target, spare=allowed_over) for pool in pools)
    return WeekFloor(strict, spared, fixed_eur, relief)


def _ms(minutes: Fraction) -> int:
    """Whole milliseconds, rounded down (every time here is a tenth of a minute; a finer one only loosens)."""
    return minutes.numerator * MS // minutes.denominator


Span = tuple[int, int]


def _levels(held: Sequence[Span], slots: int, spare: int) -> list[list[Span]]:
    """Per level k (from 1), the maximal spans in which at least k nodes must be ready: ceil((C - spare) / slots),
    C the jobs certainly holding a slot."""
    changes: dict[int, int] = {}
    for start, end in held:
        changes[start] = changes.get(start, 0) + 1
        changes[end] = changes.get(end, 0) - 1
    levels: list[list[Span]] = []
    opened: list[int] = []
    holding = 0
    for at in sorted(changes):
        holding += changes[at]
        need = -(-max(0, holding - spare) // slots)
        while len(opened) < need:
            if len(levels) < len(opened) + 1:
                levels.append([])
            opened.append(at)
        while len(opened) > need:
            level = len(opened) - 1
            levels[level].append((opened.pop(), at))
    return levels


def _segments(levels: Sequence[Sequence[Span]], boot: int) -> tuple[list[tuple[int, int, int]], list[Span]]:
    """Each level's billed spans (`[x - boot, y)` merged where they touch) and the gaps between them."""
    segments: list[tuple[int, int, int]] = []
    gaps: list[Span] = []
    for index, spans in enumerate(levels, start=1):
        current: list[int] | None = None
        for ready, end in sorted(spans):
            start = ready - boot
            if current is not None and start <= current[1]:
                current[1] = max(current[1], end)
                continue
            if current is not None:
                segments.append((index, current[0], current[1]))
                gaps.append((current[1], start))
            current = [start, end]
        if current is not None:
            segments.append((index, current[0], current[1]))
    return segments, gaps


Piece = tuple[int, int, int, int]
"""Ready time for sale: [start, end), and its price per minute as a ratio (cost, ready minutes it buys)."""


def _pieces(gaps: Iterable[Span], boot: int) -> list[Piece]:
    """Keeping a node up over a gap [e, s) costs s - e and makes it ready there and over the next boot [s, s + b)."""
    pieces = []
    for end, start in gaps:
        paid, gained = start - end, start - end + boot
        pieces += [(end, start, paid, gained), (start, start + boot, paid, gained)]
    return pieces


def _windows(
    requests: Sequence[Span], wait: int, stretch: Fraction, spare: int, rate: Fraction
) -> list[tuple[int, int, int]]:
    """Merge-request bursts: [start, end) spans of overlapping job windows (queued to started by the target and
    run at their slowest, rounded up) and the ready time due in each (`_due`), the `spare` longest jobs of each
    freed of it."""
    p, q = stretch.numerator, stretch.denominator
    spans = sorted((created, created + wait - (-minutes * p // q), minutes) for created, minutes in requests)
    merged: list[tuple[int, int, list[int]]] = []
    for start, end, minutes in spans:
        if merged and start < merged[-1][1]:
            first, last, works = merged[-1]
            works.append(minutes)
            merged[-1] = (first, max(last, end), works)
        else:
            merged.append((start, end, [minutes]))
    return [(start, end, _due(sorted(works)[: max(0, len(works) - spare)], rate)) for start, end, works in merged]


def _due(works: Sequence[int], rate: Fraction) -> int:
    """The ready node-time `works` need, in units of 1/p ms (rate = p/q): their sum / rate, and at least the
    longest alone (a job runs no faster than alone: its node is ready all its run)."""
    return max(sum(works) * rate.denominator, max(works, default=0) * rate.numerator)


def _buy(
    windows: Sequence[tuple[int, int, int]], ready: Sequence[Span], pieces: Sequence[Piece], needed: int, p: int
) -> Fraction:
    """The least cost (ms) of ready time that gives each window its due inside it, and the week `needed` in all:
    each window from its cheapest pieces inside it (then a minute for a minute), the rest from the cheapest pieces
    left anywhere (the windows are disjoint: greedy is exact for this laminar cover). Amounts are in units of 1/p
    ms (`_due`), so that every one compared is an integer."""
    left = [(end - start) * p for start, end, _, _ in pieces]
    order = sorted(range(len(pieces)), key=lambda i: pieces[i][2])  # price g / (g + boot) rises with the gap g
    cost = Fraction(0)
    bought = 0
    for start, end, due in windows:
        inside = sum(min(e, end) - max(s, start) for s, e in ready if s < end and e > start)
        deficit = due - inside * p
        for index in order:
            if deficit <= 0:
                break
            s, e, paid, gained = pieces[index]
            take = min(deficit, (min(e, end) - max(s, start)) * p, left[index])
            if take > 0:
                left[index] -= take
                cost += Fraction(take * paid, gained)
                bought += take
                deficit -= take
        if deficit > 0:
            cost += deficit
            bought += deficit
    deficit = needed - sum(end - start for start, end in ready) * p - bought
    for index in order:
        if deficit <= 0:
            break
        take = min(deficit, left[index])
        left[index] -= take
        cost += Fraction(take * pieces[index][2], pieces[index][3])
        deficit -= take
    return (cost + max(0, deficit)) / p


def median(values: Sequence[Fraction]) -> Fraction:
    """The median (the mean of the two middle values for an even count)."""
    return Fraction(statistics.median(values))
