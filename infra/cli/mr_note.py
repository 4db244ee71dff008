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
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from infra.review.delta import render_delta
from infra.review.note import MAX_LINES, NoteInput, has_something_to_say, note_marker, render_no_changes, render_note

TOKEN_VARIABLE = "GITLAB_NOTE_TOKEN"
"""The unprotected `plan-diff` job's token (a Reporter project access token that expires)."""
PREVIEW_TOKEN_VARIABLE = "GITLAB_PREVIEW_NOTE_TOKEN"
"""The protected `preview` job's token: another project access token, so another bot user."""


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
    parser.add_argument("--max-lines", type=int, default=MAX_LINES, help="diff lines shown before truncating")
    parser.add_argument("--dry-run", action="store_true", help="print the note instead of posting it")
    where = parser.add_argument_group("where to post (defaults: GitLab CI's predefined variables)")
    where.add_argument("--gitlab-url", help="GitLab base URL ($CI_SERVER_URL)")
    where.add_argument("--project", help="the merge request's project id or path ($CI_MERGE_REQUEST_PROJECT_ID)")
    where.add_argument("--mr", type=int, help="merge request IID ($CI_MERGE_REQUEST_IID)")
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
        text = _read_text(args.preview or args.plan_diff)
        plan = json.loads(args.plan.read_text(encoding="utf-8")) if args.plan else {}
        if not isinstance(plan, dict):
            raise ValueError(f"{args.plan}: not a plan document (python -m infra plan --json)")
        if args.base_plan and not args.plan:
            raise ValueError("--base-plan: the delta compares it with the head's plan: give --plan too")
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    # In merged-results pipelines CI_COMMIT_SHA is a merge commit; the MR's own head is the source sha.
    head_sha = args.head_sha or env.get("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA") or env.get("CI_COMMIT_SHA")
    stack = args.stack or env.get("PULUMI_STACK") or plan.get("stack") or "dev"
    offline = args.plan_diff is not None
    variable = args.token_variable or (TOKEN_VARIABLE if offline else PREVIEW_TOKEN_VARIABLE)
    note = NoteInput(
        stack=stack,
        text=text,
        offline=offline,
        exit_code=args.exit_code,
        report=plan.get("report"),
        warnings=tuple(plan.get("warnings") or ()),
        commit=head_sha[:8] if head_sha else None,
        job_url=args.job_url or env.get("CI_JOB_URL"),
        delta=_delta(args.base_plan, plan) if args.base_plan else (),
    )
    say = has_something_to_say(note)
    body = render_note(note, max_lines=args.max_lines) if say else render_no_changes(note)
    if args.dry_run:
        sys.stdout.write(body)
        return 0

    url = args.gitlab_url or env.get("CI_SERVER_URL")
    project = args.project or env.get("CI_MERGE_REQUEST_PROJECT_ID")
    mr = args.mr or _int(env.get("CI_MERGE_REQUEST_IID"))
    if not (url and project and mr):
        print(
            "error: not a merge request pipeline: set --gitlab-url, --project and --mr "
            "(CI_SERVER_URL, CI_MERGE_REQUEST_PROJECT_ID, CI_MERGE_REQUEST_IID)",
            file=sys.stderr,
        )
        return 2
    token = env.get(variable, "")
    if not token:
        sys.stdout.write(body)
        print(
            f"mr-note: ${variable} is not set (a fork's pipeline has no project variables): "
            "the note above was not posted",
            file=sys.stderr,
        )
        return 0

    # python-gitlab is imported here, not at the top: `python -m infra plan` must not pay for it.
    from infra.review.gitlab_notes import (  # noqa: PLC0415
        NoteError,
        Target,
        check_token,
        same_user,
        upsert_note,
        vet_token,
    )

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
        print(f"error: {err}", file=sys.stderr)
        return 1
    messages = {
        "created": f"created note {outcome.note_id}",
        "updated": f"updated note {outcome.note_id}",
        "unchanged": f"note {outcome.note_id} already says this",
        "skipped": "nothing to say and no earlier note: nothing posted",
        "stale": f"not written: {outcome.detail}",
    }
    print(f"mr-note: {messages[outcome.action]} ({target.describe()})")
    return 0


def _delta(base_plan: Path, head: dict[str, object]) -> tuple[str, ...]:
    """The cost delta; a base plan that cannot be read is named in the note rather than failing it."""
    try:
        base = json.loads(base_plan.read_text(encoding="utf-8"))
    except OSError as err:
        return tuple(render_delta(None, head, no_base=f"no base plan ({base_plan}: {err.strerror or err})"))
    except ValueError as err:
        return tuple(render_delta(None, head, no_base=f"no base plan ({base_plan} is not JSON: {err})"))
    if not isinstance(base, dict):
        return tuple(render_delta(None, head, no_base=f"no base plan ({base_plan} is not a plan document)"))
    return tuple(render_delta(base, head))


def _read_text(name: str) -> str:
    return sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")


def _int(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None
