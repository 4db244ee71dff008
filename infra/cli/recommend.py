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
import math
import shlex
import sys
import textwrap
import time
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import TextIO

from infra.cli import fail, fail_spec
from infra.cli.recommend_bound import bound_text
from infra.config.errors import SpecError
from infra.model.platform import Platform, load_platform
from infra.offline.stack_config import StackConfig, StackFileError, load_stack_config, stack_file
from infra.render.text import format_eur, render_table
from infra.sim.binding import bindings
from infra.sim.combine import Combination
from infra.sim.confirm import Confirmation
from infra.sim.levers import Change, apply, dotted, duration_text
from infra.sim.pool_runs import VARIANTS
from infra.sim.search import search
from infra.sim.search_report import MAX_RUNS, SearchError, SearchReport
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
        "--confidence",
        metavar="SHARE",
        help="the share of the simulated weeks the target must be met in (default platform.slo.confidence, 0.9)",
    )
    parser.add_argument(
        "--keep-sizes",
        action="store_true",
        help="keep every pool's max_size: the best the other levers (warm windows, held slots, sharing, scale-down) do",
    )
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
    confidence = _confidence(args.confidence)
    if isinstance(confidence, str):
        return fail(confidence)
    path = stack_file(args.stack, path=args.config)
    try:
        config = load_stack_config(args.stack, path=args.config)
        raw = config.get("platform")
        platform = load_platform(raw)
        progress = Progress()
        report = search(
            platform, raw, max_runs=args.max_runs, progress=progress, confidence=confidence, keep_sizes=args.keep_sizes
        )
    except SpecError as err:
        return fail_spec(err, args.stack, args.config)
    except (FileNotFoundError, StackFileError, SearchError) as err:
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
        out.write(bound_text(report, None, None))
        out.write(_front(report))
        if args.write:
            out.write(f"Nothing written to {path.name}: no candidate meets the target.\n")
        return 1
    if chosen.key == report.today.key:
        out.write(
            f"Today's spec already is the cheapest that meets the target: EUR {format_eur(chosen.eur_per_week)}/week, "
            f"{_weeks_text(report, chosen)}.\n\n"
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
    changed = load_platform(apply(raw, found))
    out.write(_comparison(report, chosen, changed))
    out.write(bound_text(report, chosen, changed))
    out.write(_refined(report))
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


def _confidence(text: str | None) -> Fraction | str | None:
    """`--confidence` as a share in (0, 1], None when not given, or the error line naming the flag."""
    if text is None:
        return None
    try:
        value = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        value = Fraction(-1)
    if not 0 < value <= 1 or len(text) > 20:
        shown = text if len(text) <= 20 else text[:19] + "…"
        return f"--confidence={shown!r}: must be a share above 0 and at most 1 (0.9: the target met in 9 weeks of 10)"
    return value


def _heading(stack: str, report: SearchReport) -> str:
    target = report.target
    skipped = sum(report.skipped.values())
    reasons = "; ".join(f"{count} {why}" for why, count in report.skipped.items())
    variants = ", ".join(variant.name for variant in VARIANTS)
    required = math.ceil(report.confidence * report.weeks)
    lines = [
        f"Recommendation for stack {stack!r}: the cheapest platform whose merge-request wait p95 is within "
        f"platform.slo.merge_request_wait_minutes = {float(target.minutes):g} min in at least "
        f"{float(report.confidence):.0%} of {report.weeks} simulated weeks ({required}), in each of: {variants}; "
        + ("with every pool's max_size as it is (--keep-sizes); " if report.keep_sizes else "")
        + f"with 0 failed jobs ({target.jobs} merge-request jobs in the first week; at most {target.allowed_over} over "
        "it). Candidates are screened on the first week and the cheapest confirmed on every week.",
        f"Searched {report.candidates} candidates of {len(report.pools)} GPU pool(s) ({', '.join(report.pools)}): "
        f"simulated {report.simulated} on the first week, each in the {len(VARIANTS)} variants, and confirmed "
        f"{len(report.confirmations)} combination(s) over the weeks; skipped {skipped}"
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
    """Today against the recommendation over the weeks: per variant the weeks met and the p95 over all their
    merge-request jobs, the margin; EUR/week of the first week, the recommendation's from the whole platform."""
    today = report.today
    week = simulate_week(changed)
    assert week is not None
    rows = []
    for label, combination, eur in (
        ("today", today, today.eur_per_week),
        ("recommended", chosen, week.eur_per_week),
    ):
        confirmed = report.confirmations[combination.key]
        rows.append(
            (
                label,
                format_eur(eur),
                *(_variant_cell(confirmed, index) for index in range(len(VARIANTS))),
                _margin(confirmed, report.target.minutes),
                str(combination.failed),
            )
        )
    header = ("", "EUR/week", *(f"{variant.name}: weeks met, p95" for variant in VARIANTS), "margin (min)", "failed")
    weeks = report.confirmations[chosen.key]
    note = (
        f"Over {weeks.weeks} weeks (each drawn anew: arrivals, run times, boots), the recommendation meets the target "
        f"in {_weeks_text(report, chosen)}; EUR/week {_signed_eur(week.eur_per_week - today.eur_per_week)} against "
        "today. The margin is the target less the worst variant's p95 over all the weeks' merge-request jobs.\n"
    )
    return render_table(header, rows) + note


WIDTH = 118


def _refined(report: SearchReport) -> str:
    """The second step: from what, the moves it took (which lever bought what), the seeds from the bound."""
    done = report.refined
    if done is None:
        return ""
    steps = "; ".join(done.steps) or "no move was cheaper"
    seeds = "; ".join(done.seeds) or "none"
    text = (
        f"Second step (finer levers: warm counts by the arrival profile's bands and their edges, max_size, replicas, "
        f"held slots, the cluster's scale-down delay; {done.screened} moves tried, {done.confirmed} confirmed over "
        f"the weeks), from the first step's EUR {format_eur(done.start.eur_per_week)}/week: {steps}. Seeds from the "
        f"bound (the clairvoyant's ready nodes per band, at the {float(report.confidence):.0%} quantile and the most): "
        f"{seeds}."
    )
    return textwrap.fill(text, WIDTH, break_on_hyphens=False) + "\n\n"


def _variant_cell(confirmed: Confirmation, index: int) -> str:
    """`19/20, 14.2` (stopped early: `<18/20`): one variant's weeks met and pooled p95."""
    met = (
        f"{confirmed.met[index]}/{confirmed.weeks}"
        if confirmed.complete
        else f"<{confirmed.required}/{confirmed.weeks}"
    )
    p95 = confirmed.p95s[index]
    return f"{met}, {'lost' if p95 is None else _min(p95)}"


def _margin(confirmed: Confirmation, target: Fraction) -> str:
    margin = confirmed.margin(target)
    return "lost" if margin is None else f"{float(margin):+.1f}"


def _weeks_text(report: SearchReport, combination: Combination) -> str:
    """`at least 18 of 20 weeks in every variant (worst: 18), margin +2.5 min`."""
    confirmed = report.confirmations.get(combination.key)
    if confirmed is None:
        return "not confirmed over the weeks"
    margin = confirmed.margin(report.target.minutes)
    shown = "a lost job at the p95" if margin is None else f"margin {float(margin):+.1f} min"
    worst = min(confirmed.met) if confirmed.complete else f"under {confirmed.required}"
    return (
        f"{worst} of {confirmed.weeks} weeks in the worst variant ({float(confirmed.share):.0%}; "
        f"{confirmed.required} asked), {shown}"
    )


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
        confirmed = report.confirmations.get(combination.key)
        weeks = "-" if confirmed is None else _variant_cell(confirmed, _worst(confirmed))
        rows.append(
            (
                format_eur(combination.eur_per_week),
                *(_min(p95) for p95 in combination.p95s),
                weeks,
                label + mark,
            )
        )
    header = ("EUR/week", *(f"p95, {variant.name}" for variant in VARIANTS), "weeks met (worst)", "candidate")
    return (
        "Pareto front of the candidates simulated, on the first week (none of them both cheaper and faster than a "
        "row), and over the weeks for those confirmed:\n" + render_table(header, rows)
    )


def _worst(confirmed: Confirmation) -> int:
    return confirmed.met.index(min(confirmed.met))


def _describe(report: SearchReport, combination: Combination) -> str:
    changed = [
        f"{run.pool} {run.levers.describe()}"
        for run, today in zip(combination.runs, report.today.runs, strict=True)
        if replace(run.levers, scale_down_seconds=today.levers.scale_down_seconds) != today.levers
    ]
    seconds = combination.runs[0].levers.scale_down_seconds
    if seconds != report.today.runs[0].levers.scale_down_seconds:
        changed.append(f"scale-down after {duration_text(seconds)}")
    return "; ".join(changed)


def _closest(platform: Platform, report: SearchReport) -> str:
    closest = report.closest
    lines = []
    if (unconfirmed := report.unconfirmed) is not None:
        lines.append(
            f"No candidate meets the target in {float(report.confidence):.0%} of the weeks. The cheapest that meets "
            f"it on the first week, {_describe(report, unconfirmed) or 'today'} (EUR "
            f"{format_eur(unconfirmed.eur_per_week)}/week), meets it in {_weeks_text(report, unconfirmed)}.\n"
        )
    if closest is None:
        return "".join(lines) + "No candidate meets the target, and none was simulated without failed jobs.\n\n"
    cold = {pool: platform.pools[pool].worst_cold_start_minutes for pool in report.pools}
    p95s = ", ".join(f"{variant.name} {_min(p95)}" for variant, p95 in zip(VARIANTS, closest.p95s, strict=True))
    lines += [
        f"No candidate meets the target on the first week. The closest: {_describe(report, closest) or 'today'}: EUR "
        f"{format_eur(closest.eur_per_week)}/week, p95 {p95s} min"
        + _over_the_weeks(report, closest)
        + ". What binds it:",
    ]
    found = bindings(closest, report.target.minutes, {pool: Fraction(minutes) for pool, minutes in cold.items()})
    lines += [f"  - {binding.describe()}" for binding in found]
    return "\n".join(lines) + "\n\n"


def _over_the_weeks(report: SearchReport, combination: Combination) -> str:
    """`; over the 20 weeks: p95 135.0, 158.6, 140.0 min (the variants), met in 0 of them, EUR 124.1/week`."""
    confirmed = report.confirmations.get(combination.key)
    if confirmed is None or not confirmed.complete:
        return ""
    mean = report.mean_eur(combination)
    return (
        f"; over the {confirmed.weeks} weeks: p95 {', '.join(_min(p95) for p95 in confirmed.p95s)} min (the same "
        f"variants), met in {min(confirmed.met)} of them"
        + ("" if mean is None else f", EUR {format_eur(mean)}/week on average")
    )


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
    return "lost" if value is None else f"{float(value):.1f}"  # type: ignore[arg-type]


def _signed(value: object) -> str:
    number = float(value)  # type: ignore[arg-type]
    return "=" if abs(number) < 0.05 else f"{number:+.1f}"


def _signed_eur(value: object) -> str:
    assert isinstance(value, Fraction)
    return ("+" if value >= 0 else "-") + format_eur(abs(value))
