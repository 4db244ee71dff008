"""Read a project's recent jobs through python-gitlab (`GET /projects/:id`, then `GET /projects/:id/jobs`).

GitLab lists a project's jobs newest first (descending id), page by page (`page`/`per_page`, a `Link`
header with rel="next"); reading stops at the first job created before the window. The jobs list is
rate-limited by GitLab: a 429 is waited out as its `Retry-After` says, a few times at most, with one
line on stderr each time. Every refusal becomes a `ReadError` whose message is one line saying what to do.
Imported only by `python -m infra workload`: python-gitlab is slow to import.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TextIO

import gitlab
import requests
from gitlab.exceptions import GitlabAuthenticationError, GitlabError

from infra.gitlab_api import OffHostRequest, connect, gitlab_status
from infra.workload.measure import FINISHED, parse_time

SCOPES = tuple(sorted(FINISHED))
"""Job statuses read: the ones that ran (or failed to). Skipped, manual and created jobs are not load."""
SCOPE_ADVICE = "reading a project's jobs needs a token with the `read_api` scope and role Reporter or higher"
MAX_RETRIES = 5
MAX_WAIT_SECONDS = 120


class ReadError(Exception):
    """GitLab refused, could not be reached, or kept rate-limiting; `exit_code` 2: fix the input, 1: try later."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class History:
    """The jobs read, newest first, and what was learnt about the project on the way."""

    project: str
    created_at: datetime | None
    jobs: list[dict[str, Any]] = field(default_factory=list)
    pages: int = 0
    runner_tags: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """Tags of the runners that ran the jobs, where the token may read them (`GET /runners/:id`)."""
    runner_note: str = ""
    """Why runner tags are missing, if they are."""


class Progress:
    """One status line on stderr while paging: rewritten in place on a terminal, one line per page otherwise."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.shown = False

    def __call__(self, text: str) -> None:
        if self.tty:
            self.stream.write(f"\r\033[K{text}")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self.shown = True

    def say(self, text: str) -> None:
        """A line of its own (a rate-limit notice), not overwritten by the next status."""
        self.done()
        self.stream.write(text + "\n")
        self.stream.flush()

    def done(self) -> None:
        if self.tty and self.shown:
            self.stream.write("\n")
            self.stream.flush()
        self.shown = False


class _RateLimitNotice:
    """A requests response hook: says on stderr that GitLab rate-limits and how long python-gitlab will wait."""

    def __init__(self, say: Callable[[str], None], max_retries: int, max_wait: int) -> None:
        self.say, self.max_retries, self.max_wait = say, max_retries, max_wait
        self.in_row = 0

    def __call__(self, response: requests.Response, *args: Any, **kwargs: Any) -> requests.Response:
        if response.status_code != 429:
            self.in_row = 0
            return response
        self.in_row += 1
        if self.in_row > self.max_retries:
            return response  # python-gitlab gives up now: GitlabHttpError 429
        after = response.headers.get("Retry-After", "")
        if after.isdigit() and int(after) > self.max_wait:
            raise ReadError(
                f"GitLab's rate limit (HTTP 429) asks to wait {after} s, more than {self.max_wait} s: try again later",
                exit_code=1,
            )
        wait = f"{after} s as Retry-After asks" if after.isdigit() else "a moment"
        self.say(
            f"GitLab rate limit (HTTP 429) on {response.request.path_url.split('?')[0]}: waiting {wait}, "
            f"then retrying ({self.in_row} of at most {self.max_retries})"
        )
        return response


def read_history(
    url: str,
    project: str,
    token: str,
    since: datetime,
    *,
    progress: Progress | None = None,
    per_page: int = 100,
    max_retries: int = MAX_RETRIES,
    max_wait: int = MAX_WAIT_SECONDS,
) -> History:
    """The project's jobs created since `since` (and the first older page's remainder), newest first."""
    progress = progress or Progress()
    notice = _RateLimitNotice(progress.say, max_retries, max_wait)
    client = connect(url, private_token=token, hooks=[notice])
    try:
        remote = client.projects.get(project, max_retries=max_retries)
        created = remote.attributes.get("created_at")
        history = History(
            str(remote.attributes.get("path_with_namespace") or project), parse_time(created) if created else None
        )
        listing = remote.jobs.list(iterator=True, per_page=per_page, scope=list(SCOPES), max_retries=max_retries)
        for job in listing:
            attributes = job.attributes
            history.jobs.append(attributes)
            oldest = parse_time(attributes["created_at"])
            if len(history.jobs) % per_page == 1 or per_page == 1:
                # Every page but the last holds `per_page` jobs: this is the first job of a new page.
                history.pages += 1
                progress(
                    f"reading jobs of {history.project}: page {history.pages}, "
                    f"back to {oldest:%Y-%m-%d %H:%M} UTC ({len(history.jobs) - 1} jobs read)"
                )
            if oldest < since:
                break
        _read_runner_tags(client, history, max_retries)
        return history
    except GitlabAuthenticationError as err:
        raise ReadError(
            f"GitLab rejected the token ({gitlab_status(err)}): expired, revoked or mistyped; {SCOPE_ADVICE}"
        ) from None
    except GitlabError as err:
        raise ReadError(*_explain(err, url, project, max_retries)) from None
    except OffHostRequest as err:
        raise ReadError(str(err)) from None
    except requests.RequestException as err:
        raise ReadError(f"cannot reach GitLab at {url}: {err}", exit_code=1) from None
    finally:
        progress.done()


def _read_runner_tags(client: gitlab.Gitlab, history: History, max_retries: int) -> None:
    """Each runner's tags (one request per runner): with one runner per pool they name the pool.

    GitLab shows a project runner's details to Maintainers only; a Reporter's token gets 403, and the
    runners are then known by their description alone (the job list carries no runner tags).
    """
    ids = sorted({job["runner"]["id"] for job in history.jobs if job.get("runner") and "id" in job["runner"]})
    refused: list[tuple[int | None, str]] = []
    for runner_id in ids:
        try:
            runner = client.runners.get(runner_id, max_retries=max_retries)
        except GitlabError as err:
            if err.response_code not in (403, 404):
                raise
            refused.append((err.response_code, gitlab_status(err)))
            continue
        history.runner_tags[runner_id] = tuple(runner.attributes.get("tag_list") or ())
    if refused:
        why = "; GitLab shows a project runner's details to Maintainers" if any(c == 403 for c, _ in refused) else ""
        history.runner_note = (
            f"the tags of {len(refused)} of {len(ids)} runners are not readable ({refused[0][1]}{why}): "
            "those runners are known by their description"
        )


def _explain(err: GitlabError, url: str, project: str, max_retries: int) -> tuple[str, int]:
    message = gitlab_status(err)
    body = err.response_body.decode("utf-8", "replace") if isinstance(err.response_body, bytes) else ""
    if err.response_code == 403 and "insufficient_scope" in f"{message} {body}":
        return f"the token lacks the `read_api` scope (GitLab answered 403 insufficient_scope): {SCOPE_ADVICE}", 2
    if err.response_code == 403:
        return f"GitLab refused to list the jobs of {project} ({message}): {SCOPE_ADVICE}", 2
    if err.response_code == 404:
        return f"project {project} not found on {url}, or not visible to the token ({message})", 2
    if err.response_code == 429:
        return f"GitLab still rate-limits (HTTP 429) after {max_retries} retries: try again later", 1
    return f"GitLab answered {message} for project {project} on {url}", 1
