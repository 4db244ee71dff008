"""`python -m infra workload --from-gitlab`: measure `platform.workload` from the training project's job history.

Reads the last `--days` days of jobs of the stack's training project (`platform.gitlab.url`/`.project`,
or `--gitlab-url`/`--project`) with the token in $GITLAB_TOKEN (scope `read_api`), sorts them into
profiles and kinds (job-name prefix, and class by the pipeline's source), prints the report and the "assumed
vs measured" table on stderr and the `workload:` section, ready to paste, on stdout; `--write` puts it into
`Pulumi.<stack>.yaml` instead, keeping its comments.
Everything GitLab answers is checked (`infra.gitlab_api`, `infra.workload.job_entries`), every line printed is
escaped, and the edited stack file must load as `plan` loads it before anything is written or printed.
Exit 2: bad stack config, token, project or GitLab answer; exit 1: GitLab unreachable or rate-limiting too
long, or a measured figure the spec refuses.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from infra.cli import fail, fail_spec
from infra.config.errors import SpecError
from infra.config.pools import PoolSpec
from infra.documents import printable, safe_load
from infra.model.platform import Platform, load_platform
from infra.offline.stack_config import StackConfig, StackFileError, load_stack_config
from infra.offline.stack_config import stack_file as stack_file_path
from infra.offline.stack_edit import Change
from infra.sim.levers import apply
from infra.workload.figures import WorkloadEdit, comparison, resolve, workload_edit
from infra.workload.job_entries import EARLIEST, LATEST, parse_time
from infra.workload.mapping import routing_of
from infra.workload.measure import measure, observed_days, observed_start, training_in_window
from infra.workload.model_error import model_error
from infra.workload.report import render_comparison, render_prepares, render_report
from infra.workload.waits import class_waits, cold_start_edit, pool_starts

TOKEN_VARIABLE = "GITLAB_TOKEN"
MAX_DAYS = 366
"""A year of history at most: the jobs list's page budget (infra.gitlab_api.MAX_PAGES) would not cover more."""
MAX_LINE = 2_000


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "workload", help="measure platform.workload (jobs/day, minutes/job, bursts) from GitLab's job history"
    )
    parser.add_argument(
        "--from-gitlab", action="store_true", help=f"read the training project's jobs (token: ${TOKEN_VARIABLE})"
    )
    parser.add_argument("--days", type=int, default=14, help="days of history to read (default: 14)")
    parser.add_argument("--until", help="end of the window, ISO date or time in UTC (default: now)")
    parser.add_argument("--write", action="store_true", help="write the measured section into the stack file")
    parser.add_argument("--stack", default="dev", help="stack whose Pulumi.<stack>.yaml holds the spec (default: dev)")
    parser.add_argument("--config", type=Path, help="use this stack file instead of Pulumi.<stack>.yaml")
    parser.add_argument("--gitlab-url", help="GitLab instance URL (default: platform.gitlab.url)")
    parser.add_argument("--project", help="training project path or id (default: platform.gitlab.project)")
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    path = stack_file_path(args.stack, path=args.config)
    try:
        config = load_stack_config(args.stack, path=args.config)
        platform = load_platform(config.get("platform"))
    except (FileNotFoundError, StackFileError, SpecError) as err:
        return fail_spec(err, args.stack, args.config) if isinstance(err, SpecError) else fail(str(err))
    if not args.from_gitlab:
        return fail("say where to measure from: --from-gitlab (the only source so far)")
    if args.days < 1:
        return fail(f"--days {args.days}: give at least 1 day")
    if args.days > MAX_DAYS:
        return fail(f"--days {args.days}: at most {MAX_DAYS} days (a year) are read at once; --until reads older ones")
    try:
        until = _until(args.until)
        since = until - timedelta(days=args.days)
    except (ValueError, OverflowError):
        return fail(
            f"--until {printable(str(args.until), 60)!r}: not an ISO date or time like 2026-11-30 or 2026-11-30T12:00"
        )
    token = env.get(TOKEN_VARIABLE, "")
    if not token:
        return fail(f"${TOKEN_VARIABLE} is not set: give it a token with the `read_api` scope (role Reporter)")
    url = args.gitlab_url or platform.spec.gitlab.url
    project = args.project or platform.spec.gitlab.project
    from infra.gitlab_api import connection_problem  # noqa: PLC0415 - requests: only this command pays for it

    url_from = "--gitlab-url" if args.gitlab_url else "platform.gitlab.url"
    if problem := connection_problem(url, token, url_from, f"${TOKEN_VARIABLE}"):
        return _fail(problem)
    return _from_gitlab(args, config, platform, path, GitlabSource(url, project, token, since, until, args.days))


@dataclass(frozen=True)
class GitlabSource:
    """Where the history is read from, and the window."""

    url: str
    project: str
    token: str = field(repr=False)
    since: datetime
    until: datetime
    days: int


def _from_gitlab(
    args: argparse.Namespace, config: StackConfig, platform: Platform, path: Path, source: GitlabSource
) -> int:
    # python-gitlab is imported here, not at the top: `python -m infra plan` must not pay.
    from infra.workload.gitlab_jobs import Progress, ReadError, read_history  # noqa: PLC0415

    routing = routing_of(platform)
    try:
        history = read_history(
            source.url,
            source.project,
            source.token,
            source.since,
            progress=Progress(sys.stderr),
            wants_source=training_in_window(routing, source.since, source.until),
            wants_trace=training_in_window(routing, source.since, source.until),
        )
    except ReadError as err:
        return _fail(str(err), err.exit_code)
    in_window = [job.created_at for job in history.jobs if source.since <= job.created_at < source.until]
    first = min(in_window, default=None)
    days = observed_days(source.since, source.until, history.created_at, first)
    workload = platform.spec.workload
    measurement = measure(
        history.jobs,
        routing,
        source.since,
        source.until,
        days,
        runner_tags=history.runner_tags,
        sources=history.pipeline_sources,
        zone=ZoneInfo(workload.time_zone if workload is not None else "UTC"),
        start=observed_start(source.since, history.created_at, first),
        prepares=history.traces.prepares,
    )
    skipped = history.ledger.summary()
    if measurement.seen == 0:
        _say(f"workload: no job in {history.project} in the last {source.days} days: nothing measured")
        if skipped:
            _say(f"note: {skipped}")
        return 0
    assumed = (config.get("platform") or {}).get("workload")
    resolution = resolve(measurement, assumed)
    poll_timeouts = {pool: r.poll_timeout_seconds for pool, r in platform.runners.items()}
    _say(render_report(measurement, resolution, history.project, poll_timeouts))
    starts = pool_starts(measurement.ran, [pool.name for pool in platform.pools.values() if pool.runner])
    cold = {pool: start.written()["cold_start_minutes"] for pool, start in starts.items() if start.cold}
    error = model_error(platform, measurement, resolution, cold) if history.traces.prepares else None
    if measurement.ran:
        _say("\n" + render_prepares(starts, class_waits(measurement.ran), error))
    classes = "; ".join(note for note in (history.pipeline_note, resolution.unknown_note) if note)
    for note in (history.runner_note, classes, *resolution.notes, history.traces.note(), skipped):
        if note:
            _say(f"note: {note}")
    if measurement.training_jobs == 0:
        _say(
            f"workload: none of the {measurement.seen} jobs is a training job (no profile's runner, tags or "
            "family matched): nothing written"
        )
        return 0
    edit = workload_edit(measurement, resolution, assumed)
    if not edit.kinds:
        _say("workload: no kind could be written (see the notes above): nothing written")
        return 0
    _say("\n" + render_comparison(comparison(measurement, resolution, edit, assumed)))
    pools, rows = cold_start_edit(starts, (config.get("platform") or {}).get("pools"), PoolSpec.model_fields)
    if rows:
        _say("\n" + render_comparison(rows, "platform.pools"))
    header = (
        f"measured from {history.project}, {measurement.since:%Y-%m-%d} .. {measurement.until:%Y-%m-%d} "
        f"({measurement.training_jobs} training jobs)\n"
        f"replaces `workload:` under {config.project}:platform in {path.name} (or run with --write)"
    )
    return _output(args, config, path, Edit(edit, pools), header)


@dataclass(frozen=True)
class Edit:
    """What `--write` changes: `platform.workload`, and the pools' measured cold starts."""

    workload: WorkloadEdit
    pools: list[Change]


def _output(args: argparse.Namespace, config: StackConfig, path: Path, edit: Edit, header: str) -> int:
    """The `workload:` section with the figures: written into the stack file (`--write`) or printed, once the
    spec accepts it; refused in one line otherwise, so that `plan` never refuses what this command wrote."""
    from infra.offline import stack_edit  # noqa: PLC0415 - the editor only where it is used
    from infra.workload.section import measured_section  # noqa: PLC0415

    assumed = (config.get("platform") or {}).get("workload")
    try:
        text = stack_edit.write_section(
            stack_edit.read(path), path.name, config.project, "workload", measured_section(assumed, edit.workload)
        )
        section = stack_edit.section_text(text, path.name, config.project, "workload")
        if args.write:
            text = stack_edit.set_keys(text, path.name, config.project, edit.pools)
            refusal = _file_refusal(text, args.stack, path.name)
            if not refusal and (others := _others_changed(text, config, path.name, edit.pools)):
                raise stack_edit.EditError(
                    f"{path.name}: writing platform.workload would also change {others} (an anchor or an alias "
                    "shares its value): write the workload without it"
                )
        else:
            plain = safe_load(section)["workload"]  # the section as pasted: plain YAML values
            refusal = _spec_refusal({**(config.get("platform") or {}), "workload": plain})
        if refusal:
            return _fail(f"the measured workload does not fit the spec, so nothing is written: {refusal}", 1)
        if args.write:
            stack_edit.write(path, text)
            _say(f"workload: wrote platform.workload into {path}")
            return 0
    except stack_edit.EditError as err:
        return _fail(f"{err}: nothing written")
    pad = " " * (len(section) - len(section.lstrip(" ")))
    sys.stdout.write("".join(f"{pad}# {line}\n" for line in header.splitlines()) + section)
    return 0


def _file_refusal(text: str, stack: str, name: str) -> str:
    """Why `plan` would refuse the stack file `text`, or "": it is loaded and its platform derived exactly as
    `plan` does, from a copy (the real file is not touched)."""
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / name
        copy.write_text(text, encoding="utf-8")
        try:
            return _spec_refusal(load_stack_config(stack, path=copy).get("platform"))
        except StackFileError as err:
            return str(err)


def _others_changed(text: str, before: StackConfig, name: str, settings: Sequence[Change]) -> str:
    """The keys besides `platform.workload` and the pool keys `settings` sets whose value the stack file `text`
    changes against `before` (a YAML anchor shares one value between places: editing it in one edits it in
    all), or ""."""
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / name
        copy.write_text(text, encoding="utf-8")
        after = load_stack_config(before.stack, path=copy)
    key = before.namespaced("platform")

    def rest(config: StackConfig) -> dict[str, object]:
        platform = config.values.get(key)
        others = {k: v for k, v in config.values.items() if k != key}
        if isinstance(platform, dict):
            others |= {f"{key}.{k}": v for k, v in platform.items() if k != "workload"}
        return others

    platform = before.values.get(key)
    intended = before.with_values({key: apply(platform, settings)}) if isinstance(platform, dict) else before
    old, new = rest(intended), rest(after)
    return ", ".join(sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k)))


def _spec_refusal(platform: object) -> str:
    """The spec's first problem with `platform` (one line, the others counted), or ""."""
    try:
        load_platform(platform)
    except SpecError as err:
        lines = str(err).splitlines() or ["not a valid spec"]
        return lines[0] + (f" (and {len(lines) - 1} more)" if len(lines) > 1 else "")
    return ""


def _say(text: str) -> None:
    """Lines on stderr, each escaped: what GitLab said (a project's path, a reason) cannot forge or garble one."""
    for line in text.splitlines() or [""]:
        print(printable(line, MAX_LINE), file=sys.stderr)


def _fail(message: str, code: int = 2) -> int:
    return fail(printable(message, MAX_LINE), code)


def _until(text: str | None) -> datetime:
    """The end of the window; ValueError for a time no job can have (`job_entries.EARLIEST`/`LATEST`)."""
    if not text:
        return datetime.now(UTC)
    value = parse_time(text) if "T" in text else parse_time(text + "T00:00:00+00:00")
    value = value if value.tzinfo else value.replace(tzinfo=UTC)
    if not EARLIEST + timedelta(days=MAX_DAYS) <= value <= LATEST:
        raise ValueError("out of range")
    return value
