"""`python -m infra simulate`: dispatch a pipeline or a day of jobs on the stack's platform, scenario by scenario.

The jobs are one burst of the stack's workload (a pipeline), the whole day (`--day`), or the training jobs of
a repository's `.gitlab-ci.yml` (`--pipeline FILE`: each job extending a profile's template, run as long as
the profile's `workload.profiles.<name>.minutes_per_job`). Each scenario prints the failed jobs, the makespan
against the bound the slots set, the longest wait before a job runs, and the GPU EUR:
- `--cold-start MIN`: every GPU pool takes this long from zero;
- `--slower 1.1`: jobs 10 % longer than estimated;
- `--orders N`: N seeded random job orders besides the given one (worst case shown);
- `--upgrade-at MIN`: every runner's manager is upgraded at that minute;
- `--single-runner`: the layout before one runner per pool, for comparison;
- `--set KEY=VALUE` (repeatable): what-if. The same scenarios on the spec changed at `platform.KEY` (the value
  read as YAML: `2`, `true`, `30m`), without editing the stack file, side by side with the current spec
  (current / changed / change), with the figures the plan and the MR note's cost delta show (EUR per day,
  the largest burst, failed jobs of the day as configured) and the job slots per pool.
Exit 0 when no job fails in any scenario (of the changed spec, with `--set`), 1 when some do, 2 when the
stack, the file or a `--set` is unusable (one `error:` line naming the key).
"""

from __future__ import annotations

import argparse
import copy
import difflib
import random
import sys
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import yaml

from infra.cli import fail
from infra.config.errors import CONFIG_ROOT, SpecError, format_value
from infra.dispatch import PlannedJob, scenario, workload_jobs
from infra.model import Platform, load_platform
from infra.offline.stack_config import load_stack_config
from infra.render.text import format_eur, render_table
from infra.simulate import Scenario, Upgrade, bound_makespan, simulate

Layout = Literal["per-pool", "single"]
"""The runners simulated: one per pool, or the single runner of before."""
MAX_ORDERS = 200


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("simulate", help="simulate the dispatch of a pipeline or a day on the platform")
    parser.add_argument("--stack", default="dev", help="stack whose Pulumi.<stack>.yaml holds the spec (default: dev)")
    parser.add_argument("--config", type=Path, help="use this stack file instead of Pulumi.<stack>.yaml")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--day", action="store_true", help="the whole day of the workload, not one burst")
    source.add_argument("--pipeline", type=Path, metavar="FILE", help="a training repository's .gitlab-ci.yml")
    parser.add_argument("--cold-start", type=Fraction, metavar="MIN", help="cold start of every GPU pool")
    parser.add_argument("--slower", type=Fraction, default=Fraction(1), help="jobs this many times longer")
    parser.add_argument("--orders", type=int, default=0, metavar="N", help="also N seeded random job orders")
    parser.add_argument("--upgrade-at", type=Fraction, metavar="MIN", help="upgrade every manager at this minute")
    parser.add_argument("--single-runner", action="store_true", help="also the former single-runner layout")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        dest="settings",
        metavar="KEY=VALUE",
        help="what-if: also simulate the spec with platform.KEY set to VALUE (YAML), side by side; repeatable",
    )
    parser.set_defaults(handler=main)


@dataclass(frozen=True)
class Row:
    """One scenario's figures, worst over its orders."""

    name: str
    failed: int
    makespan: Fraction
    bound: Fraction
    longest_wait: Fraction | None
    eur: Fraction


def main(args: argparse.Namespace) -> int:
    try:
        raw = load_stack_config(args.stack, path=args.config).get("platform")
        platform = load_platform(raw)
        jobs = _jobs(platform, args)
        _check_knobs(args)
        changed = changed_platform(raw, args.settings) if args.settings else None
        changed_jobs = _jobs(changed[0], args) if changed else []
    except (FileNotFoundError, SpecError, ValueError) as err:
        return fail(str(err))
    if not jobs or (changed and not changed_jobs):
        which = "the stack" if not jobs else "the changed spec"
        print(
            f"error: no job to simulate (no workload in {which}, or no training job in the pipeline)", file=sys.stderr
        )
        return 2
    rows = _rows(platform, jobs, args)
    if changed is None:
        sys.stdout.write(render_rows(platform, jobs, args, rows))
        return 1 if any(row.failed for row in rows) else 0
    new_platform, settings = changed
    new_rows = _rows(new_platform, changed_jobs, args)
    sys.stdout.write(render_rows(platform, jobs, args, rows, table=False))
    if _job_counts(new_platform, changed_jobs) != _job_counts(platform, jobs):
        sys.stdout.write(f"Changed spec: {_jobs_text(new_platform, changed_jobs)}\n")
    sys.stdout.write(render_what_if(settings, (platform, rows), (new_platform, new_rows)))
    for warning in new_platform.warnings:
        if warning not in platform.warnings:
            sys.stdout.write(f"warning (changed spec): {warning}\n")
    return 1 if any(row.failed for row in new_rows) else 0


def _rows(platform: Platform, jobs: list[PlannedJob], args: argparse.Namespace) -> list[Row]:
    rows = [_row("per-pool runners", platform, jobs, args, "per-pool")]
    if args.single_runner:
        rows.append(_row("single runner (before)", platform, jobs, args, "single"))
    return rows


def _check_knobs(args: argparse.Namespace) -> None:
    if not 0 <= args.orders <= MAX_ORDERS:
        raise ValueError(f"--orders={args.orders}: must be 0-{MAX_ORDERS}")
    if not 0 < args.slower <= 10:
        raise ValueError(f"--slower={args.slower}: must be above 0 and at most 10")
    for flag, value in (("--cold-start", args.cold_start), ("--upgrade-at", args.upgrade_at)):
        if value is not None and not 0 <= value <= 24 * 60:
            raise ValueError(f"{flag}={value}: must be 0-1440 minutes")


def _jobs(platform: Platform, args: argparse.Namespace) -> list[PlannedJob]:
    if args.pipeline is not None:
        from infra.pipeline_jobs import pipeline_jobs  # noqa: PLC0415 - reads YAML only when asked

        return pipeline_jobs(platform, args.pipeline)
    jobs = workload_jobs(platform)
    if args.day or not jobs:
        return jobs
    first = min(job.created_minute for job in jobs)
    return [job for job in jobs if job.created_minute == first]


def _row(name: str, platform: Platform, jobs: list[PlannedJob], args: argparse.Namespace, layout: Layout) -> Row:
    orders = [jobs]
    generator = random.Random(0)
    for _ in range(args.orders):
        shuffled = list(jobs)
        generator.shuffle(shuffled)
        orders.append(shuffled)

    def built(order: list[PlannedJob], upgrades: tuple[Upgrade, ...] = ()) -> Scenario:
        return scenario(
            platform, order, layout=layout, slower=args.slower, cold_start_minutes=args.cold_start, upgrades=upgrades
        )

    bound = bound_makespan(built(jobs))  # per pool, from its jobs however ordered, without upgrades
    upgrades = (Upgrade(args.upgrade_at),) if args.upgrade_at is not None else ()
    results = [simulate(built(order, upgrades)) for order in orders]
    worst = max(results, key=lambda result: (len(result.failed), result.makespan))
    return Row(name, len(worst.failed), worst.makespan, bound, worst.longest_wait, worst.eur)


def render_rows(
    platform: Platform, jobs: list[PlannedJob], args: argparse.Namespace, rows: list[Row], table: bool = True
) -> str:
    """The scenarios side by side: what was simulated, then one line each (`table`)."""
    knobs = [
        f"cold start {args.cold_start} min" if args.cold_start is not None else "cold start as configured",
        f"jobs x{float(args.slower):g}",
        f"manager upgrade at minute {args.upgrade_at}" if args.upgrade_at is not None else "no upgrade",
        f"{1 + args.orders} order(s), worst shown",
    ]
    header = ("scenario", "failed", "makespan (min)", "bound (min)", "longest wait (min)", "GPU EUR")
    body = [
        (
            row.name,
            str(row.failed),
            f"{float(row.makespan):.1f}",
            f"{float(row.bound):.1f}",
            "-" if row.longest_wait is None else f"{float(row.longest_wait):.1f}",
            format_eur(row.eur),
        )
        for row in rows
    ]
    heading = f"Simulated {_jobs_text(platform, jobs)} on stack {args.stack!r}: {'; '.join(knobs)}\n"
    return heading + render_table(header, body) if table else heading


def _job_counts(platform: Platform, jobs: list[PlannedJob]) -> dict[str, int]:
    return {name: n for name in platform.profiles if (n := sum(1 for j in jobs if j.profile == name))}


def _jobs_text(platform: Platform, jobs: list[PlannedJob]) -> str:
    """`12 jobs (4 rl, 8 supervised)`."""
    counts = ", ".join(f"{n} {name}" for name, n in _job_counts(platform, jobs).items())
    return f"{len(jobs)} jobs ({counts})"


# What-if: `--set KEY=VALUE`.

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
        before = "unset" if self.before is _MISSING else format_value(self.before)
        return f"{self.key} {before} -> {format_value(self.value)}"


def apply_settings(raw: object, settings: list[str]) -> tuple[dict[str, Any], list[Setting]]:
    """A copy of the `platform` object with each `KEY=VALUE` applied; ValueError (one line) on a bad one."""
    if not isinstance(raw, dict):
        raise ValueError(f"{CONFIG_ROOT}: the stack has no platform object to change")
    changed = copy.deepcopy(raw)
    applied = []
    for text in settings:
        key, sep, value_text = text.partition("=")
        path = tuple(key.strip().removeprefix(f"{CONFIG_ROOT}.").split("."))
        if not sep or not all(path):
            raise ValueError(
                f"--set {text}: expected KEY=VALUE, KEY a dotted path under {CONFIG_ROOT} (pools.NAME.max_size=2)"
            )
        try:
            value = yaml.safe_load(value_text)
        except yaml.YAMLError as err:
            raise ValueError(f"--set {text}: {value_text!r} is not a YAML value ({str(err).splitlines()[0]})") from None
        node: dict[str, Any] = changed
        new_entry = None
        for index, step in enumerate(path[:-1]):
            child = node.get(step, _MISSING)
            if child is _MISSING:
                new_entry = new_entry or path[: index + 1]
                child = node[step] = {}
            elif not isinstance(child, dict):
                where = ".".join((CONFIG_ROOT, *path[: index + 1]))
                raise ValueError(f"--set {text}: {where}={format_value(child)} is a value, not a section")
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


def render_what_if(
    settings: list[Setting], current: tuple[Platform, list[Row]], changed: tuple[Platform, list[Row]]
) -> str:
    """The figures of the current spec and of the changed one, side by side, with the change."""
    (platform, rows), (new_platform, new_rows) = current, changed
    body: list[tuple[str, str, str, str]] = []
    for row, new in zip(rows, new_rows, strict=True):
        body += [
            (f"{row.name}: failed jobs", *_compare(row.failed, new.failed, str)),
            (f"{row.name}: makespan (min)", *_compare(row.makespan, new.makespan, _min)),
            (f"{row.name}: bound (min)", *_compare(row.bound, new.bound, _min)),
            (f"{row.name}: longest wait (min)", *_compare(row.longest_wait, new.longest_wait, _min)),
            (f"{row.name}: GPU EUR", *_compare(row.eur, new.eur, format_eur)),
        ]
    old_day, new_day = platform.cost, new_platform.cost
    body += [
        ("plan: EUR/day", *_compare(_get(old_day, "eur_per_day"), _get(new_day, "eur_per_day"), format_eur)),
        (
            "plan: largest burst (min)",
            *_compare(_get(old_day, "makespan_minutes"), _get(new_day, "makespan_minutes"), _min),
        ),
        ("plan: failed jobs", *_compare(_get(old_day, "failed_jobs"), _get(new_day, "failed_jobs"), str)),
    ]
    for pool in sorted(platform.pools.keys() | new_platform.pools.keys()):
        before, after = _slots(platform, pool), _slots(new_platform, pool)
        if before or after:
            body.append((f"{pool} slots", *_compare(before, after, str)))
    header = ("figure", "current", "changed", "change")
    return (
        "Changed: "
        + "; ".join(setting.describe() for setting in settings)
        + "\n"
        + render_table(header, body)
        + "plan: the day of platform.workload as configured: what `plan` and the MR note's cost delta show.\n"
    )


def _get(report: object, name: str) -> Any:
    return None if report is None else getattr(report, name)


def _slots(platform: Platform, pool: str) -> int | None:
    found = platform.pools.get(pool)
    return None if found is None else found.slots


def _min(value: Fraction) -> str:
    return f"{float(value):.1f}"


def _compare(before: Any, after: Any, show: Any) -> tuple[str, str, str]:
    """(current, changed, change): `-` for a figure one side lacks, `=` when equal, else the signed change."""
    shown = ("-" if before is None else show(before), "-" if after is None else show(after))
    if before is None or after is None:
        return (*shown, "")
    if before == after:
        return (*shown, "=")
    delta = after - before
    text = show(abs(delta))
    return (*shown, ("+" if delta > 0 else "-") + text)
