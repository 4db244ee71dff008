"""`python -m infra recommend`: the cheapest platform whose merge-request p95 meets the target, for the stack's
measured (or estimated) week.

It searches each GPU pool's levers (`max_size`, GPU-sharing replicas, `merge_request_slots`, warm windows:
`infra.sim.levers`) by simulating the stack's week (`infra.sim.search`), and prints:
- the recommended spec change: the cheapest candidate whose merge-request p95 over the week meets
  `platform.slo.merge_request_wait_minutes` with 0 failed jobs, as estimated and with jobs 10 % slower, as a
  diff of the stack file, with EUR/week and the p95 against today's spec;
- the Pareto front of what it simulated (EUR/week against the p95), today's spec placed on it;
- without a recommendation, the candidate closest to the target and what binds it (slots, cold start, nodes).
A candidate the spec refuses, or the policy pack with its default config, is never recommended: the search
skips what `derive` refuses or warns the pack refuses, and the recommendation itself is run through the real
program and the pack (as `plan` does) before it is shown. `--write` puts it into `Pulumi.<stack>.yaml`, editing
only the lines of the keys it sets (`infra.offline.stack_edit`), once a copy reads back as intended.

Exit 0: a recommendation (or today's spec already is the cheapest that meets the target); 1: no candidate meets
it; 2: bad input (no stack file, an invalid spec, no target or no merge-request job, a bad flag).
"""

from __future__ import annotations

import argparse
import difflib
import shlex
import sys
import time
from pathlib import Path
from typing import TextIO

from infra.cli import fail
from infra.config.errors import SpecError
from infra.model.platform import Platform, load_platform
from infra.offline.stack_config import StackConfig, StackFileError, load_stack_config, stack_file
from infra.render.text import format_eur, render_table
from infra.sim.binding import bindings
from infra.sim.combine import Combination
from infra.sim.levers import Change, apply, dotted
from infra.sim.search import MAX_RUNS, SearchError, SearchReport, search
from infra.sim.week import simulate_week
from infra.untrusted import printable

MAX_RUNS_CAP = 2_000
PROGRESS_AFTER_SECONDS = 1.0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "recommend", help="the cheapest platform whose merge-request wait meets the target, by simulation"
    )
    parser.add_argument("--stack", default="dev", help="stack whose Pulumi.<stack>.yaml holds the spec (default: dev)")
    parser.add_argument("--config", type=Path, help="use this stack file instead of Pulumi.<stack>.yaml")
    parser.add_argument("--write", action="store_true", help="write the recommended change into the stack file")
    parser.add_argument(
        "--max-runs",
        type=int,
        default=MAX_RUNS,
        metavar="N",
        help=f"simulate at most N pool candidates (default {MAX_RUNS}, at most {MAX_RUNS_CAP})",
    )
    parser.set_defaults(handler=main)


class Progress:
    """One status line on stderr once the search runs long: rewritten on a terminal, every few seconds else."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.start = time.monotonic()
        self.last = 0.0
        self.shown = False

    def __call__(self, simulated: int, queued: int) -> None:
        now = time.monotonic() - self.start
        if now < PROGRESS_AFTER_SECONDS or (not self.tty and now - self.last < 5):
            return
        self.last = now
        text = f"recommend: {simulated} candidates simulated, up to {queued} to go ({now:.0f} s)"
        self.stream.write(f"\r\033[K{text}" if self.tty else text + "\n")
        self.stream.flush()
        self.shown = True

    def done(self, report: SearchReport) -> None:
        if self.tty and self.shown:
            self.stream.write("\r\033[K")
        elapsed = time.monotonic() - self.start
        self.stream.write(f"recommend: simulated {report.simulated} candidates in {elapsed:.1f} s\n")
        self.stream.flush()


def main(args: argparse.Namespace) -> int:
    if not 1 <= args.max_runs <= MAX_RUNS_CAP:
        return fail(f"--max-runs={args.max_runs}: must be 1-{MAX_RUNS_CAP}")
    path = stack_file(args.stack, path=args.config)
    try:
        config = load_stack_config(args.stack, path=args.config)
        raw = config.get("platform")
        platform = load_platform(raw)
        progress = Progress()
        report = search(platform, raw, max_runs=args.max_runs, progress=progress)
    except (FileNotFoundError, StackFileError, SpecError, SearchError) as err:
        return fail(str(err))
    progress.done(report)
    out = sys.stdout
    out.write(_heading(args.stack, report))
    chosen = report.recommended
    if chosen is not None and chosen.key != report.today.key:
        refusal = _pack_refusal(config, apply(raw, report.changes(chosen)))
        if refusal:
            out.write(f"No recommendation: the cheapest candidate is refused: {refusal}\n")
            return 1
    if chosen is None:
        out.write(_closest(platform, report))
        out.write(_front(report))
        if args.write:
            out.write(f"Nothing written to {path.name}: no candidate meets the target.\n")
        return 1
    if chosen.key == report.today.key:
        out.write(
            f"Today's spec already is the cheapest that meets the target: EUR {format_eur(chosen.eur_per_week)}/week, "
            f"p95 {_min(chosen.p95)} min (jobs 10 % slower: {_min(chosen.slower_p95)}).\n\n"
        )
        out.write(_front(report))
        return 0
    return _recommend(args, path, config, platform, report)


def _recommend(
    args: argparse.Namespace, path: Path, config: StackConfig, platform: Platform, report: SearchReport
) -> int:
    """The recommendation against today, as a diff of the stack file, the front; written with `--write`."""
    out = sys.stdout
    chosen = report.recommended
    assert chosen is not None
    raw = config.get("platform")
    found = report.changes(chosen)
    out.write(_comparison(report, chosen, load_platform(apply(raw, found))))
    text = _diff(path, config, found, expected=apply(raw, found), out=out)
    out.write("\n" + _front(report))
    source = f"--config {shlex.quote(str(args.config))}" if args.config else f"--stack {args.stack}"
    if not args.write:
        out.write(f"\nWrite it into {path.name}: python -m infra recommend {source} --write\n")
        return 0
    if text is None:
        return fail(f"{path.name}: nothing written (see above)")
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as err:
        return fail(f"{path.name}: cannot be written ({err.strerror or err})")
    out.write(f"\nWrote {len(found)} key(s) into {path}: `python -m infra plan {source}` shows it.\n")
    return 0


def _heading(stack: str, report: SearchReport) -> str:
    target = report.target
    skipped = sum(report.skipped.values())
    reasons = "; ".join(f"{count} {why}" for why, count in report.skipped.items())
    lines = [
        f"Recommendation for stack {stack!r}: the cheapest platform whose merge-request wait p95 over the week is "
        f"within platform.slo.merge_request_wait_minutes = {float(target.minutes):g} min ({target.jobs} merge-request "
        "jobs; at most "
        f"{target.allowed_over} over it), with 0 failed jobs, as estimated and with jobs 10 % slower.",
        f"Searched {report.candidates} candidates of {len(report.pools)} GPU pool(s) ({', '.join(report.pools)}): "
        f"simulated {report.simulated}, each as estimated and 10 % slower; skipped {skipped}"
        + (f" ({reasons})" if reasons else "")
        + ".",
    ]
    if report.cut:
        lines.append(
            f"Stopped at the budget of {report.max_runs} simulated candidates (--max-runs): the result is the best "
            "of those simulated, not of every candidate."
        )
    return "\n".join(lines) + "\n\n"


def _comparison(report: SearchReport, chosen: Combination, changed: Platform) -> str:
    """Today against the recommendation, the recommendation's figures from the whole platform's week."""
    today = report.today
    week = simulate_week(changed)
    assert week is not None and week.merge_request_p95 is not None
    rows = [
        ("today", format_eur(today.eur_per_week), _min(today.p95), _min(today.slower_p95), str(today.failed)),
        ("recommended", format_eur(week.eur_per_week), _min(week.merge_request_p95), _min(chosen.slower_p95), "0"),
        (
            "change",
            _signed_eur(week.eur_per_week - today.eur_per_week),
            _signed(week.merge_request_p95 - today.p95),
            _signed(chosen.slower_p95 - today.slower_p95),
            "",
        ),
    ]
    header = ("", "EUR/week", "MR wait p95 (min)", "jobs 10 % slower", "failed jobs")
    return render_table(header, rows)


def _diff(path: Path, config: StackConfig, found: list[Change], *, expected: object, out: TextIO) -> str | None:
    """The stack file's diff (what `--write` writes), or the keys and why the file cannot be edited."""
    from infra.offline.stack_edit import EditError, edited  # noqa: PLC0415 - the editor only where it is used

    try:
        text = edited(path, config.stack, config.project, found, expected)
    except EditError as err:
        keys = "".join(f"  platform.{dotted(key)}: {value!r}\n" for key, value in found)
        out.write(
            printable(f"\nThe change, key by key (the stack file cannot be edited: {err}):\n{keys}", None, keep="\n")
        )
        return None
    before = path.read_text(encoding="utf-8").splitlines(keepends=True)
    diff = difflib.unified_diff(before, text.splitlines(keepends=True), path.name, f"{path.name} (recommended)", n=1)
    out.write("\n" + printable("".join(diff), None, keep="\n\t"))  # the stack file's lines, bidi controls and all
    return text


def _front(report: SearchReport) -> str:
    """The Pareto front as a short table, today's spec placed on it."""
    rows = []
    front = list(report.front)
    if all(c.key != report.today.key for c in front):
        front.append(report.today)
        front.sort(key=lambda c: (c.eur_per_week, c.score))
    for combination in front:
        if combination.key == report.today.key:
            label = "today" + ("" if combination in report.front else " (beaten: not on the front)")
        else:
            label = _describe(report, combination)
        mark = " <- recommended" if report.recommended is not None and combination.key == report.recommended.key else ""
        rows.append(
            (
                format_eur(combination.eur_per_week),
                _min(combination.p95),
                _min(combination.slower_p95),
                label + mark,
            )
        )
    header = ("EUR/week", "MR wait p95", "10 % slower", "candidate")
    return (
        "Pareto front of the candidates simulated (none of them both cheaper and faster than a row):\n"
        + render_table(header, rows)
    )


def _describe(report: SearchReport, combination: Combination) -> str:
    changed = [
        f"{run.pool} {run.levers.describe()}"
        for run, today in zip(combination.runs, report.today.runs, strict=True)
        if run.levers != today.levers
    ]
    return "; ".join(changed)


def _closest(platform: Platform, report: SearchReport) -> str:
    closest = report.closest
    if closest is None:
        return "No candidate meets the target, and none was simulated without failed jobs.\n\n"
    cold = {pool: platform.pools[pool].cold_start_minutes for pool in report.pools}
    lines = [
        f"No candidate meets the target. The closest: {_describe(report, closest) or 'today'}: EUR "
        f"{format_eur(closest.eur_per_week)}/week, p95 {_min(closest.p95)} min (jobs 10 % slower: "
        f"{_min(closest.slower_p95)}). What binds it:",
    ]
    from fractions import Fraction  # noqa: PLC0415

    found = bindings(closest, report.target.minutes, {pool: Fraction(minutes) for pool, minutes in cold.items()})
    lines += [f"  - {binding.describe()}" for binding in found]
    return "\n".join(lines) + "\n\n"


def _pack_refusal(config: StackConfig, changed: object) -> str:
    """The policy pack's first mandatory violation of the whole program with the changed platform, or ""."""
    from infra.offline.harness import run_program  # noqa: PLC0415 - the SDKs: only once there is a candidate
    from infra.offline.policy_check import policy_report  # noqa: PLC0415

    run = run_program(config.with_values({"platform": changed}), check=False)
    if run.error is not None:
        return f"the program stops on it: {str(run.error).splitlines()[0]}"
    blocking = [v for v in policy_report(run) if v.level == "mandatory"]
    return f"the policy pack refuses it: {blocking[0]}" if blocking else ""


def _min(value: object) -> str:
    return f"{float(value):.1f}"  # type: ignore[arg-type]


def _signed(value: object) -> str:
    number = float(value)  # type: ignore[arg-type]
    return "=" if abs(number) < 0.05 else f"{number:+.1f}"


def _signed_eur(value: object) -> str:
    from fractions import Fraction  # noqa: PLC0415

    assert isinstance(value, Fraction)
    return ("+" if value >= 0 else "-") + format_eur(abs(value))
