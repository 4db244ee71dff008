"""A small GitLab on 127.0.0.1: the REST endpoints `mr-note` uses, served by a real HTTP server thread.

It speaks what GitLab speaks to python-gitlab: `PRIVATE-TOKEN` authentication, `GET /api/v4/user`,
`GET` a merge request, its notes listed page by page (`page`/`per_page`, `Link` headers, `sort`), created
(`POST`) and updated (`PUT`). Like GitLab it answers 401 to an unknown token, 403 `insufficient_scope` to a
token without the `api` scope that writes, 403 to a user editing someone else's note, 404 to an unknown
merge request. Every request is recorded, so tests can say what was (not) sent. The review block (at the
end) answers what `mr-note` asks about its token: its expiry and scopes, and its user's role. The CI job
history block serves `workload --from-gitlab`, and can answer as a broken or hostile server would (`Raw`
bodies of any size or type, endless or circular pages, odd rate-limit headers).
"""

from __future__ import annotations

import json
import re
import selectors
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import yaml


@dataclass(frozen=True)
class Raw:
    """An answer's body as bytes (any content, any type), or chunks written until the client stops reading."""

    data: bytes | Iterator[bytes]
    content_type: str = "application/json"


@dataclass(frozen=True)
class Drop:
    """No answer at all: the connection is closed once the request is read (a timeout, a proxy that drops)."""


@dataclass(frozen=True)
class Token:
    user_id: int
    username: str
    scopes: frozenset[str]


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    body: dict[str, Any] | None
    token: str | None = None
    """The `PRIVATE-TOKEN` header it carried."""


@dataclass
class FakeGitLab:
    """State of the fake: tokens, projects (id and path), merge requests (head sha) and their notes."""

    tokens: dict[str, Token] = field(default_factory=dict)
    projects: dict[str, int] = field(default_factory=dict)
    """Project path (`group/name`) or id (as text) to numeric id."""
    merge_requests: dict[tuple[int, int], str] = field(default_factory=dict)
    """(project id, MR iid) to the MR's head sha."""
    notes: dict[tuple[int, int], list[dict[str, Any]]] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    repository_files: dict[tuple[int, str], str] = field(default_factory=dict)
    """(project id, path) to the file on the default branch: what the CI Lint endpoint includes."""
    # Review block (token vetting): see "Review block" below.
    token_expiry: dict[str, str | None] = field(default_factory=dict)
    """Token text to its `expires_at` (None: never); unset: 30 days from today."""
    members: dict[tuple[int, int], int | None] = field(default_factory=dict)
    """(project id, user id) to the access level (None: not a member); unset: Reporter (20)."""
    ci_history: CiHistory | None = None
    """A project's CI jobs (`workload --from-gitlab`): see the CI job history block at the end."""
    url: str = ""
    redirect_to: str | None = None
    """Answer every request with a 302 to this base URL (another host: no token may follow)."""
    bytes_sent: int = 0
    """Body bytes written to clients (a body the client stops reading is cut short)."""
    answer: Callable[[str, str, dict[str, str]], tuple[int, Any, dict[str, str]] | None] | None = None
    """Asked first, after the token is checked, with (method, path, query): an answer (status, JSON value or
    `Raw`, headers) instead of the fake's own, or None to let it answer."""
    _next_id: int = 1000
    _clock: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add_note(self, project: int, iid: int, body: str, user_id: int, *, system: bool = False) -> int:
        with self._lock:
            return self._add_note(project, iid, body, user_id, system=system)

    def _add_note(self, project: int, iid: int, body: str, user_id: int, *, system: bool = False) -> int:
        self._next_id += 1
        self._clock += 1
        stamp = f"2026-12-01T10:{self._clock // 60:02d}:{self._clock % 60:02d}.000Z"
        user = next((t for t in self.tokens.values() if t.user_id == user_id), None)
        self.notes.setdefault((project, iid), []).append(
            {
                "id": self._next_id,
                "body": body,
                "author": {"id": user_id, "username": user.username if user else f"user{user_id}"},
                "system": system,
                "created_at": stamp,
                "updated_at": stamp,
                "noteable_type": "MergeRequest",
                "noteable_iid": iid,
            }
        )
        return self._next_id

    def notes_of(self, project: int, iid: int) -> list[dict[str, Any]]:
        return self.notes.get((project, iid), [])

    def writes(self) -> list[Request]:
        return [r for r in self.requests if r.method in ("POST", "PUT", "DELETE")]


_MR = re.compile(r"^/api/v4/projects/(?P<project>[^/]+)/merge_requests/(?P<iid>\d+)$")
_NOTES = re.compile(r"^/api/v4/projects/(?P<project>[^/]+)/merge_requests/(?P<iid>\d+)/notes$")
_NOTE = re.compile(r"^/api/v4/projects/(?P<project>[^/]+)/merge_requests/(?P<iid>\d+)/notes/(?P<note>\d+)$")


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    disable_nagle_algorithm = True
    """Headers and body go out as two writes: with Nagle's algorithm the body waits for the client's delayed
    ACK (40 ms on Linux), and every request of every test would pay it."""
    protocol_version = "HTTP/1.1"
    """Connections kept open between requests, as GitLab's (a run reads hundreds of traces); a body of no known
    length is sent until the connection closes."""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read `FakeGitLab.requests` instead."""

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def _handle(self, method: str) -> None:
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        state = self.server.state
        with state._lock:
            state.requests.append(Request(method, parts.path, query, body, self.headers.get("PRIVATE-TOKEN")))
            status, payload, headers = self._route(state, method, parts.path, query, body)
        if isinstance(payload, Drop):
            self.close_connection = True
            return
        raw = payload if isinstance(payload, Raw) else Raw(json.dumps(payload).encode())
        self.send_response(status)
        self.send_header("Content-Type", raw.content_type)
        if isinstance(raw.data, bytes):
            self.send_header("Content-Length", str(len(raw.data)))
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        chunks = [raw.data] if isinstance(raw.data, bytes) else raw.data
        try:
            for chunk in chunks:
                self.wfile.write(chunk)
                state.bytes_sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):  # the client stopped reading: what a bounded client does
            self.close_connection = True

    def _route(  # noqa: PLR0911, PLR0912 - one branch per endpoint and per refusal, like the API it fakes
        self, state: FakeGitLab, method: str, path: str, query: dict[str, str], body: dict[str, Any] | None
    ) -> tuple[int, Any, dict[str, str]]:
        if state.redirect_to is not None:
            return 302, {"message": "moved"}, {"Location": state.redirect_to + self.path}
        token = state.tokens.get(self.headers.get("PRIVATE-TOKEN") or "")
        if token is None:
            return 401, {"message": "401 Unauthorized"}, {}
        needed = {"api"} if method != "GET" else {"api", "read_api"}
        if not needed & token.scopes:
            return (
                403,
                {
                    "error": "insufficient_scope",
                    "error_description": "The request requires higher privileges than provided by the access token.",
                    "scope": "api read_api" if method == "GET" else "api",
                },
                {},
            )
        if state.answer is not None and (answer := state.answer(method, path, query)):
            return answer
        if state.ci_history is not None and (answer := route_ci_history(state.ci_history, self, method, path)):
            return answer
        if method == "GET" and path == "/api/v4/user":
            return 200, {"id": token.user_id, "username": token.username, "bot": True}, {}
        if lint := _CI_LINT.match(path):
            return _ci_lint(state, method, unquote(lint["project"]), body)
        answer = _review_route(state, self.headers.get("PRIVATE-TOKEN") or "", token, method, path)
        if answer is not None:
            return answer
        for pattern in (_NOTE, _NOTES, _MR):
            if match := pattern.match(path):
                break
        else:
            return 404, {"error": "404 Not Found"}, {}
        project = state.projects.get(unquote(match["project"]))
        iid = int(match["iid"])
        if project is None or (project, iid) not in state.merge_requests:
            return 404, {"message": "404 Not found"}, {}
        if pattern is _MR and method == "GET":
            return 200, {"iid": iid, "project_id": project, "sha": state.merge_requests[(project, iid)]}, {}
        if pattern is _NOTES and method == "GET":
            return self._list(state.notes_of(project, iid), query)
        if pattern is _NOTES and method == "POST":
            if not body or not body.get("body"):
                return 400, {"message": "400 Bad request - body is missing"}, {}
            note_id = state._add_note(project, iid, body["body"], token.user_id)
            return 201, next(n for n in state.notes_of(project, iid) if n["id"] == note_id), {}
        if pattern is _NOTE and method == "PUT":
            note = next((n for n in state.notes_of(project, iid) if n["id"] == int(match["note"])), None)
            if note is None:
                return 404, {"message": "404 Note Not Found"}, {}
            if note["author"]["id"] != token.user_id:
                return 403, {"message": "403 Forbidden"}, {}
            note["body"] = (body or {}).get("body", note["body"])
            return 200, note, {}
        return 405, {"message": "405 Method Not Allowed"}, {}

    def _list(self, notes: list[dict[str, Any]], query: dict[str, str]) -> tuple[int, Any, dict[str, str]]:
        """GitLab's offset pagination: `page`, `per_page` (default 20), `Link` with rel next/first/last."""
        ordered = sorted(notes, key=lambda n: (n[query.get("order_by", "created_at")], n["id"]))
        if query.get("sort", "desc") == "desc":
            ordered.reverse()
        per_page = min(int(query.get("per_page", 20)), 100)
        page = int(query.get("page", 1))
        pages = max(1, -(-len(ordered) // per_page))
        base = f"http://{self.headers['Host']}{urlsplit(self.path).path}"

        def link(number: int) -> str:
            params = {**query, "page": str(number), "per_page": str(per_page)}
            return base + "?" + "&".join(f"{k}={v}" for k, v in params.items())

        links = [f'<{link(1)}>; rel="first"', f'<{link(pages)}>; rel="last"']
        headers = {"X-Page": str(page), "X-Per-Page": str(per_page), "X-Total": str(len(ordered))}
        headers["X-Total-Pages"] = str(pages)
        if page < pages:
            links.insert(0, f'<{link(page + 1)}>; rel="next"')
            headers["X-Next-Page"] = str(page + 1)
        headers["Link"] = ", ".join(links)
        return 200, ordered[(page - 1) * per_page : page * per_page], headers


# --- CI lint: POST /projects/:id/ci/lint ----------------------------------------------------------------
# GitLab merges the posted `content` with what it includes (`local:` from the project's default branch,
# `project:` from another project's), applies `extends`, and answers `valid`, `errors`, `warnings`,
# `merged_yaml` (keys written as Ruby symbols, as GitLab writes them), `includes` and, with `dry_run`,
# `jobs`. Errors are GitLab's own words for a missing file and for YAML that does not parse.

_CI_LINT = re.compile(r"^/api/v4/projects/(?P<project>[^/]+)/ci/lint$")
_LINT_KEYWORDS = {"default", "include", "stages", "variables", "workflow", "image", "services", "cache"}


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        both = isinstance(value, dict) and isinstance(merged.get(key), dict)
        merged[key] = _merge(merged[key], value) if both else value
    return merged


def _ci_lint(
    state: FakeGitLab, method: str, project_path: str, body: dict[str, Any] | None
) -> tuple[int, Any, dict[str, str]]:
    project = state.projects.get(project_path)
    if project is None:
        return 404, {"message": "404 Project Not Found"}, {}
    if method != "POST":
        return 405, {"message": "405 Method Not Allowed"}, {}
    if not body or "content" not in body:
        return 400, {"error": "content is missing"}, {}
    invalid: dict[str, Any] = {"valid": False, "merged_yaml": None, "warnings": [], "includes": [], "jobs": []}
    try:
        config = yaml.safe_load(body["content"])
    except yaml.YAMLError as err:
        return 200, {**invalid, "errors": [f"(<unknown>): {str(err).splitlines()[0]}"]}, {}
    if not isinstance(config, dict):
        return 200, {**invalid, "errors": ["Invalid configuration format"]}, {}
    merged: dict[str, Any] = {}
    includes: list[dict[str, Any]] = []
    entries = config.pop("include", [])
    for raw in entries if isinstance(entries, list) else [entries]:
        entry = {"local": raw} if isinstance(raw, str) else raw
        source = state.projects.get(entry.get("project", project_path))
        location = str(entry.get("local") or entry.get("file", "")).lstrip("/")
        text = state.repository_files.get((source, location)) if source is not None else None
        if text is None:
            where = (
                f"Local file `{location}`"
                if "local" in entry
                else f"Project `{entry.get('project')}` file `{location}`"
            )
            return 200, {**invalid, "errors": [f"{where} does not exist!"]}, {}
        merged = _merge(merged, yaml.safe_load(text) or {})
        includes.append({"type": "local" if "local" in entry else "file", "location": location, "extra": {}})
    merged = _merge(merged, config)
    for name, job in merged.items():
        parents = job.get("extends", []) if isinstance(job, dict) else []
        extended: dict[str, Any] = {}
        for parent in [parents] if isinstance(parents, str) else parents:
            extended = _merge(extended, merged.get(parent, {}))
        if extended:
            merged[name] = _merge(extended, job)
    warnings = [
        f"jobs:{name} may allow multiple pipelines to run for a single action due to `rules:when` clause with no "
        "`workflow:rules` - read more: https://docs.gitlab.com/ee/ci/troubleshooting.html#pipeline-warnings"
        for name, job in merged.items()
        if "workflow" not in merged
        and isinstance(job, dict)
        and any(isinstance(r, dict) and "when" in r and "if" not in r for r in job.get("rules") or [])
    ]
    jobs = [
        {
            "name": name,
            "stage": job.get("stage", "test"),
            "script": job.get("script"),
            "tag_list": job.get("tags", []),
            "when": "on_success",
            "allow_failure": False,
        }
        for name, job in merged.items()
        if name not in _LINT_KEYWORDS and not name.startswith(".") and isinstance(job, dict)
    ]
    symbols = yaml.safe_dump({f":{k}": v for k, v in merged.items()}, sort_keys=False)
    return (
        200,
        {
            "valid": True,
            "errors": [],
            "warnings": warnings,
            "merged_yaml": "---\n" + symbols,
            "includes": includes,
            "jobs": jobs,
        },
        {},
    )


# --- end of CI lint ----------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------------------
# Review block (token vetting by `mr-note`): `GET /personal_access_tokens/self` and
# `GET /projects/:id/members/all/:user_id`, shaped like GitLab's answers. A token expires 30 days from
# today and its user is a Reporter of every project unless `token_expiry` / `members` say otherwise.

_MEMBER = re.compile(r"^/api/v4/projects/(?P<project>[^/]+)/members/all/(?P<user>\d+)$")


def _review_route(
    state: FakeGitLab, text: str, token: Token, method: str, path: str
) -> tuple[int, Any, dict[str, str]] | None:
    """The review block's endpoints, or None for a path that is not theirs."""
    if method == "GET" and path == "/api/v4/personal_access_tokens/self":
        default = (date.today() + timedelta(days=30)).isoformat()
        return (
            200,
            {
                "id": 7000 + token.user_id,
                "name": f"{token.username}-token",
                "revoked": False,
                "created_at": "2026-11-01T09:00:00.000Z",
                "scopes": sorted(token.scopes),
                "user_id": token.user_id,
                "last_used_at": None,
                "active": True,
                "expires_at": state.token_expiry.get(text, default),
            },
            {},
        )
    if method == "GET" and (match := _MEMBER.match(path)):
        project = state.projects.get(unquote(match["project"]))
        if project is None:
            return 404, {"message": "404 Project Not Found"}, {}
        user = int(match["user"])
        level = state.members.get((project, user), 20)
        if level is None:
            return 404, {"message": "404 Not found"}, {}
        username = next((t.username for t in state.tokens.values() if t.user_id == user), f"user{user}")
        return 200, {"id": user, "username": username, "state": "active", "access_level": level}, {}
    return None


# --- CI job history: `GET /projects/:id`, its jobs and pipelines, `GET /runners/:id` (workload --from-gitlab) -


@dataclass
class CiHistory:
    """One project and its jobs, served like GitLab's jobs API: newest first (descending id), filtered by
    `scope[]`, in pages with `X-Page`/`X-Next-Page` and a `Link` header but no totals (GitLab counts no
    jobs for this list). `rate_limit` answers that many list requests with 429 and `Retry-After`."""

    project_id: int
    project_path: str
    created_at: str
    jobs: list[dict[str, Any]] = field(default_factory=list)
    rate_limit: int = 0
    retry_after: int = 0
    runners: dict[int, list[str]] = field(default_factory=dict)
    """Runner id to its tags, served by `GET /runners/:id` to `runner_readers` (GitLab: Maintainers)."""
    runner_readers: frozenset[str] = frozenset()
    next_base: str | None = None
    """Where the `Link` header's pages point (another host, to test that no token follows); None: this one."""
    next_url: str | None = None
    """A fixed `rel="next"` URL instead of the next page's (a link off GitLab's API path)."""
    redirect_jobs_to: str | None = None
    """Answer the jobs list with a 302 to this URL (another host)."""
    # Hostile answers, as a broken or malicious GitLab (or something that is not GitLab) would give them.
    project_answer: Any = None
    """The answer to `GET /projects/:id` instead of the project's (a JSON value, or `Raw`)."""
    page_of: Callable[[int], Any] | None = None
    """The answer for page n of the jobs list instead of `jobs` (a JSON value, or `Raw`); with it, every page
    links a next one up to `last_page` (None: without end)."""
    last_page: int | None = None
    next_page_of: Callable[[int], int] | None = None
    """The page number page n links as next (`lambda n: 2`: the same page forever)."""
    rate_limit_headers: dict[str, str] | None = None
    """The headers of the 429 answers instead of `Retry-After: <retry_after>`."""
    page_headers: dict[str, str] = field(default_factory=dict)
    """Headers added to (or replacing) those of every jobs page (a `Link` of its own)."""
    pipelines: dict[int, Any] = field(default_factory=dict)
    """Pipeline id to what `GET /projects/:id/pipelines/:id` answers (a JSON value, or `Raw`); unknown: 404."""
    pipeline_refusal: tuple[int, str] | None = None
    """(status, message) answered to every pipeline request instead (403: the token may not read pipelines)."""
    traces: dict[int, Any] = field(default_factory=dict)
    """Job id to what `GET /projects/:id/jobs/:id/trace` answers instead of the job's `_trace` (a `Raw`, a
    `Drop`, or (status, JSON value)); a job with neither: 404. A job entry's keys starting with `_` are the
    fake's own (its trace): the jobs list leaves them out."""
    _index: tuple[Any, int, dict[Any, Any]] = field(default=(None, 0, {}), repr=False, compare=False)
    """`jobs` by id (see `_job_by_id`): the list indexed, its length then, and the index."""


_PROJECT = re.compile(r"^/api/v4/projects/(?P<project>[^/]+)$")
_PROJECT_JOBS = re.compile(r"^/api/v4/projects/(?P<project>[^/]+)/jobs$")
_RUNNER = re.compile(r"^/api/v4/runners/(?P<runner>\d+)$")
_PIPELINE = re.compile(r"^/api/v4/projects/(?P<project>[^/]+)/pipelines/(?P<pipeline>\d+)$")
_TRACE = re.compile(r"^/api/v4/projects/(?P<project>[^/]+)/jobs/(?P<job>\d+)/trace$")


def route_ci_history(  # noqa: PLR0911, PLR0912 - one answer per endpoint and per refusal, like the API it fakes
    history: CiHistory, handler: _Handler, method: str, path: str
) -> tuple[int, Any, dict[str, str]] | None:
    """The answer to a project, jobs or runner request, or None for a path this block does not serve."""
    if method == "GET" and (runner := _RUNNER.match(path)):
        runner_id = int(runner["runner"])
        if runner_id not in history.runners:
            return 404, {"message": "404 Runner Not Found"}, {}
        if handler.headers.get("PRIVATE-TOKEN") not in history.runner_readers:
            return 403, {"message": "403 Forbidden - No access granted"}, {}
        return 200, {"id": runner_id, "description": f"runner {runner_id}", "tag_list": history.runners[runner_id]}, {}
    match = _PROJECT.match(path) or _PROJECT_JOBS.match(path) or _PIPELINE.match(path) or _TRACE.match(path)
    if method != "GET" or match is None:
        return None
    if unquote(match["project"]) not in (str(history.project_id), history.project_path):
        return 404, {"message": "404 Project Not Found"}, {}
    if match.re is _PIPELINE:
        return _pipeline(history, int(match["pipeline"]))
    if match.re is _TRACE:
        return _trace(history, int(match["job"]))
    if match.re is _PROJECT and history.project_answer is not None:
        return 200, history.project_answer, {}
    if match.re is _PROJECT:
        return (
            200,
            {
                "id": history.project_id,
                "path_with_namespace": history.project_path,
                "created_at": history.created_at,
            },
            {},
        )
    if history.redirect_jobs_to is not None:
        return 302, {"message": "moved"}, {"Location": history.redirect_jobs_to + path}
    if history.rate_limit > 0:
        history.rate_limit -= 1
        headers = history.rate_limit_headers
        return (
            429,
            {"message": "Retry later"},
            {"Retry-After": str(history.retry_after)} if headers is None else headers,
        )
    query = parse_qs(urlsplit(handler.path).query)
    if history.page_of is not None:
        return _hostile_page(history, handler, path, query)
    scopes = set(query.get("scope[]", []))
    jobs = sorted((job for job in history.jobs if not scopes or job["status"] in scopes), key=lambda job: -job["id"])
    per_page = min(int(query.get("per_page", ["20"])[-1]), 100)
    page = int(query.get("page", ["1"])[-1])
    chunk = jobs[(page - 1) * per_page : page * per_page]
    base = (history.next_base or f"http://{handler.headers['Host']}") + path
    kept = [(k, v) for k, values in query.items() if k not in ("page", "per_page") for v in values]

    def link(number: int) -> str:
        params = [*kept, ("page", str(number)), ("per_page", str(per_page))]
        return base + "?" + "&".join(f"{k}={v}" for k, v in params)

    headers = {"X-Page": str(page), "X-Per-Page": str(per_page)}
    links = [f'<{link(1)}>; rel="first"']
    if page * per_page < len(jobs):
        headers["X-Next-Page"] = str(page + 1)
        links.insert(0, f'<{history.next_url or link(page + 1)}>; rel="next"')
    if page > 1:
        headers["X-Prev-Page"] = str(page - 1)
        links.insert(0, f'<{link(page - 1)}>; rel="prev"')
    headers["Link"] = ", ".join(links)
    entries = [{key: value for key, value in job.items() if not key.startswith("_")} for job in chunk]
    return 200, entries, {**headers, **history.page_headers}


def _trace(history: CiHistory, job_id: int) -> tuple[int, Any, dict[str, str]]:
    """`GET /projects/:id/jobs/:id/trace`: the job's log as plain text (GitLab's `text/plain`), or what the test
    set instead."""
    answer = history.traces.get(job_id)
    if answer is None:
        job = _job_by_id(history, job_id)
        text = job.get("_trace") if isinstance(job, dict) else None
        if text is None:
            return 404, {"message": "404 Not Found"}, {}
        answer = Raw(text.encode("utf-8"), "text/plain; charset=utf-8")
    if isinstance(answer, tuple):
        return answer[0], answer[1], {}
    return 200, answer, {}


def _job_by_id(history: CiHistory, job_id: int) -> Any:
    """The job of `history.jobs` with that id, or None: by an index of the list (a run asks hundreds of traces of
    a list of ~700 jobs), checked on a hit and built again when the list is another or its length changed; on a
    miss, the list itself is searched."""
    jobs = history.jobs
    if history._index[0] is not jobs or history._index[1] != len(jobs):
        history._index = (jobs, len(jobs), {job.get("id"): job for job in jobs if isinstance(job, dict)})
    job = history._index[2].get(job_id)
    if isinstance(job, dict) and job.get("id") == job_id:
        return job
    return next((job for job in jobs if isinstance(job, dict) and job.get("id") == job_id), None)


def _pipeline(history: CiHistory, pipeline_id: int) -> tuple[int, Any, dict[str, str]]:
    """`GET /projects/:id/pipelines/:id`: the pipeline (GitLab's `Ci::PipelineEntity`, with `source`), or a refusal."""
    if history.pipeline_refusal is not None:
        status, message = history.pipeline_refusal
        return status, {"message": message}, {}
    if pipeline_id not in history.pipelines:
        return 404, {"message": "404 Not found"}, {}
    return 200, history.pipelines[pipeline_id], {}


def _hostile_page(
    history: CiHistory, handler: _Handler, path: str, query: dict[str, list[str]]
) -> tuple[int, Any, dict[str, str]]:
    """Page n as `page_of(n)` says, linking the page `next_page_of(n)` (default n + 1) up to `last_page`."""
    assert history.page_of is not None
    page = int(query.get("page", ["1"])[-1])
    headers = {"X-Page": str(page)}
    if history.last_page is None or page < history.last_page:
        following = history.next_page_of(page) if history.next_page_of else page + 1
        headers["Link"] = f'<http://{handler.headers["Host"]}{path}?page={following}&per_page=100>; rel="next"'
    return 200, history.page_of(page), {**headers, **history.page_headers}


# --- the server ----------------------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: FakeGitLab) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state


class running:  # noqa: N801 - used as `with running(state) as gitlab:`
    """Serve `state` on 127.0.0.1 (a free port) in a thread for the duration of the `with` block."""

    def __init__(self, state: FakeGitLab) -> None:
        self.state = state
        self.server = _Server(state)
        self._wake, self._waker = socket.socketpair()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        """`serve_forever`'s loop, ended by a byte on `_wake` instead of a flag polled every few ms: the end of the
        block does not wait out a poll (`shutdown` did, ~10 ms a server, and the tests start ~60)."""
        with selectors.DefaultSelector() as selector:
            selector.register(self.server, selectors.EVENT_READ)
            selector.register(self._wake, selectors.EVENT_READ)
            while True:
                for key, _ in selector.select():
                    if key.fileobj is self._wake:
                        return
                    self.server.handle_request()  # ready: its own select returns at once

    def __enter__(self) -> FakeGitLab:
        self.thread.start()
        host, port = self.server.server_address[:2]
        self.state.url = f"http://{host!s}:{port}"
        return self.state

    def __exit__(self, *exc: object) -> None:
        self._waker.send(b"\0")
        self.thread.join(timeout=5)
        self.server.server_close()
        self._wake.close()
        self._waker.close()
