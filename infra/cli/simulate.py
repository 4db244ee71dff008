"""`python -m infra simulate`: dispatch a pipeline or a day of jobs on the stack's platform, scenario by scenario.

The jobs are one burst of the stack's workload (a pipeline), the whole day (`--day`), or the training jobs of
a repository's `.gitlab-ci.yml` (`--pipeline FILE`: each job extending a profile's template, run as long as
the profile's `workload.profiles.<name>.minutes_per_job`). Each scenario prints the failed jobs, the makespan
against the bound the slots set, the longest wait before a job runs, and the GPU EUR:
- `--cold-start MIN`: every GPU pool takes this long from zero;
- `--slower 1.1`: jobs 10 % longer than estimated;
- `--orders N`: N seeded random job orders besides the given one (worst case shown);
- `--upgrade-at MIN`: every runner's manager is upgraded at that minute;
- `--single-runner`: the layout before one runner per pool, for comparison.
Exit 0 when no job fails in any scenario, 1 when some do, 2 when the stack or the file is unusable.
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path

from infra.config.errors import SpecError
from infra.dispatch import PlannedJob, scenario, workload_jobs
from infra.model import Platform, load_platform
from infra.offline.stack_config import load_stack_config
from infra.render.text import format_eur, render_table
from infra.simulate import SimResult, Upgrade, bound_makespan, simulate

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
        platform = load_platform(load_stack_config(args.stack, path=args.config).get("platform"))
        jobs = _jobs(platform, args)
        _check_knobs(args)
    except (FileNotFoundError, SpecError, ValueError) as err:
        for line in str(err).splitlines():
            print(f"error: {line}", file=sys.stderr)
        return 2
    if not jobs:
        print(
            "error: no job to simulate (no workload in the stack, or no training job in the pipeline)", file=sys.stderr
        )
        return 2
    rows = [_row("per-pool runners", platform, jobs, args, "per-pool")]
    if args.single_runner:
        rows.append(_row("single runner (before)", platform, jobs, args, "single"))
    sys.stdout.write(render_rows(platform, jobs, args, rows))
    return 1 if any(row.failed for row in rows) else 0


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


def _row(name: str, platform: Platform, jobs: list[PlannedJob], args: argparse.Namespace, layout: str) -> Row:
    orders = [jobs]
    generator = random.Random(0)
    for _ in range(args.orders):
        shuffled = list(jobs)
        generator.shuffle(shuffled)
        orders.append(shuffled)
    upgrades = (Upgrade(args.upgrade_at),) if args.upgrade_at is not None else ()
    results: list[tuple[SimResult, Fraction]] = []
    for order in orders:
        built = scenario(
            platform,
            order,
            layout="single" if layout == "single" else "per-pool",
            slower=args.slower,
            cold_start_minutes=args.cold_start,
            upgrades=upgrades,
        )
        results.append((simulate(built), bound_makespan(replace(built, upgrades=()))))
    worst, bound = max(results, key=lambda pair: (len(pair[0].failed), pair[0].makespan))
    return Row(name, len(worst.failed), worst.makespan, bound, worst.longest_wait, worst.eur)


def render_rows(platform: Platform, jobs: list[PlannedJob], args: argparse.Namespace, rows: list[Row]) -> str:
    """The scenarios side by side: what was simulated, then one line each."""
    per_profile = {name: sum(1 for j in jobs if j.profile == name) for name in platform.profiles}
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
    jobs_line = ", ".join(f"{n} {name}" for name, n in per_profile.items() if n)
    return f"Simulated {len(jobs)} jobs ({jobs_line}) on stack {args.stack!r}: {'; '.join(knobs)}\n" + render_table(
        header, body
    )
