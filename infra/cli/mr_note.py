"""`python -m infra mr-note`: post, or update in place, the merge request's one preview note.

It reads the diff (`--preview`: `pulumi preview --diff` output; or `--plan-diff`: `python -m infra
plan-diff` output), the head's plan for the capacity report and warnings (`--plan`), and GitLab CI's
predefined variables for where to post. The token is read from an environment variable, never from a
flag, so it stays out of process lists and job logs: GITLAB_PREVIEW_NOTE_TOKEN (protected) for
`--preview`, GITLAB_NOTE_TOKEN (unprotected, readable by anyone who can push) for `--plan-diff`.
Without a token (a fork's pipeline) the note is printed instead, and the job does not fail.

Before posting, the token is vetted (`infra.review.gitlab_notes.vet_token`): no role above Reporter, no
scope beyond `api`, an expiry within 90 days. A `--preview` note is refused if its token acts as the same
user as GITLAB_NOTE_TOKEN: the unprotected token must never be able to edit the protected job's note.

With the base's plan (`--base-plan`), the note opens with the cost delta, base against head (`review.delta`).

Every input is read within a budget and checked (`infra.review.inputs`): an unreadable diff text or head
plan, a plan field of the wrong type, a stack that is no stack name, a commit that is no SHA exits 2 in one
line; a base plan that cannot be used is said in the note instead (the base may not build). Whatever the
values, the note they make cannot ping, link or restructure (`infra.review.markdown`).
"""

from __future__ import annotations

import argparse
import errno
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from infra.cli import fail
from infra.config.credentials import credential_value
from infra.documents import DocumentError
from infra.review.delta import render_delta
from infra.review.inputs import load_plan, read_input
from infra.review.note import MAX_LINES, NoteInput, has_something_to_say, note_marker, render_no_changes, render_note
from infra.review.schema import STACK_NAME, PlanDocument
from infra.sim.burst import BurstTimeline
from infra.untrusted import printable

COMMIT_SHA = re.compile(r"\A[0-9a-fA-F]{7,64}\Z")
MAX_LINES_CAP = 100_000
MAX_MR_IID = 2**31 - 1
"""GitLab's ids and IIDs are 32-bit integers: a larger (or negative) one is no merge request."""
TOKEN_VARIABLE = "GITLAB_NOTE_TOKEN"
"""The unprotected `plan-diff` job's token (a Reporter project access token that expires)."""
PREVIEW_TOKEN_VARIABLE = "GITLAB_PREVIEW_NOTE_TOKEN"
"""The protected `preview` job's token: another project access token, so another bot user."""


class InputError(ValueError):
    """A flag or CI variable the note cannot use; str() is one line naming it."""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "mr-note", help="post or update the merge request's preview note (one per merge request and stack)"
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--preview", metavar="FILE", help="`pulumi preview --diff` output ('-': stdin)")
    source.add_argument("--plan-diff", metavar="FILE", help="`python -m infra plan-diff` output ('-': stdin)")
    parser.add_argument("--plan", type=Path, metavar="FILE", help="the head's plan --json: capacity report, warnings")
    parser.add_argument(
        "--base-plan",
        type=Path,
        metavar="FILE",
        help="the base's plan --json: the note opens with the cost delta, base against --plan "
        "(an unreadable file is said in the note, not fatal: the base may not build)",
    )
    parser.add_argument("--exit-code", type=int, default=0, help="exit code of the command that wrote the diff")
    parser.add_argument("--stack", help="stack name (default: $PULUMI_STACK, else the plan's stack, else dev)")
    parser.add_argument(
        "--max-lines", type=_max_lines, default=MAX_LINES, help=f"diff lines shown before cutting (1-{MAX_LINES_CAP})"
    )
    parser.add_argument("--dry-run", action="store_true", help="print the note instead of posting it")
    where = parser.add_argument_group("where to post (defaults: GitLab CI's predefined variables)")
    where.add_argument("--gitlab-url", help="GitLab base URL ($CI_SERVER_URL)")
    where.add_argument("--project", help="the merge request's project id or path ($CI_MERGE_REQUEST_PROJECT_ID)")
    where.add_argument("--mr", type=_mr_iid, help="merge request IID ($CI_MERGE_REQUEST_IID)")
    where.add_argument(
        "--head-sha",
        help="commit the diff is for; nothing is written if the MR has moved on "
        "($CI_MERGE_REQUEST_SOURCE_BRANCH_SHA, else $CI_COMMIT_SHA)",
    )
    where.add_argument("--job-url", help="link for the full output ($CI_JOB_URL)")
    where.add_argument(
        "--token-variable",
        help=f"environment variable holding the token ({PREVIEW_TOKEN_VARIABLE} for --preview, "
        f"{TOKEN_VARIABLE} for --plan-diff)",
    )
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    try:
        note, head_sha = read_note(args, env)
    except (DocumentError, InputError) as err:
        return fail(str(err))
    offline = note.offline
    variable = args.token_variable or (TOKEN_VARIABLE if offline else PREVIEW_TOKEN_VARIABLE)
    say = has_something_to_say(note)
    body = render_note(note, max_lines=args.max_lines) if say else render_no_changes(note)
    if args.dry_run:
        sys.stdout.write(body)
        return 0

    url = args.gitlab_url or env.get("CI_SERVER_URL")
    project = args.project or env.get("CI_MERGE_REQUEST_PROJECT_ID")
    mr = args.mr or _int(env.get("CI_MERGE_REQUEST_IID"))
    if not (url and project and mr):
        return fail(
            "not a merge request pipeline: set --gitlab-url, --project and --mr "
            "(CI_SERVER_URL, CI_MERGE_REQUEST_PROJECT_ID, CI_MERGE_REQUEST_IID)"
        )
    token = env.get(variable, "")
    if not token:
        sys.stdout.write(body)
        print(
            f"mr-note: ${printable(variable, None)} is not set (a fork's pipeline has no project variables): "
            "the note above was not posted",
            file=sys.stderr,
        )
        return 0

    # python-gitlab is imported here, not at the top: `python -m infra plan` must not pay for it.
    from infra.gitlab_api import connection_problem, shown_origin  # noqa: PLC0415
    from infra.review.gitlab_notes import (  # noqa: PLC0415
        NoteError,
        Target,
        check_token,
        same_user,
        upsert_note,
        vet_token,
    )

    url_from = "--gitlab-url" if args.gitlab_url else "$CI_SERVER_URL"
    if problem := connection_problem(url, token, url_from, f"${printable(variable, None)}"):
        return fail(problem)
    target = Target(url, project, mr)
    try:
        check_token(token, env.get("CI_JOB_TOKEN"))
        user_id = vet_token(target, token).user_id
        unprotected = env.get(TOKEN_VARIABLE, "")
        if not offline and unprotected and same_user(target, token, user_id, unprotected):
            raise NoteError(
                f"${variable} acts as the same GitLab user as ${TOKEN_VARIABLE}, which any pusher can read and "
                f"which could then edit this protected note; give the preview its own project access token"
            )
        outcome = upsert_note(target, token, note_marker(note), body, user_id=user_id, create=say, head_sha=head_sha)
    except NoteError as err:
        return fail(str(err), 1)
    messages = {
        "created": f"created note {outcome.note_id}",
        "updated": f"updated note {outcome.note_id}",
        "unchanged": f"note {outcome.note_id} already says this",
        "skipped": "nothing to say and no earlier note: nothing posted",
        "stale": f"not written: {outcome.detail}",
    }
    where = f"merge request !{mr} of project {project} on {shown_origin(url)}"  # no userinfo from the URL
    print(printable(f"mr-note: {messages[outcome.action]} ({where})", None))  # `stale` quotes GitLab's answer
    return 0


def read_note(args: argparse.Namespace, env: Mapping[str, str]) -> tuple[NoteInput, str | None]:
    """What the note says, from the files and the CI variables, and the head commit; DocumentError or
    InputError (one line) for an input that cannot be used."""
    if args.base_plan and not args.plan:
        raise InputError("--base-plan: the delta compares it with the head's plan: give --plan too")
    text = read_input(args.preview or args.plan_diff)
    plan, head = load_plan(str(args.plan)) if args.plan else ({}, None)
    # In merged-results pipelines CI_COMMIT_SHA is a merge commit; the MR's own head is the source sha.
    head_sha, sha_from = _first(
        (args.head_sha, "--head-sha"),
        (env.get("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA"), "$CI_MERGE_REQUEST_SOURCE_BRANCH_SHA"),
        (env.get("CI_COMMIT_SHA"), "$CI_COMMIT_SHA"),
    )
    if head_sha and not COMMIT_SHA.fullmatch(head_sha):
        raise InputError(f"{sha_from} {head_sha[:60]!r}: not a commit SHA (7 to 64 hexadecimal digits)")
    stack, stack_from = _first(
        (args.stack, "--stack"), (env.get("PULUMI_STACK"), "$PULUMI_STACK"), (head.stack if head else None, "")
    )
    if stack and not STACK_NAME.fullmatch(stack):  # it is in the note's hidden marker
        raise InputError(f"{stack_from} {stack[:60]!r}: not a stack name (letters, digits, '-', '_', '.')")
    if stack and (what := credential_value(stack)):  # the marker is not escaped: it must not carry one
        raise InputError(
            f"{stack_from or f'--plan {args.plan}: stack'}: the stack name looks like {what}, not a stack name"
        )
    delta, base = _delta(args.base_plan, plan) if args.base_plan else ((), None)
    note = NoteInput(
        stack=stack or "dev",
        text=text,
        offline=args.plan_diff is not None,
        exit_code=args.exit_code,
        report=head.report if head else None,
        warnings=tuple(head.warnings) if head else (),
        commit=head_sha[:8] if head_sha else None,
        job_url=args.job_url or env.get("CI_JOB_URL"),
        delta=delta,
        bursts=_bursts(base, head),
    )
    return note, head_sha


def _first(*candidates: tuple[str | None, str]) -> tuple[str | None, str]:
    """The first value that is set, and where it came from (a flag or a variable), for the messages."""
    return next(((value, source) for value, source in candidates if value), (None, ""))


def _delta(base_plan: Path, head: Mapping[str, Any]) -> tuple[tuple[str, ...], PlanDocument | None]:
    """The cost delta, and the base's plan when it could be read; a base plan that cannot be used is named in the
    note rather than failing it."""
    try:
        missing = not base_plan.exists() and not base_plan.is_symlink()
    except OSError:  # unreadable: load_plan says why
        missing = False
    if missing:  # the base did not build: the common case
        no_base = f"no base plan ({base_plan}: {os.strerror(errno.ENOENT)})"
        return tuple(render_delta(None, head, no_base=no_base)), None
    try:
        base, model = load_plan(str(base_plan))
    except DocumentError as err:
        return tuple(render_delta(None, head, no_base=f"no base plan ({err})")), None
    return tuple(render_delta(base, head)), model


def _bursts(base: PlanDocument | None, head: PlanDocument | None) -> tuple[tuple[str, BurstTimeline], ...]:
    """The busiest burst of each side's week that the plan carries (`outputs.cost.burst`, validated)."""
    found = []
    for side, plan in (("base", base), ("head", head)):
        cost = plan.outputs.cost if plan is not None else None
        if cost is not None and cost.burst is not None:
            found.append((side, BurstTimeline.from_json(cost.burst.model_dump(by_alias=True))))
    return tuple(found)


def _max_lines(value: str) -> int:
    return _count(value, MAX_LINES_CAP)


def _mr_iid(value: str) -> int:
    return _count(value, MAX_MR_IID)


def _count(value: str, most: int) -> int:
    """A whole number from 1 to `most`; ArgumentTypeError quoting at most 20 characters of anything else (a
    value of 5,000 digits would otherwise be quoted whole, or int() refuse it)."""
    text = value.strip()
    if not (text.isascii() and text.isdigit() and len(text) <= len(str(most)) and 1 <= int(text) <= most):
        shown = value if len(value) <= 20 else value[:19] + "…"
        raise argparse.ArgumentTypeError(f"{shown!r} is not a whole number from 1 to {most}")
    return int(text)


def _int(value: str | None) -> int | None:
    return int(value) if value and value.isascii() and value.isdigit() else None
