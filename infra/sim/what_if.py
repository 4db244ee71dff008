"""What-if (pure): the same scenarios on the spec changed by `--set KEY=VALUE`, against the current one.

`changed_platform(raw, settings)` applies each `KEY=VALUE` (the value read as YAML) to a copy of the `platform`
object, never the stack file, and derives it; a refused change is one line per `--set` naming its key.
`scenario_rows` runs a list of jobs on a platform under the knobs of `simulate` (worst over the orders);
`comparison` lists the figures of both platforms that `simulate --set` shows side by side.
"""

from __future__ import annotations

import copy
import difflib
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

import yaml

from infra.config.errors import CONFIG_ROOT, SpecError, format_value, not_plain_data
from infra.documents import Budget, DocumentError, check_yaml_events, safe_load
from infra.model.platform import Platform, load_platform
from infra.render.text import format_eur
from infra.sim.bound import bound_makespan
from infra.sim.engine import simulate
from infra.sim.platform_scenario import PlannedJob, scenario
from infra.sim.scenario import Scenario, Upgrade
from infra.sim.week import CostReport, class_waits
from infra.untrusted import printable

Layout = Literal["per-pool", "single"]
"""The runners simulated: one per pool, or the single runner of before."""


@dataclass(frozen=True)
class Knobs:
    """What `simulate` varies: another cold start, slower jobs, random orders, a manager upgrade."""

    cold_start: Fraction | None = None
    slower: Fraction = Fraction(1)
    orders: int = 0
    upgrade_at: Fraction | None = None
    stockouts: Mapping[str, tuple[tuple[Fraction, Fraction], ...]] = field(default_factory=dict)
    """Per pool, [start, end) minutes in which its scale-ups fail."""
    late_boot: Fraction = Fraction(0)
    """Every boot this much later than drawn."""


@dataclass(frozen=True)
class Row:
    """One scenario's figures, worst over its orders."""

    name: str
    failed: int
    makespan: Fraction
    bound: Fraction
    longest_wait: Fraction | None
    eur: Fraction
    merge_request_p95: Fraction | None = None
    batch_p95: Fraction | None = None
    """The p95 wait of each class (the worst order's)."""
    failed_by_reason: Mapping[str, int] = field(default_factory=dict)
    retried: int = 0


def scenario_rows(platform: Platform, jobs: list[PlannedJob], knobs: Knobs, *, single_runner: bool) -> list[Row]:
    """The per-pool runners, and the former single runner when asked."""
    rows = [scenario_row("per-pool runners", platform, jobs, knobs, "per-pool")]
    if single_runner:
        rows.append(scenario_row("single runner (before)", platform, jobs, knobs, "single"))
    return rows


def scenario_row(name: str, platform: Platform, jobs: list[PlannedJob], knobs: Knobs, layout: Layout) -> Row:
    """The jobs in their order and in `knobs.orders` seeded random orders of each burst (GitLab's ids among jobs
    queued together); the worst run (most failed, then longest) against the bound the slots allow."""
    orders = [jobs, *(shuffled_bursts(jobs, random.Random(seed)) for seed in range(knobs.orders))]

    def built(order: list[PlannedJob], upgrades: tuple[Upgrade, ...] = ()) -> Scenario:
        return scenario(
            platform,
            order,
            layout=layout,
            slower=knobs.slower,
            cold_start_minutes=knobs.cold_start,
            upgrades=upgrades,
            stockouts=knobs.stockouts,
            late_boot=knobs.late_boot,
        )

    bound = bound_makespan(built(jobs))  # per pool, from its jobs however ordered, without upgrades
    upgrades = (Upgrade(knobs.upgrade_at),) if knobs.upgrade_at is not None else ()
    runs = [(order, simulate(built(order, upgrades))) for order in orders]
    order, worst = max(runs, key=lambda run: (len(run[1].failed), run[1].makespan))
    waits = {c.job_class: c.p95 for c in class_waits(order, worst)}
    return Row(
        name,
        len(worst.failed),
        worst.makespan,
        bound,
        worst.longest_wait,
        worst.eur,
        merge_request_p95=waits["merge_request"],
        batch_p95=waits["batch"],
        failed_by_reason=dict(worst.failed_by_reason),
        retried=sum(worst.retried_by_reason.values()),
    )


def shuffled_bursts(jobs: list[PlannedJob], generator: random.Random) -> list[PlannedJob]:
    """The jobs with each burst's (the jobs queued at one minute) in a random order, the bursts in theirs."""
    bursts: dict[Fraction, list[PlannedJob]] = {}
    for job in jobs:
        bursts.setdefault(job.created_minute, []).append(job)
    order = []
    for burst in bursts.values():
        generator.shuffle(burst)
        order += burst
    return order


Figure = tuple[str, Any, Any, Callable[[Any], str]]
"""(label, current, changed, how to show a value): one line of the side-by-side table."""


def comparison(
    current: tuple[Platform, list[Row], CostReport | None], changed: tuple[Platform, list[Row], CostReport | None]
) -> list[Figure]:
    """The figures of the current spec and of the changed one: each scenario's, the plan's day, the job slots."""
    (platform, rows, old_day), (new_platform, new_rows, new_day) = current, changed
    figures: list[Figure] = []
    for row, new in zip(rows, new_rows, strict=True):
        figures += [
            (f"{row.name}: failed jobs", row.failed, new.failed, str),
            (f"{row.name}: merge-request wait p95 (min)", row.merge_request_p95, new.merge_request_p95, _min),
            (f"{row.name}: batch wait p95 (min)", row.batch_p95, new.batch_p95, _min),
            (f"{row.name}: makespan (min)", row.makespan, new.makespan, _min),
            (f"{row.name}: makespan bound (min)", row.bound, new.bound, _min),
            (f"{row.name}: longest wait (min)", row.longest_wait, new.longest_wait, _min),
            (f"{row.name}: GPU EUR", row.eur, new.eur, format_eur),
        ]
    figures += [
        ("plan: EUR/day", _get(old_day, "eur_per_day"), _get(new_day, "eur_per_day"), format_eur),
        ("plan: largest burst (min)", _get(old_day, "makespan_minutes"), _get(new_day, "makespan_minutes"), _min),
        ("plan: failed jobs", _get(old_day, "failed_jobs"), _get(new_day, "failed_jobs"), str),
        (
            "plan: merge-request wait p95 (min)",
            _get(old_day, "merge_request_p95"),
            _get(new_day, "merge_request_p95"),
            _min,
        ),
        ("plan: EUR/week", _get(old_day, "eur_per_week"), _get(new_day, "eur_per_week"), format_eur),
    ]
    for pool in sorted(platform.pools.keys() | new_platform.pools.keys()):
        before, after = _slots(platform, pool), _slots(new_platform, pool)
        if before or after:
            figures.append((f"{pool} slots", before, after, str))
    return figures


def _get(report: object, name: str) -> Any:
    return None if report is None else getattr(report, name)


def _slots(platform: Platform, pool: str) -> int | None:
    found = platform.pools.get(pool)
    return None if found is None else found.slots


def _min(value: Fraction) -> str:
    return f"{float(value):.1f}"


# `--set KEY=VALUE`: the changed spec.

_MISSING: Any = object()


@dataclass(frozen=True)
class Setting:
    """One `--set`: the key path under `platform`, the value it gets, the value it had (or `_MISSING`)."""

    text: str
    path: tuple[str, ...]
    value: object
    before: object
    new_entry: tuple[str, ...] | None
    """The first step of `path` the spec did not have (a new map entry, or a typo), with its siblings' parent."""

    @property
    def key(self) -> str:
        return ".".join((CONFIG_ROOT, *self.path))

    def describe(self) -> str:
        """`platform.<key> <before> -> <after>`, as one printable line, credentials redacted."""
        before = "unset" if self.before is _MISSING else format_value(self.before)
        return printable(f"{self.key} {before} -> {format_value(self.value)}", None)


MAX_SET_PARTS = 16
"""Parts of one `--set` key (the spec's deepest key has 7): 2,000 parts would nest the spec past Python's recursion."""
MAX_SET_VALUE = 10_000
"""Characters of one `--set` value (a whole `warm:` list fits in a few hundred)."""
SET_VALUE = Budget(max_bytes=MAX_SET_VALUE, max_nodes=2_000, max_depth=16, kind="a --set value")
"""What one `--set` value may expand to: a recursive alias (`&a [*a]`) or 5,000 nested `[` is refused here, before
PyYAML builds it (a recursive value hangs the deep copy, deep nesting ends in a RecursionError)."""


def apply_settings(raw: object, settings: list[str]) -> tuple[dict[str, Any], list[Setting]]:
    """A copy of the `platform` object with each `KEY=VALUE` applied; ValueError (one line) on a bad one."""
    if not isinstance(raw, dict):
        raise ValueError(f"{CONFIG_ROOT}: the stack has no platform object to change")
    changed = copy.deepcopy(raw)
    applied = []
    for text in settings:
        key, sep, value_text = text.partition("=")
        path = tuple(key.strip().removeprefix(f"{CONFIG_ROOT}.").split("."))
        shown = printable(text, 120)
        if not sep or not all(path):
            raise ValueError(
                f"--set {shown}: expected KEY=VALUE, KEY a dotted path under {CONFIG_ROOT} (pools.NAME.max_size=2)"
            )
        if len(path) > MAX_SET_PARTS:
            raise ValueError(
                f"--set {shown}: a key of {len(path)} parts (at most {MAX_SET_PARTS}: no key of the spec is deeper)"
            )
        if len(value_text) > MAX_SET_VALUE:
            raise ValueError(f"--set {shown}: the value is {len(value_text)} characters long (at most {MAX_SET_VALUE})")
        shown_value = repr(value_text) if len(value_text) <= 60 else f"{value_text[:59]!r}…"  # repr escapes controls
        try:
            check_yaml_events(value_text, "--set", SET_VALUE)  # recursive aliases, depth: before PyYAML builds it
            value = safe_load(value_text)
        except DocumentError as err:
            why = str(err).split(": ", 1)[-1].removeprefix("not valid YAML: ")
            raise ValueError(f"--set {shown}: {shown_value} is not a YAML value ({why})") from None
        except yaml.YAMLError as err:
            raise ValueError(f"--set {shown}: {shown_value} is not a YAML value ({str(err).splitlines()[0]})") from None
        if what := not_plain_data(value):
            raise ValueError(
                f"--set {printable(key, 120)}=…: the value is {what}, which no setting takes: write it as text"
            )
        node: dict[str, Any] = changed
        new_entry = None
        for index, step in enumerate(path[:-1]):
            child = node.get(step, _MISSING)
            if child is _MISSING:
                new_entry = new_entry or path[: index + 1]
                child = node[step] = {}
            elif not isinstance(child, dict):
                where = ".".join((CONFIG_ROOT, *path[: index + 1]))
                raise ValueError(f"--set {shown}: {where}={format_value(child)} is a value, not a section")
            node = child
        before = node.get(path[-1], _MISSING)
        if before is _MISSING and new_entry is None:
            new_entry = path
        node[path[-1]] = value
        applied.append(Setting(text, path, value, before, new_entry))
    return changed, applied


def changed_platform(raw: object, settings: list[str]) -> tuple[Platform, list[Setting]]:
    """The platform of the changed spec; SpecError with one line per refused `--set`, naming its key."""
    changed, applied = apply_settings(raw, settings)
    try:
        return load_platform(changed), applied
    except SpecError as err:
        raise ValueError("\n".join(_refusals(err, applied, raw))) from None


def _refusals(err: SpecError, applied: list[Setting], raw: Any) -> list[str]:
    """The spec's first problem about each `--set` (or its first problem, when the change broke another key)."""
    lines = []
    for setting in applied:
        new = setting.new_entry if setting.new_entry not in (None, setting.path) else None
        keys = [setting.key] + ([".".join((CONFIG_ROOT, *new))] if new else [])
        related = [p for p in err.problems if any(_related(p.path, key) for key in keys)]
        if not related:
            continue
        if new:
            lines.append(f"--set {setting.text}: {_no_entry(new, raw)} (as a new entry: {related[0]})")
        else:
            lines.append(f"--set {setting.text}: {related[0]}")
    if not lines:
        texts = ", ".join(setting.text for setting in applied)
        lines.append(f"--set {texts}: the changed spec is refused: {err.problems[0]}")
    return lines


def _related(problem_path: str, key: str) -> bool:
    """A problem at the key, inside it, or at a section holding it."""
    return any(a == b or a.startswith(b + ".") for a, b in ((problem_path, key), (key, problem_path)))


def _no_entry(entry: tuple[str, ...], raw: Any) -> str:
    """`platform.pools has no 'ci-trainin'; did you mean 'ci-training'?`: a typo looks like a new entry."""
    parent: Any = raw
    for step in entry[:-1]:
        parent = parent.get(step) if isinstance(parent, dict) else None
    where = ".".join((CONFIG_ROOT, *entry[:-1]))
    close = difflib.get_close_matches(entry[-1], [str(k) for k in parent], n=1) if isinstance(parent, dict) else []
    return f"{where} has no {entry[-1]!r}" + (f"; did you mean {close[0]!r}?" if close else "")
