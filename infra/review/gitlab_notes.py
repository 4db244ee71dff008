"""Post the MR note through python-gitlab: find ours by its marker, update it in place, or create it.

Thin on purpose: what to say is decided in `infra.review.note`; this only talks to GitLab's REST API
(`GET /user`, `GET` the merge request, list/create/update its notes) and turns a refusal into one line
that says what to fix. Posting needs a token with the `api` scope: CI_JOB_TOKEN cannot post notes
(gitlab-org/gitlab#464591), and a `read_api` token is refused with 403 `insufficient_scope`.

Least trust: the token of the unprotected `plan-diff` job is readable by anyone who can push a branch,
so before posting, `vet_token` refuses a token that could do more than comment: a role above Reporter
on the project (`GET /projects/:id/members/all/:user_id`), a scope beyond `api`/`read_api`, no expiry or
one more than 90 days away (`GET /personal_access_tokens/self`). The protected `preview` job posts with
its own token, as another user (`same_user` checks), so the unprotected token can never edit its note.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Final
from urllib.parse import quote

import gitlab
import requests
from gitlab.exceptions import GitlabAuthenticationError, GitlabError, GitlabParsingError

from infra.gitlab_api import BadAnswer, RefusedAnswer, connect, get_object, gitlab_status, kind_of, list_pages

JOB_TOKEN_PREFIX: Final = "glcbt-"
"""CI job tokens carry this prefix (GitLab 17.x and later); they cannot post MR notes."""
TOKEN_ADVICE: Final = (
    "use a project access token with role Reporter, scope `api` and an expiry within 90 days, stored as a "
    "masked CI/CD variable (docs/security.md)"
)
REPORTER: Final = 20
"""GitLab's access level of the Reporter role: may comment, may not push, merge or read CI/CD variables."""
ROLES: Final = {10: "Guest", 15: "Planner", 20: "Reporter", 30: "Developer", 40: "Maintainer", 50: "Owner"}
MAX_TOKEN_DAYS: Final = 90
NOTE_SCOPES: Final = frozenset({"api", "read_api", "self_rotate"})
"""Scopes a note token may carry: `api` to post; `self_rotate` lets it rotate itself. Nothing that writes code."""


class NoteError(Exception):
    """GitLab refused or could not be reached; the message is one line that says what to fix."""


@dataclass(frozen=True)
class Target:
    """Where the note goes: the merge request `mr_iid` of `project` (numeric id or `group/name`)."""

    url: str
    project: str
    mr_iid: int

    def describe(self) -> str:
        return f"merge request !{self.mr_iid} of project {self.project} on {self.url}"


@dataclass(frozen=True)
class Outcome:
    action: str
    """`created`, `updated`, `unchanged` (same text), `skipped` (nothing to say, no note yet) or `stale`."""
    note_id: int | None = None
    detail: str = ""


def check_token(token: str, job_token: str | None = None) -> None:
    """Refuse a CI job token up front: GitLab would answer 401 and the reason would be lost."""
    if (job_token and token == job_token) or token.startswith(JOB_TOKEN_PREFIX):
        raise NoteError(f"the token is a CI job token, which cannot post merge-request notes; {TOKEN_ADVICE}")


@dataclass(frozen=True)
class TokenFacts:
    """What GitLab says about a token: its user, scopes, expiry and role on the project (None: not a member)."""

    user_id: int
    scopes: tuple[str, ...]
    expires_at: date | None
    access_level: int | None
    active: bool = True


def judge_token(facts: TokenFacts, today: date, max_days: int = MAX_TOKEN_DAYS) -> str | None:
    """Why a note token may not be used (one line), or None. Pure: `vet_token` asks GitLab for the facts."""
    if not facts.active:
        return "the token is revoked or inactive"
    extra = sorted(set(facts.scopes) - NOTE_SCOPES)
    if extra:
        return f"the token has scopes {extra} besides `api`: a note token needs nothing else"
    if facts.access_level is None:
        return "the token's user is not a member of the project (role Reporter is needed to comment)"
    if facts.access_level > REPORTER:
        role = ROLES.get(facts.access_level, f"access level {facts.access_level}")
        return (
            f"the token's role on the project is {role} ({facts.access_level}), above Reporter: anyone who can "
            "push a branch can read this token, so it must not be able to push, merge or read variables"
        )
    if facts.expires_at is None:
        return "the token never expires"
    if facts.expires_at > today + timedelta(days=max_days):
        return f"the token expires on {facts.expires_at.isoformat()}, more than {max_days} days from now"
    return None


def vet_token(target: Target, token: str, today: date | None = None) -> TokenFacts:
    """Ask GitLab about the token, and refuse (NoteError) one that could do more than comment."""
    client = _client(target, token)
    with _translated(target):
        facts = _token_facts(client, target)
    reason = judge_token(facts, today or datetime.now(UTC).date())
    if reason:
        raise NoteError(f"{reason}; {TOKEN_ADVICE}")
    return facts


def same_user(target: Target, token: str, user_id: int, other: str) -> bool:
    """Whether `other` acts as the user `user_id` of `token` (as `vet_token` found it); False if `other` is
    refused: it can edit nothing. An answer that does not say who it is is refused (NoteError), not read as
    another user."""
    if token == other:
        return True
    with _translated(target):
        try:
            theirs = get_object(_client(target, other), "/user", "GET /user with the other token")
        except GitlabError:
            return False
        return _answer_id(theirs.get("id"), "GET /user with the other token: id") == user_id


def _token_facts(client: gitlab.Gitlab, target: Target) -> TokenFacts:
    """The facts of `judge_token`, each field checked: an answer of another shape is refused (BadAnswer), never
    read as a harmless default (an `active: "false"` is not an active token)."""
    what = "GET /personal_access_tokens/self"
    me = get_object(client, "/personal_access_tokens/self", what)
    user_id = _answer_id(me.get("user_id"), f"{what}: user_id")
    scopes = me.get("scopes")
    if not isinstance(scopes, list) or not all(isinstance(s, str) and len(s) <= 100 for s in scopes):
        raise BadAnswer(f"GitLab's answer for {what}: scopes is {kind_of(scopes)}, not a list of names")
    try:
        path = f"/projects/{quote(target.project, safe='')}/members/all/{user_id}"
        membership = f"the token's user's membership of project {target.project}"
        member = get_object(client, path, membership)
        level: int | None = _answer_id(member.get("access_level"), f"{membership}: access_level")
    except GitlabError as err:
        if err.response_code != 404:
            raise
        level = None
    return TokenFacts(
        user_id=user_id,
        scopes=tuple(scopes),
        expires_at=_answer_date(me.get("expires_at"), f"{what}: expires_at"),
        access_level=level,
        active=_answer_flag(me.get("active", True), f"{what}: active")
        and not _answer_flag(me.get("revoked", False), f"{what}: revoked"),
    )


def _answer_id(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 63:
        raise BadAnswer(f"GitLab's answer for {what} is {kind_of(value)}, not a whole number")
    return value


def _answer_flag(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise BadAnswer(f"GitLab's answer for {what} is {kind_of(value)}, not true or false")
    return value


def _answer_date(value: object, what: str) -> date | None:
    """A date (`2026-12-31`, or a time whose first ten characters are one), or None: never expires."""
    if value is None:
        return None
    try:
        if not isinstance(value, str):
            raise ValueError
        return date.fromisoformat(value[:10])
    except ValueError:
        raise BadAnswer(f"GitLab's answer for {what} is {kind_of(value)}, not a date like 2026-12-31") from None


def _head_sha(client: gitlab.Gitlab, target: Target) -> str | None:
    """The merge request's head commit, or None when GitLab does not say (an MR with no commit yet)."""
    answer = get_object(client, _mr_path(target), target.describe())
    sha = answer.get("sha")
    if sha is not None and not (isinstance(sha, str) and re.fullmatch(r"[0-9a-f]{7,64}", sha)):
        raise BadAnswer(f"GitLab's answer for {target.describe()}: sha is {kind_of(sha)}, not a commit id")
    return sha


def _mr_path(target: Target) -> str:
    return f"/projects/{quote(target.project, safe='')}/merge_requests/{target.mr_iid}"


def _client(target: Target, token: str) -> gitlab.Gitlab:
    return connect(target.url, private_token=token, retry_transient_errors=True)


@contextmanager
def _translated(target: Target) -> Iterator[None]:
    """GitLab's refusals as one NoteError line that says what to fix."""
    try:
        yield
    except GitlabAuthenticationError as err:
        raise NoteError(
            f"GitLab rejected the token ({gitlab_status(err)}): expired, revoked or mistyped; {TOKEN_ADVICE}"
        ) from None
    except GitlabParsingError:
        raise NoteError(f"GitLab's answer on {target.describe()} is not the object asked for") from None
    except GitlabError as err:
        raise NoteError(explain(err, target)) from None
    except RefusedAnswer as err:  # another host, an answer over budget, a lasting 429, paging in circles
        raise NoteError(str(err)) from None
    except requests.RequestException as err:
        raise NoteError(f"cannot reach GitLab at {target.url}: {err}") from None


def upsert_note(
    target: Target, token: str, marker: str, body: str, *, user_id: int, create: bool, head_sha: str | None = None
) -> Outcome:
    """Update our note (the oldest one of ours whose body starts with `marker`), or create it if `create`.

    Ours: written by `user_id`, the token's user (`vet_token` tells it). Notes by other users are never
    touched, even if they quote the marker. When `head_sha` is given and
    the merge request has moved on to a newer commit, nothing is written: a slower, older pipeline must
    not overwrite the newer pipeline's note.
    """
    client = _client(target, token)
    with _translated(target):
        sha = _head_sha(client, target)  # also: the merge request exists, before its notes are read
        if head_sha and sha and sha != head_sha:
            return Outcome("stale", detail=f"the merge request is at {sha[:12]} now, this pipeline ran {head_sha[:12]}")
        notes = list_pages(
            client,
            f"{_mr_path(target)}/notes",
            {"per_page": 100, "sort": "asc", "order_by": "created_at"},
            what=f"the notes of {target.describe()}",
        )
        ours = [note for page in notes for note in page if _ours(note, user_id, marker)]
        mr = client.projects.get(target.project, lazy=True).mergerequests.get(target.mr_iid, lazy=True)
        if not ours:
            if not create:
                return Outcome("skipped")
            created = mr.notes.create({"body": body})
            return Outcome("created", _answer_id(created.attributes.get("id"), "the note created: id"))
        note = ours[0]
        if note["body"] == body:
            return Outcome("unchanged", note["id"])
        mr.notes.update(note["id"], {"body": body})
        return Outcome("updated", note["id"])


def _ours(note: object, user_id: int, marker: str) -> bool:
    """A note of the list (an entry GitLab answered, any shape) written by `user_id` that starts with `marker`."""
    if not isinstance(note, dict) or note.get("system") is not False:
        return False
    author, body, note_id = note.get("author"), note.get("body"), note.get("id")
    return (
        isinstance(author, dict)
        and author.get("id") == user_id
        and isinstance(body, str)
        and body.startswith(marker)
        and isinstance(note_id, int)
        and not isinstance(note_id, bool)
    )


def explain(err: GitlabError, target: Target) -> str:
    """One line for an HTTP refusal: missing scope, missing role, unknown MR, or what GitLab said."""
    message = gitlab_status(err)
    body = err.response_body.decode("utf-8", "replace") if isinstance(err.response_body, bytes) else ""
    if err.response_code == 403 and "insufficient_scope" in f"{message} {body}":
        return (
            "the token lacks the `api` scope (GitLab answered 403 insufficient_scope): reading notes needs "
            f"`read_api`, posting them needs `api`; {TOKEN_ADVICE}"
        )
    if err.response_code == 403:
        return (
            f"GitLab refused ({message}) on {target.describe()}: the token's user may not comment there "
            f"(role Reporter or higher is needed); {TOKEN_ADVICE}"
        )
    if err.response_code == 404:
        return f"{target.describe()} not found, or not visible to the token ({message})"
    return f"GitLab answered {message} on {target.describe()}"
