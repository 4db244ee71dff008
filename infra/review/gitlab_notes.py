"""Post the MR note through python-gitlab: find ours by its marker, update it in place, or create it.

Thin on purpose: what to say is decided in `infra.review.note`; this only talks to GitLab's REST API
(`GET /user`, `GET` the merge request, list/create/update its notes) and turns a refusal into one line
that says what to fix. Posting needs a token with the `api` scope: CI_JOB_TOKEN cannot post notes
(gitlab-org/gitlab#464591), and a `read_api` token is refused with 403 `insufficient_scope`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import gitlab
import requests
from gitlab.exceptions import GitlabAuthenticationError, GitlabError

JOB_TOKEN_PREFIX: Final = "glcbt-"
"""CI job tokens carry this prefix (GitLab 17.x and later); they cannot post MR notes."""
TOKEN_ADVICE: Final = (
    "use a project access token with role Reporter and scope `api`, stored as a masked CI/CD variable "
    "(docs/operations.md: 'Bootstrap, once')"
)


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


def upsert_note(
    target: Target, token: str, marker: str, body: str, *, create: bool, head_sha: str | None = None
) -> Outcome:
    """Update our note (the oldest one of ours whose body starts with `marker`), or create it if `create`.

    Notes by other users are never touched, even if they quote the marker. When `head_sha` is given and
    the merge request has moved on to a newer commit, nothing is written: a slower, older pipeline must
    not overwrite the newer pipeline's note.
    """
    client = gitlab.Gitlab(target.url, private_token=token, timeout=30, retry_transient_errors=True)
    try:
        client.auth()
        assert client.user is not None
        me = client.user.id
        mr = client.projects.get(target.project, lazy=True).mergerequests.get(target.mr_iid)
        if head_sha and mr.sha and mr.sha != head_sha:
            return Outcome(
                "stale", detail=f"the merge request is at {mr.sha[:12]} now, this pipeline ran {head_sha[:12]}"
            )
        ours = [
            note
            for note in mr.notes.list(iterator=True, per_page=100, sort="asc", order_by="created_at")
            if not note.system and note.author["id"] == me and note.body.startswith(marker)
        ]
        if not ours:
            if not create:
                return Outcome("skipped")
            return Outcome("created", mr.notes.create({"body": body}).id)
        note = ours[0]
        if note.body == body:
            return Outcome("unchanged", note.id)
        mr.notes.update(note.id, {"body": body})
        return Outcome("updated", note.id)
    except GitlabAuthenticationError as err:
        raise NoteError(
            f"GitLab rejected the token ({_status(err)}): expired, revoked or mistyped; {TOKEN_ADVICE}"
        ) from None
    except GitlabError as err:
        raise NoteError(explain(err, target)) from None
    except requests.RequestException as err:
        raise NoteError(f"cannot reach GitLab at {target.url}: {err}") from None


def explain(err: GitlabError, target: Target) -> str:
    """One line for an HTTP refusal: missing scope, missing role, unknown MR, or what GitLab said."""
    message = _status(err)
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


def _status(err: GitlabError) -> str:
    """`403 Forbidden`, `403 insufficient_scope`: the code once, then GitLab's message."""
    message = err.error_message
    text = message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)
    code = str(err.response_code)
    return text if text.startswith(code) else f"{code} {text}".strip()
