"""`python -m infra simulate`: dispatch a pipeline or a day of jobs on the stack's platform, scenario by scenario.

The jobs are one burst of the stack's workload (a pipeline), the whole day (`--day`), or the training jobs of
a repository's `.gitlab-ci.yml` (`--pipeline FILE`: each job extending a profile's template, run as long as
the profile's `workload.profiles.<name>.minutes_per_job`). Each scenario prints the failed jobs, the makespan
against its bound (the shortest any dispatch that runs every job reaches), the longest wait before a job runs, and
the GPU EUR:
- `--cold-start MIN`: every GPU pool takes this long from zero;
- `--slower 1.1`: jobs 10 % longer than estimated;
- `--orders N`: N seeded random job orders besides the given one (worst case shown);
- `--weeks N` (with `--week`): also N independent weeks (arrivals, run times and boots drawn for each, the same
  weeks for every spec), per class the p95 over all their jobs, the spread of the weekly p95s and in how many
  weeks the target is met (`infra.sim.weeks`); `--late-boot MIN`: every boot that much later than drawn;
- `--upgrade-at MIN`: every runner's manager is upgraded at that minute;
- `--single-runner`: the layout before one runner per pool, for comparison;
- `--timeline`: also print the busiest burst of the week (as `plan` simulates it, whatever the knobs: the MR
  note's chart) as a terminal timeline, of the current spec and, with `--set`, of the changed one;
  `--timeline-out FILE.svg` writes it as an SVG picture (the changed spec's with `--set`);
- `--set KEY=VALUE` (repeatable): what-if. The same scenarios on the spec changed at `platform.KEY` (the value
  read as YAML: `2`, `true`, `30m`), without editing the stack file, side by side with the current spec
  (current / changed / change), with the figures the plan and the MR note's cost delta show (EUR per day,
  the largest burst, failed jobs of the day as configured) and the job slots per pool.
Exit 0 when no job fails in any scenario (of the changed spec, with `--set`), 1 when some do, 2 when the
stack, the file or a `--set` is unusable (one `error:` line naming the key).
"""

from __future__ import annotations

import argparse
import re
import sys
from fractions import Fraction
from pathlib import Path

from infra.cli import fail, fail_spec, shown_path, write_file
from infra.config.errors import SpecError
from infra.config.schedule import MINUTES_PER_DAY
from infra.config.slo import MAX_WEEKS
from infra.model.platform import Platform, load_platform
from infra.offline.stack_config import load_stack_config
from infra.render.change import compare
from infra.render.text import format_eur, render_table
from infra.sim.arrivals import week_jobs
from infra.sim.platform_scenario import PlannedJob
from infra.sim.scenario import MAX_JOBS, MAX_MINUTES, MAX_WINDOWS
from infra.sim.week import CostReport, simulate_week
from infra.sim.what_if import Knobs, Row, Setting, changed_platform, comparison, scenario_rows
from infra.untrusted import printable

MAX_ORDERS = 200
MAX_SIMULATED_JOBS = 50_000
"""Jobs simulated by one command, over every order, layout and spec (the dev day with 200 orders and the single
runner: ~15,000, 4 s on the build machine): a stated budget, so that no combination of flags runs for minutes."""
_NUMBER = re.compile(r"(?P<int>[0-9]{1,12})(?:\.(?P<frac>[0-9]{1,9})|/(?P<den>[0-9]{1,9}))?")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("simulate", help="simulate the dispatch of a pipeline or a day on the platform")
    parser.add_argument("--stack", default="dev", help="stack whose Pulumi.<stack>.yaml holds the spec (default: dev)")
    parser.add_argument("--config", type=Path, help="use this stack file instead of Pulumi.<stack>.yaml")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--day", action="store_true", help="the first day of the workload's week, not one burst")
    source.add_argument("--week", action="store_true", help="the whole week of the workload")
    source.add_argument("--pipeline", type=Path, metavar="FILE", help="a training repository's .gitlab-ci.yml")
    parser.add_argument("--cold-start", metavar="MIN", help="cold start of every GPU pool")
    parser.add_argument("--slower", default="1", help="jobs this many times longer (1.1, or 11/10)")
    parser.add_argument("--orders", type=int, default=0, metavar="N", help="also N seeded random job orders")
    parser.add_argument(
        "--weeks",
        type=int,
        metavar="N",
        help=f"with --week: also N independent weeks, the target's verdict over them (1-{MAX_WEEKS})",
    )
    parser.add_argument("--late-boot", metavar="MIN", help="every node boots this much later than drawn")
    parser.add_argument("--upgrade-at", metavar="MIN", help="upgrade every manager at this minute")
    parser.add_argument("--single-runner", action="store_true", help="also the former single-runner layout")
    parser.add_argument(
        "--stockout",
        action="append",
        default=[],
        metavar="POOL:A-B",
        help="the pool's scale-ups fail from minute A to minute B (nodes come after B); repeatable",
    )
    parser.add_argument("--timeline", action="store_true", help="also print the week's busiest burst as a timeline")
    parser.add_argument("--timeline-out", type=Path, metavar="FILE.svg", help="write the busiest burst as an SVG")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        dest="settings",
        metavar="KEY=VALUE",
        help="what-if: also simulate the spec with platform.KEY set to VALUE (YAML), side by side; repeatable",
    )
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    try:
        raw = load_stack_config(args.stack, path=args.config).get("platform")
        platform = load_platform(raw)
        knobs = _knobs(args)
        jobs = _jobs(platform, args)
        changed = changed_platform(raw, args.settings) if args.settings else None
        changed_jobs = _jobs(changed[0], args) if changed else []
        _check_budget(platform, knobs, args, jobs, changed_jobs)
    except SpecError as err:
        return fail_spec(err, args.stack, args.config)
    except (FileNotFoundError, ValueError) as err:
        return fail(str(err))
    if not jobs or (changed and not changed_jobs):
        which = "the stack" if not jobs else "the changed spec"
        print(
            f"error: no job to simulate (no workload in {which}, or no training job in the pipeline)", file=sys.stderr
        )
        return 2
    if args.timeline_out is not None and args.timeline_out.suffix.lower() != ".svg":
        return fail(f"--timeline-out {shown_path(args.timeline_out)}: must name an .svg file")
    rows = scenario_rows(platform, jobs, knobs, single_runner=args.single_runner)
    if changed is None:
        sys.stdout.write(render_rows(platform, jobs, args.stack, knobs, rows))
        failed = _weeks(args, knobs, [("current spec", platform)])
        if code := _timelines(args, [("current spec", platform)]):
            return code
        return 1 if failed or any(row.failed for row in rows) else 0
    new_platform, settings = changed
    new_rows = scenario_rows(new_platform, changed_jobs, knobs, single_runner=args.single_runner)
    sys.stdout.write(render_rows(platform, jobs, args.stack, knobs, rows, table=False))
    if _job_counts(new_platform, changed_jobs) != _job_counts(platform, jobs):
        sys.stdout.write(f"Changed spec: {_jobs_text(new_platform, changed_jobs)}\n")
    current = (platform, rows, simulate_week(platform))
    sys.stdout.write(render_what_if(settings, current, (new_platform, new_rows, simulate_week(new_platform))))
    for warning in new_platform.warnings:
        if warning not in platform.warnings:
            sys.stdout.write(f"warning (changed spec): {warning}\n")
    failed = _weeks(args, knobs, [("current spec", platform), ("changed spec", new_platform)])
    if code := _timelines(args, [("current spec", platform), ("changed spec", new_platform)]):
        return code
    return 1 if failed or any(row.failed for row in new_rows) else 0


def _weeks(args: argparse.Namespace, knobs: Knobs, platforms: list[tuple[str, Platform]]) -> bool:
    """`--weeks N`: each spec's N weeks under the knobs, as a table; True when the last spec lost a job."""
    if args.weeks is None:
        return False
    from infra.render.weeks import render_weeks  # noqa: PLC0415 - only with the flag
    from infra.sim.weeks import simulate_weeks  # noqa: PLC0415

    lost = False
    for name, platform in platforms:
        report = simulate_weeks(
            platform, args.weeks, slower=knobs.slower, late_boot=knobs.late_boot, cold_start_minutes=knobs.cold_start
        )
        if report is not None:
            sys.stdout.write(f"\n{name}: " + render_weeks(report))
            lost = any(report.failed_by_week)
    return lost


def _timelines(args: argparse.Namespace, platforms: list[tuple[str, Platform]]) -> int:
    """`--timeline` and `--timeline-out`: the busiest burst of each spec's week (the last one's as SVG); 2 when
    the file cannot be written."""
    if not args.timeline and args.timeline_out is None:
        return 0
    from infra.render.svg import render_svg  # noqa: PLC0415 - only with the flags
    from infra.render.timeline import render_timeline  # noqa: PLC0415

    bursts = []
    for name, platform in platforms:
        week = simulate_week(platform)
        if week is not None and week.burst is not None:
            bursts.append((f"Busiest burst of the week, {name} (stack {args.stack!r})", week.burst))
    if not bursts:
        return fail("--timeline: no workload week to draw (platform.workload is not set)")
    if args.timeline:
        sys.stdout.write("".join("\n" + render_timeline(burst, title) for title, burst in bursts))
    if args.timeline_out is not None:
        title, burst = bursts[-1]
        try:
            write_file(args.timeline_out, render_svg(burst, title))
        except OSError as err:
            return fail(f"--timeline-out {shown_path(args.timeline_out)}: cannot be written ({err.strerror or err})")
        print(f"simulate: wrote the busiest burst to {shown_path(args.timeline_out, 1_000)}", file=sys.stderr)
    return 0


def _knobs(args: argparse.Namespace) -> Knobs:
    """The flags as numbers, each refused in one line naming it."""
    if not 0 <= args.orders <= MAX_ORDERS:
        raise ValueError(f"--orders={args.orders}: must be 0-{MAX_ORDERS}")
    slower = _number("--slower", args.slower)
    assert slower is not None
    if not 0 < slower <= 10:
        raise ValueError(f"--slower={args.slower}: must be above 0 and at most 10")
    cold_start, upgrade_at = _number("--cold-start", args.cold_start), _number("--upgrade-at", args.upgrade_at)
    late_boot = _number("--late-boot", args.late_boot)
    for flag, value in (("--cold-start", cold_start), ("--upgrade-at", upgrade_at), ("--late-boot", late_boot)):
        if value is not None and not 0 <= value <= 24 * 60:
            raise ValueError(f"{flag}={value}: must be 0-1440 minutes")
    if args.weeks is not None and not 1 <= args.weeks <= MAX_WEEKS:
        raise ValueError(f"--weeks={args.weeks}: must be 1-{MAX_WEEKS}")
    if args.weeks is not None and not args.week:
        raise ValueError(f"--weeks={args.weeks}: needs --week (the weeks are whole weeks): add --week")
    stockouts: dict[str, tuple[tuple[Fraction, Fraction], ...]] = {}
    for text in args.stockout:
        pool, window = _stockout(text)
        stockouts[pool] = (*stockouts.get(pool, ()), window)
    return Knobs(
        cold_start=cold_start,
        slower=slower,
        orders=args.orders,
        upgrade_at=upgrade_at,
        stockouts=stockouts,
        late_boot=late_boot or Fraction(0),
    )


def _stockout(text: str) -> tuple[str, tuple[Fraction, Fraction]]:
    """`ci-training:0-90` -> (pool, (0, 90)); ValueError naming the flag for anything else."""
    pool, _, window = text.partition(":")
    start_text, dash, end_text = window.partition("-")
    shown = text if len(text) <= 60 else text[:59] + "…"
    if not pool or not dash:
        raise ValueError(f"--stockout={shown!r}: expected POOL:A-B, minutes from the start (ci-training:0-90)")
    start, end = _number("--stockout", start_text), _number("--stockout", end_text)
    assert start is not None and end is not None
    if not start < end <= MAX_MINUTES:
        raise ValueError(f"--stockout={shown!r}: the window must end after it starts, within {MAX_MINUTES} minutes")
    return pool, (start, end)


def _number(flag: str, text: str | None) -> Fraction | None:
    """`1.1`, `11/10` or `15` as an exact number; ValueError naming the flag for anything else (`1/0`, `1e999`)."""
    if text is None:
        return None
    match = _NUMBER.fullmatch(text.strip())
    if match is None or (match["den"] is not None and int(match["den"]) == 0):
        shown = text if len(text) <= 40 else text[:39] + "…"
        raise ValueError(
            f"{flag}={shown!r}: not a number like 1.1 or 15 (a decimal, or a fraction like 11/10 whose "
            "denominator is not 0)"
        )
    if match["den"] is not None:
        return Fraction(int(match["int"]), int(match["den"]))
    return Fraction(f"{match['int']}.{match['frac'] or 0}")


def _check_budget(
    platform: Platform, knobs: Knobs, args: argparse.Namespace, jobs: list[PlannedJob], changed: list[PlannedJob]
) -> None:
    """Each scenario within the engine's caps (naming the file), the whole command within MAX_SIMULATED_JOBS."""
    source = f"--pipeline {args.pipeline}" if args.pipeline is not None else "the workload"
    simulated = {pool.name for pool in platform.pools.values() if pool.runner}
    for pool, windows in knobs.stockouts.items():
        if pool not in simulated:
            raise ValueError(
                f"--stockout {printable(pool, 60)}: not a GPU pool of the platform ({', '.join(sorted(simulated))})"
            )
        if len(windows) > MAX_WINDOWS:
            raise ValueError(f"--stockout {pool}: {len(windows)} windows, the simulation takes at most {MAX_WINDOWS}")
    for what, count in (("", len(jobs)), ("the changed spec: ", len(changed))):
        if count > MAX_JOBS:
            raise ValueError(f"{what}{source}: {count} jobs to simulate, the simulation takes at most {MAX_JOBS}")
    runs = (1 + knobs.orders) * (2 if args.single_runner else 1) + (args.weeks or 0)
    total = runs * (len(jobs) + len(changed))
    if total > MAX_SIMULATED_JOBS:
        raise ValueError(
            f"--orders={knobs.orders}{' --single-runner' if args.single_runner else ''}: {runs} run(s) of "
            f"{len(jobs) + len(changed)} jobs = {total} simulated jobs, above the budget of {MAX_SIMULATED_JOBS} "
            "per command: fewer orders, or a smaller pipeline"
        )


def _jobs(platform: Platform, args: argparse.Namespace) -> list[PlannedJob]:
    if args.pipeline is not None:
        from infra.sim.pipeline import pipeline_jobs  # noqa: PLC0415 - reads YAML only when asked

        return pipeline_jobs(platform, args.pipeline)
    jobs = week_jobs(platform)
    if args.week or not jobs:
        return jobs
    if args.day:  # the week's first day with a job
        first_day = min(job.created_minute for job in jobs) // MINUTES_PER_DAY
        return [job for job in jobs if job.created_minute // MINUTES_PER_DAY == first_day]
    first = jobs[0]  # the week's first pipeline
    return [job for job in jobs if (job.pipeline, job.created_minute) == (first.pipeline, first.created_minute)]


def render_rows(
    platform: Platform,
    jobs: list[PlannedJob],
    stack: str,
    knobs: Knobs,
    rows: list[Row],
    *,
    table: bool = True,
) -> str:
    """The scenarios side by side: what was simulated, then one line each (`table`)."""
    shown = [
        f"cold start {knobs.cold_start} min" if knobs.cold_start is not None else "cold start as configured",
        *([f"every boot {knobs.late_boot} min late"] if knobs.late_boot else []),
        f"jobs x{float(knobs.slower):g}",
        f"manager upgrade at minute {knobs.upgrade_at}" if knobs.upgrade_at is not None else "no upgrade",
        f"{1 + knobs.orders} order(s), worst shown",
    ]
    shown += [f"{pool} stock-out {_window(windows)}" for pool, windows in sorted(knobs.stockouts.items())]
    header = (
        "scenario",
        "failed",
        "makespan (min)",
        "makespan bound (min)",
        "longest wait (min)",
        "MR wait p95",
        "batch wait p95",
        "GPU EUR",
    )
    body = [
        (
            row.name,
            str(row.failed),
            f"{float(row.makespan):.1f}",
            f"{float(row.bound):.1f}",
            *("-" if value is None else f"{float(value):.1f}" for value in (row.longest_wait, row.merge_request_p95)),
            "-" if row.batch_p95 is None else f"{float(row.batch_p95):.1f}",
            format_eur(row.eur),
        )
        for row in rows
    ]
    heading = f"Simulated {_jobs_text(platform, jobs)} on stack {stack!r}: {'; '.join(shown)}\n"
    if not table:
        return heading
    notes = [
        f"{row.name}: failed {', '.join(f'{n} {reason}' for reason, n in sorted(row.failed_by_reason.items()))}"
        for row in rows
        if row.failed
    ]
    notes += [f"{row.name}: {row.retried} attempts retried (counted once)" for row in rows if row.retried]
    return heading + render_table(header, body) + "".join(f"{note}\n" for note in notes)


def _window(windows: tuple[tuple[Fraction, Fraction], ...]) -> str:
    return ", ".join(f"minutes {float(start):g}-{float(end):g}" for start, end in windows)


def _job_counts(platform: Platform, jobs: list[PlannedJob]) -> dict[str, int]:
    return {name: n for name in platform.profiles if (n := sum(1 for j in jobs if j.profile == name))}


def _jobs_text(platform: Platform, jobs: list[PlannedJob]) -> str:
    """`12 jobs (4 rl, 8 supervised)`."""
    counts = ", ".join(f"{n} {name}" for name, n in _job_counts(platform, jobs).items())
    return f"{len(jobs)} jobs ({counts})"


def render_what_if(
    settings: list[Setting],
    current: tuple[Platform, list[Row], CostReport | None],
    changed: tuple[Platform, list[Row], CostReport | None],
) -> str:
    """The figures of the current spec and of the changed one, side by side, with the change."""
    body = [(label, *compare(before, after, show)) for label, before, after, show in comparison(current, changed)]
    header = ("figure", "current", "changed", "change")
    return (
        "Changed: "
        + "; ".join(setting.describe() for setting in settings)
        + "\n"
        + render_table(header, body)
        + "plan: the simulated week of platform.workload as configured: what `plan` and the MR note's cost delta "
        "show.\n"
    )
