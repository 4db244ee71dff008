"""Read a project's recent jobs through python-gitlab (`GET /projects/:id`, then `GET /projects/:id/jobs`).

GitLab lists a project's jobs newest first (descending id), page by page (`page`/`per_page`, a `Link`
header with rel="next"); reading stops at the first page that reaches back before the window. Where a job's
entry does not say its pipeline's source (GitLab before `PipelineBasic` carried it), the pipeline is asked for
(`GET /projects/:id/pipelines/:id`, once per pipeline, within a budget). The client
(`infra.gitlab_api`) bounds every answer, the pages and the 429 waits, and sends the token to the configured
host only; the entries are checked one by one (`job_entries.Ledger`). Every refusal becomes a `ReadError`
whose message is one line saying what to do. Imported only by `python -m infra workload`: python-gitlab is
slow to import.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO
from urllib.parse import quote

import gitlab
import requests
from gitlab.exceptions import GitlabAuthenticationError, GitlabError

from infra.documents import printable
from infra.gitlab_api import (
    MAX_PAGES,
    MAX_PIPELINE_LOOKUPS,
    MAX_REQUESTS,
    MAX_RETRIES,
    BadAnswer,
    PinnedSession,
    RefusedAnswer,
    connect,
    get_object,
    gitlab_status,
    list_pages,
)
from infra.workload.gitlab_traces import Traces, read_traces
from infra.workload.job_entries import MAX_TEXT, FieldError, Job, Ledger, aware_time, pipeline_source, tag_list
from infra.workload.measure import FINISHED

SCOPES = tuple(sorted(FINISHED))
"""Job statuses read: the ones that ran (or failed to). Skipped, manual and created jobs are not load."""
SCOPE_ADVICE = "reading a project's jobs needs a token with the `read_api` scope and role Reporter or higher"
MAX_RUNNER_LOOKUPS = 64
"""Runners whose tags are asked for (`GET /runners/:id`), those that ran the most jobs first; one per pool is
what the platform has (at most 32 pools)."""


Wanted = Callable[[Job, Mapping[int, tuple[str, ...]]], bool]
"""Whether a job's class matters (a training job of the window), given the runners' tags."""


class ReadError(Exception):
    """GitLab refused, could not be reached, or kept rate-limiting; `exit_code` 2: fix the input, 1: try later."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class History:
    """The jobs read, newest first, and what was learnt about the project on the way."""

    project: str
    """The project's path as GitLab names it (or as given, if GitLab's answer does not say), escaped."""
    created_at: datetime | None
    jobs: list[Job] = field(default_factory=list)
    pages: int = 0
    runner_tags: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """Tags of the runners that ran the jobs, where the token may read them (`GET /runners/:id`)."""
    runner_note: str = ""
    """Why runner tags are missing, if they are."""
    pipeline_sources: dict[int, str] = field(default_factory=dict)
    """Sources of the pipelines asked for one by one (their jobs' entries did not say)."""
    pipeline_note: str = ""
    """Why some pipelines' sources are missing, if they are."""
    traces: Traces = field(default_factory=Traces)
    """The prepare times the training jobs' traces tell (`gitlab_traces`)."""
    ledger: Ledger = field(default_factory=Ledger)
    """What was skipped from GitLab's answers, and why."""


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


def read_history(
    url: str,
    project: str,
    token: str,
    since: datetime,
    *,
    progress: Progress | None = None,
    per_page: int = 100,
    max_pages: int | None = None,
    wants_source: Wanted | None = None,
    wants_trace: Wanted | None = None,
    now: datetime | None = None,
) -> History:
    """The project's jobs created since `since` (and the first older page's remainder), newest first; at most
    `max_pages` pages (default MAX_PAGES). `wants_source(job, runner_tags)`: the jobs whose pipeline's source
    matters, asked for where their entries lack it (default: none); `wants_trace`: the jobs whose trace's start
    is read for their prepare time (default: none), after the sources, within what the run has left."""
    progress = progress or Progress()
    client = connect(url, private_token=token, notice=progress.say)
    shown = printable(project, 120)
    try:
        answer = get_object(client, f"/projects/{quote(project, safe='')}", f"project {shown}")
        history, project_path = _project(answer, project)
        pages = list_pages(
            client,
            f"{project_path}/jobs",
            {"scope[]": list(SCOPES), "per_page": per_page},
            what=f"GitLab's list of the jobs of {history.project}",
            advice="read a shorter window (--days, --until)",
            max_pages=max_pages or MAX_PAGES,
        )
        for number, page in enumerate(pages, 1):
            jobs = [job for entry in page if (job := history.ledger.read(entry)) is not None]
            history.pages = number
            if page:
                back = f", back to {jobs[0].created_at:%Y-%m-%d %H:%M} UTC" if jobs else ", no usable job on it"
                progress(f"reading jobs of {history.project}: page {number}{back} ({len(history.jobs)} jobs read)")
            history.jobs += jobs
            if any(job.created_at < since for job in jobs):
                break
        _read_runner_tags(client, history)
        if wants_source is not None:
            _read_pipeline_sources(client, history, project_path, wants_source, progress)
        if wants_trace is not None:
            ran = [job for job in history.jobs if job.started_at is not None and wants_trace(job, history.runner_tags)]
            history.traces = read_traces(client, project_path, ran, now or datetime.now(UTC), progress)
        return history
    except GitlabAuthenticationError as err:
        raise ReadError(
            f"GitLab rejected the token ({gitlab_status(err)}): expired, revoked or mistyped; {SCOPE_ADVICE}"
        ) from None
    except GitlabError as err:
        raise ReadError(*_explain(err, url, shown)) from None
    except RefusedAnswer as err:
        raise ReadError(str(err), err.exit_code) from None
    except requests.RequestException as err:
        raise ReadError(f"cannot reach GitLab at {url}: {printable(str(err))}", exit_code=1) from None
    finally:
        progress.done()


def _project(answer: dict[str, Any], asked: str) -> tuple[History, str]:
    """The project's path, creation time and API path, each from its answer where sound (else dropped: the
    project is then named, and its jobs asked for, as it was asked for)."""
    ledger = Ledger()
    path = answer.get("path_with_namespace")
    if not (isinstance(path, str) and 0 < len(path) <= MAX_TEXT):
        ledger.drop("project path_with_namespace: not a string of at most 1024 characters")
        path = asked
    created: datetime | None = None
    if answer.get("created_at") is not None:
        try:
            created = aware_time(answer["created_at"], "project created_at")
        except FieldError as bad:
            ledger.drop(str(bad))
    project_id = answer.get("id")
    if isinstance(project_id, bool) or not isinstance(project_id, int) or project_id <= 0:
        ledger.drop("project id: not a positive integer")
        api_path = f"/projects/{quote(asked, safe='')}"
    else:
        api_path = f"/projects/{project_id}"
    return History(printable(path, 120), created, ledger=ledger), api_path


def _read_runner_tags(client: gitlab.Gitlab, history: History) -> None:
    """Each runner's tags (one request per runner): with one runner per pool they name the pool.

    GitLab shows a project runner's details to Maintainers only; a Reporter's token gets 403, and the
    runners are then known by their description alone (the job list carries no runner tags).
    """
    counts = Counter(job.runner_id for job in history.jobs if job.runner_id is not None)
    ids = [runner_id for runner_id, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]
    refused: list[tuple[int | None, str]] = []
    for runner_id in ids[:MAX_RUNNER_LOOKUPS]:
        try:
            runner = get_object(client, f"/runners/{runner_id}", f"runner {runner_id}")
            history.runner_tags[runner_id] = tag_list(runner.get("tag_list") or [], "runner tag_list")
        except GitlabError as err:
            if err.response_code not in (403, 404):
                raise
            refused.append((err.response_code, gitlab_status(err)))
        except BadAnswer:
            history.ledger.drop("runner: not a usable answer")
        except FieldError as bad:
            history.ledger.drop(str(bad))
    notes = []
    if refused:
        why = "; GitLab shows a project runner's details to Maintainers" if any(c == 403 for c, _ in refused) else ""
        notes.append(
            f"the tags of {len(refused)} of {len(ids)} runners are not readable ({refused[0][1]}{why}): "
            "those runners are known by their description"
        )
    if len(ids) > MAX_RUNNER_LOOKUPS:
        notes.append(
            f"{len(ids)} runners ran these jobs: the tags of the {MAX_RUNNER_LOOKUPS} that ran the most were read, "
            "the others are known by their description"
        )
    history.runner_note = "; ".join(notes)


def _read_pipeline_sources(
    client: gitlab.Gitlab, history: History, project_path: str, wanted: Wanted, progress: Progress
) -> None:
    """The source of each pipeline whose wanted jobs' entries lack it (one request per pipeline, those with the
    most such jobs first), within MAX_PIPELINE_LOOKUPS and the requests the run has left.

    A refusal (403: the token may not read pipelines; 404; a 5xx) stops the lookups: the next would most likely be
    refused too, and the stack file's kinds can class the jobs. A rejected token (401) ends the run."""
    counts = Counter(
        job.pipeline_id
        for job in history.jobs
        if job.pipeline_id is not None and job.pipeline_source is None and wanted(job, history.runner_tags)
    )
    ids = [pipeline for pipeline, _ in sorted(counts.items(), key=lambda item: (-item[1], -item[0]))]
    if not ids:
        return
    progress(f"reading the source of {len(ids)} pipelines of {history.project} (their jobs' entries lack it)")
    session = client.session
    asked, without, refused = 0, 0, ""
    for pipeline_id in ids[:MAX_PIPELINE_LOOKUPS]:
        if isinstance(session, PinnedSession) and session.requests_left() <= MAX_RETRIES + 1:
            break
        asked += 1
        try:
            answer = get_object(client, f"{project_path}/pipelines/{pipeline_id}", f"pipeline {pipeline_id}")
        except GitlabAuthenticationError:
            raise
        except GitlabError as err:
            refused = gitlab_status(err)
            break
        except BadAnswer:
            history.ledger.drop("pipeline: not a usable answer")
            without += 1
            continue
        try:
            if answer.get("source") is None:
                without += 1
            else:
                history.pipeline_sources[pipeline_id] = pipeline_source(answer["source"], "pipeline source")
        except FieldError as bad:
            history.ledger.drop(str(bad))
            without += 1
    history.pipeline_note = _sources_note(len(ids), asked, without, refused)


def _sources_note(wanted: int, asked: int, without: int, refused: str) -> str:
    """Why some of the `wanted` pipelines' sources are unknown, in one clause, or ""."""
    found = asked - without - (1 if refused else 0)
    if found == wanted:
        return ""
    parts = []
    if refused:
        parts.append(f"GitLab answered {refused} to GET /projects/:id/pipelines/:id, so no more were asked for")
    if without:
        parts.append(f"{without} answered without a usable source")
    if asked < wanted and not refused:
        parts.append(
            f"{wanted - asked} not asked for: at most {MAX_PIPELINE_LOOKUPS} a run, within its {MAX_REQUESTS} requests"
        )
    return f"the source of {wanted - found} of {wanted} pipelines is unknown (" + "; ".join(parts) + ")"


def _explain(err: GitlabError, url: str, project: str) -> tuple[str, int]:
    message = gitlab_status(err)
    body = err.response_body.decode("utf-8", "replace") if isinstance(err.response_body, bytes) else ""
    if err.response_code == 403 and "insufficient_scope" in f"{message} {body[:10_000]}":
        return f"the token lacks the `read_api` scope (GitLab answered 403 insufficient_scope): {SCOPE_ADVICE}", 2
    if err.response_code == 403:
        return f"GitLab refused to list the jobs of {project} ({message}): {SCOPE_ADVICE}", 2
    if err.response_code == 404:
        return f"project {project} not found on {url}, or not visible to the token ({message})", 2
    return f"GitLab answered {message} for project {project} on {url}", 1
