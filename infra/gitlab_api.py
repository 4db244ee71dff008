"""The one GitLab client of the three commands that talk to GitLab (`review.gitlab_notes`, `workload.gitlab_jobs`,
check-ci `--online`): python-gitlab, given a requests session and a backend of ours through the two seams it
has for them (`session=`, `backend=`), that treats GitLab's answers as untrusted input; and a refusal's status
in one line.

Every request goes through `PinnedSession`, which bounds what one run can cost and where it can go:

- **origin**: python-gitlab follows what GitLab answers. A redirect to another host, or a `Link: rel="next"` page
  on another host, would be fetched with the same `PRIVATE-TOKEN` header (requests strips only `Authorization`
  when a redirect leaves the host, and python-gitlab only warns about a foreign next page). No request, first or
  followed, goes to an origin (scheme, host, port) other than the configured URL's: `OffHostRequest`, before a
  byte leaves.
- **each body**: read through `BoundedBody` (requests' `Response.raw` stream, wrapped): at most
  `GITLAB_ANSWER.max_bytes`, decoded, and for at most `ANSWER_SECONDS` (a larger body is cut off, never held in
  memory whole). The backend parses a JSON answer within the budget's depth and values, with no NaN or infinity
  (`infra.documents.parse_json`): a 2xx that is not such JSON is refused, so python-gitlab only ever parses a
  body that passed; an error's body that is not reaches it as "not JSON". A 2xx its caller streams (a job's
  trace) is read by that caller as far as it needs, within the same bytes, whatever its `Content-Length`.
- **rate limits and retries**: a 429 is waited out here, and python-gitlab never sees one (its own retry reads
  `Retry-After` with `int()`, which an HTTP date or `1.5` crashes, and sleeps as long as `RateLimit-Reset`
  says): `Retry-After` as seconds (fractional, negative read as 0) or an HTTP date, else `RateLimit-Reset`,
  else a short backoff; never past `MAX_WAIT_SECONDS`, at most `MAX_RETRIES` times in a row. A client that asks
  for retries of transient failures (`retry_transient_errors`: a 5xx, a dropped connection) gets them here too,
  on a 0.1 s doubling backoff, at most `MAX_TRANSIENT_RETRIES`; `MAX_UNREACHABLE` failed connections in a row
  stop the run.
- **requests per run**: at most `MAX_REQUESTS` per client; a list is read `list_pages` at a time, at most
  `MAX_PAGES` pages, and a page already read (same link, same content) stops it; lookups one by one (a
  pipeline's source: `MAX_PIPELINE_LOOKUPS`) stop before the run's last requests (`requests_left`).

Over a bound: one `RefusedAnswer` line (`exit_code` 2: not what GitLab answers, check the URL; 1: try later).
python-gitlab is imported by whoever calls `connect`.
"""

from __future__ import annotations

import functools
import hashlib
import re
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import requests

from infra.documents import GITLAB_ANSWER, Budget, DocumentError, parse_json, printable
from infra.gitlab_waits import (  # noqa: F401 - Delay: callers read it here
    MAX_TRANSIENT_RETRIES,
    Delay,
    backoff,
    retry_delay,
    seconds_text,
    transient_failure,
)

if TYPE_CHECKING:
    import gitlab
    from gitlab.exceptions import GitlabError

_DEFAULT_PORTS = {"http": 80, "https": 443}

MAX_PAGES = 500
"""Pages one list may take (50,000 items at 100 a page): past that the list is refused, not read on."""
MAX_REQUESTS = 1_000
"""Requests one client sends in a run, retries and redirect hops included."""
MAX_PIPELINE_LOOKUPS = 500
"""Pipelines one run asks for one by one (`GET /projects/:id/pipelines/:id`, where the jobs list does not say a
pipeline's source): half the run's requests, the pipelines with the most jobs first."""
MAX_RETRIES = 5
"""429 answers in a row to one request before giving up."""
MAX_UNREACHABLE = 3
"""Connection failures in a row before the run stops: python-gitlab's `retry_transient_errors` retries one 10
times, doubling its wait, and at 30 s a timeout that is minutes of waiting for a GitLab that is down."""
MAX_WAIT_SECONDS = 120
"""The longest wait a 429 may ask for; a longer one is refused at once ("try again later")."""
ANSWER_SECONDS = 120
"""Seconds one answer's body may take to arrive, whatever the per-read timeout (30 s) lets through."""
MAX_LINK = 2_048
"""Characters of a next-page link."""
_CHUNK = 64 << 10


class RefusedAnswer(requests.RequestException):
    """What the client refuses to send or to read; str() is one line, `exit_code` 2 (check the URL) or 1."""

    exit_code = 2


class OffHostRequest(RefusedAnswer):
    """GitLab sent the client to another host (a redirect, a next page): nothing was sent there."""


class BadAnswer(RefusedAnswer):
    """An answer too large, too deep, too slow, not JSON, not the shape asked for, or paging in circles."""


class RateLimited(RefusedAnswer):
    """GitLab keeps answering 429, or asks to wait longer than the cap."""

    exit_code = 1


class Unreachable(RefusedAnswer):
    """GitLab could not be reached `MAX_UNREACHABLE` times in a row (refused, reset, timed out)."""

    exit_code = 1


class OverBudget(RefusedAnswer):
    """The run sent `MAX_REQUESTS` requests."""

    exit_code = 1


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of a URL, the port made explicit: `https://gitlab.com` = `https://gitlab.com:443/x`."""
    try:
        parts = urlsplit(url)
    except ValueError:  # `http://[::1`: no origin a request may go to
        return "", "", -1
    try:
        port = parts.port
    except ValueError:  # a port that is no number: no origin a request may go to
        port = -1
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), port if port is not None else _DEFAULT_PORTS.get(scheme)


def connection_problem(url: str, token: str, url_from: str = "the GitLab URL", token_from: str = "the token") -> str:
    """Why no request can be sent to `url` with `token` (one line naming where each came from), or "": checked
    before any client is built, since python-gitlab and requests fail on these with a traceback that quotes the
    header, token included (`Invalid header value b'glpat-...\\n'`)."""
    scheme, host, port = origin(url)
    if scheme not in _DEFAULT_PORTS or not host or port == -1:
        return f"{url_from} {printable(repr(url), 80)}: not an http(s) URL with a host"
    if not token.isascii() or not token.isprintable() or any(char.isspace() for char in token):
        return f"{token_from} holds a space, a line break or a character outside ASCII: no token does (mistyped?)"
    return ""


def shown_origin(url: str) -> str:
    """The URL's origin for a message, without userinfo, path or query (never a credential), escaped."""
    scheme, host, port = origin(url)
    default = _DEFAULT_PORTS.get(scheme)
    return printable(f"{scheme}://{host}" + ("" if port == default else f":{port}"), 120)


def wait(seconds: float) -> None:
    """The one place a client sleeps (on a 429); tests replace it."""
    time.sleep(seconds)


class PinnedSession(requests.Session):
    """A requests session that sends nothing to an origin other than `url`'s (redirect hops included), reads
    every body within `budget.max_bytes` and `ANSWER_SECONDS`, waits out 429s within a cap, retries a transient
    failure only when asked (`retry_transient`), and sends at most `max_requests` requests."""

    def __init__(
        self,
        url: str,
        *,
        budget: Budget = GITLAB_ANSWER,
        max_requests: int = MAX_REQUESTS,
        max_retries: int = MAX_RETRIES,
        max_wait: float = MAX_WAIT_SECONDS,
        notice: Callable[[str], None] | None = None,
        retry_transient: bool = False,
    ) -> None:
        super().__init__()
        self.pinned = origin(url)
        self.pinned_text = shown_origin(url)
        self.budget, self.max_requests = budget, max_requests
        self.max_retries, self.max_wait, self.notice = max_retries, max_wait, notice
        self.retry_transient = retry_transient
        self.sent = self.unreachable = 0
        self.hooks["response"].insert(0, self._bound_body)
        self._settings: dict[object, dict[str, Any]] = {}

    def merge_environment_settings(self, url: str, proxies: Any, stream: Any, verify: Any, cert: Any) -> dict[str, Any]:
        """requests' own (the environment's proxies and CA bundle), worked out once: every request goes to the one
        origin, and requests reads the whole environment twice for each (as long as a request to a local GitLab)."""
        key = (origin(url), tuple(sorted(proxies.items())) if proxies else None, stream, verify, cert)
        if (found := self._settings.get(key)) is None:
            found = self._settings[key] = super().merge_environment_settings(url, proxies, stream, verify, cert)
        return {**found, "proxies": dict(found["proxies"])}

    def requests_left(self) -> int:
        """Requests this session may still send; one request may take `max_retries` + 1 of them."""
        return self.max_requests - self.sent

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        target = request.url or ""
        if origin(target) != self.pinned:
            raise OffHostRequest(
                f"GitLab at {self.pinned_text} sent the client on to {shown_origin(target)} (a redirect or a next "
                f"page on another host): the token is sent to {self.pinned_text} only; check the URL given, or "
                "GitLab's external_url"
            )
        limited = transient = 0
        while True:
            self.sent += 1
            if self.sent > self.max_requests:
                raise OverBudget(
                    f"more than {self.max_requests} requests to GitLab at {self.pinned_text} in one run: stopped"
                )
            try:
                response = super().send(request, **kwargs)
            except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError) as err:
                if not isinstance(err, requests.exceptions.ChunkedEncodingError):
                    self._unreachable(err)
                if not self.retry_transient or transient >= MAX_TRANSIENT_RETRIES:
                    raise
                wait(backoff(transient))
                transient += 1
                continue
            self.unreachable = 0
            if response.status_code == 429:
                self._wait_out(response, limited)
                limited += 1
                continue
            failure = response.status_code, response.reason
            if self.retry_transient and transient_failure(*failure) and transient < MAX_TRANSIENT_RETRIES:
                response.close()
                wait(backoff(transient))
                transient += 1
                continue
            return response

    def _unreachable(self, err: Exception) -> None:
        """Count a connection failure; Unreachable once `MAX_UNREACHABLE` came in a row."""
        self.unreachable += 1
        if self.unreachable >= MAX_UNREACHABLE:
            raise Unreachable(
                f"cannot reach GitLab at {self.pinned_text} ({self.unreachable} attempts in a row): "
                f"{printable(str(err), 200)}"
            ) from None

    def _wait_out(self, response: requests.Response, attempt: int) -> None:
        """Sleep as a 429 asks, within the caps; RateLimited when it asks too much or keeps coming."""
        response.close()
        if attempt >= self.max_retries:
            raise RateLimited(f"GitLab still rate-limits (HTTP 429) after {self.max_retries} retries: try again later")
        delay = retry_delay(response.headers, attempt, time.time())
        if delay.seconds > self.max_wait:
            asked = (
                f"resets in {seconds_text(delay.seconds)} (RateLimit-Reset)"
                if delay.source == "RateLimit-Reset"
                else f"asks to wait {seconds_text(delay.seconds)}"
            )
            raise RateLimited(f"GitLab's rate limit (HTTP 429) {asked}, more than {self.max_wait:g} s: try again later")
        if self.notice is not None:
            why = f"as {delay.source} asks" if delay.source else "(no usable Retry-After)"
            path = printable(urlsplit(response.request.path_url or "").path, 120)
            self.notice(
                f"GitLab rate limit (HTTP 429) on {path}: waiting {seconds_text(delay.seconds)} {why}, "
                f"then retrying ({attempt + 1} of at most {self.max_retries})"
            )
        wait(delay.seconds)

    def _bound_body(self, response: requests.Response, *args: Any, **kwargs: Any) -> requests.Response:
        """A response hook (every hop, before a byte of the body is read): a body declared too large is refused
        (unless its caller streams it: it reads what it needs); any is read through `BoundedBody`, requests' own
        `Response.raw` stream wrapped."""
        declared = response.headers.get("Content-Length", "")
        streamed = kwargs.get("stream") and 200 <= response.status_code < 300  # read in part: a trace
        if declared.isdigit() and int(declared) > self.budget.max_bytes and not streamed:
            response.close()
            raise BadAnswer(_too_large(answer_name(response), self.budget.max_bytes))
        response.raw = BoundedBody(response.raw, self.budget.max_bytes, functools.partial(answer_name, response))
        return response


def answer_name(response: requests.Response) -> str:
    """`GitLab's answer to GET /api/v4/...`, escaped: what a refusal of this answer names."""
    method = response.request.method if response.request is not None else "GET"
    return f"GitLab's answer to {method} {printable(urlsplit(response.url).path, 120)}"


def _too_large(name: str, limit: int) -> str:
    return f"{name}: larger than {limit >> 10} KiB, not a GitLab answer"


class BoundedBody:
    """A response's body as requests reads it (`Response.raw`, urllib3's stream): BadAnswer once more than
    `limit` bytes (decoded: a gzip bomb counts as what it expands to) or `ANSWER_SECONDS` have gone by, the
    connection closed; a larger body is never held whole. `name` is asked for only when the body is refused (it
    escapes the URL's path: a run reads hundreds of answers, and refuses few)."""

    def __init__(self, raw: Any, limit: int, name: Callable[[], str]) -> None:
        self._raw, self.limit, self._name = raw, limit, name
        self.count = 0
        self._deadline = time.monotonic() + ANSWER_SECONDS

    def stream(self, amount: int = _CHUNK, decode_content: bool | None = None) -> Iterator[bytes]:
        for chunk in self._raw.stream(amount, decode_content=decode_content):
            self._counted(chunk)
            yield chunk

    def read(self, amount: int | None = None, decode_content: bool | None = None, **kwargs: Any) -> bytes:
        room = self.limit + 1 - self.count
        data: bytes = self._raw.read(room if amount is None else min(amount, room), decode_content=decode_content)
        self._counted(data)
        return data

    def _counted(self, chunk: bytes) -> None:
        self.count += len(chunk)
        if self.count > self.limit:
            self._raw.close()
            raise BadAnswer(_too_large(self._name(), self.limit))
        if time.monotonic() > self._deadline:
            self._raw.close()
            raise BadAnswer(f"{self._name()}: still arriving after {ANSWER_SECONDS} s: stopped")

    def __getattr__(self, name: str) -> Any:  # the rest of urllib3's response: close, release_conn, reason...
        return getattr(self._raw, name)


def json_value(response: requests.Response, budget: Budget = GITLAB_ANSWER) -> Any:
    """The JSON value of an answer read whole, parsed within `budget` (`infra.documents.parse_json`); ValueError
    for an answer that is not JSON (by its `Content-Type` or its text), DocumentError past the budget."""
    content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if not (content_type == "application/json" or content_type.endswith("+json")) or not response.content:
        raise ValueError("not a JSON answer")
    return parse_json(response.content, answer_name(response), budget)


@functools.cache
def _checked_backend() -> type:
    """python-gitlab's backend (its `backend=` seam) over a `PinnedSession`, whose answers are checked JSON; made
    on first use, since python-gitlab is slow to import."""
    from gitlab._backends.requests_backend import RequestsBackend, RequestsResponse  # noqa: PLC0415

    class CheckedAnswer(RequestsResponse):
        """An answer whose JSON body was parsed within the session's budget: a 2xx that is not is refused
        (BadAnswer); for another status python-gitlab reads GitLab's message from `json()`, which says "not JSON"
        rather than hand python-gitlab a body its parser cannot take (a 5,000-deep list is a RecursionError)."""

        def __init__(self, response: requests.Response, budget: Budget) -> None:
            super().__init__(response)
            self.value: Any = _NOT_JSON
            try:
                self.value = json_value(response, budget)
            except DocumentError as err:
                if 200 <= response.status_code < 300:
                    raise BadAnswer(str(err)) from None
            except ValueError:
                pass

        def json(self) -> Any:
            if self.value is _NOT_JSON:
                raise ValueError("not a JSON answer")
            return self.value

    class CheckedBackend(RequestsBackend):
        def http_request(self, method: str, url: str, *args: Any, **kwargs: Any) -> RequestsResponse:
            answer = super().http_request(method, url, *args, **kwargs)
            if kwargs.get("stream") and 200 <= answer.status_code < 300:  # its caller reads it, as a stream
                return answer
            session = self.client
            budget = session.budget if isinstance(session, PinnedSession) else GITLAB_ANSWER
            return CheckedAnswer(answer.response, budget)

    return CheckedBackend


_NOT_JSON = object()


def connect(
    url: str,
    *,
    private_token: str | None = None,
    job_token: str | None = None,
    notice: Callable[[str], None] | None = None,
    max_requests: int = MAX_REQUESTS,
    retry_transient_errors: bool = False,
    **kwargs: Any,
) -> gitlab.Gitlab:
    """A python-gitlab client on `url` whose requests go through a `PinnedSession` and whose answers are checked
    (its `backend`); `notice` is told of each rate-limit wait (one line). `retry_transient_errors` is the
    session's: python-gitlab's own retries read `Retry-After` with `int()` (an HTTP date or `1.5` ends in a
    traceback) and sleep as long as `RateLimit-Reset` says, so they never run (the session hands it no 429).

    `keep_base_url`: a next-page link GitLab builds from another external_url is rewritten onto `url`, so a
    GitLab behind a proxy still pages; a link to another host that is not GitLab's API is refused."""
    import gitlab  # noqa: PLC0415 - slow to import: only the commands that talk to GitLab pay for it

    session = PinnedSession(url, notice=notice, max_requests=max_requests, retry_transient=retry_transient_errors)
    return gitlab.Gitlab(
        url,
        private_token=private_token,
        job_token=job_token,
        session=session,
        backend=_checked_backend(),
        keep_base_url=True,
        timeout=30,
        **kwargs,
    )


def kind_of(value: object) -> str:
    """`a list`, `a string`, `null`: what a JSON value is, for a message."""
    if value is None:
        return "null"
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list", dict: "an object"}
    return names.get(type(value), type(value).__name__)


def get_object(client: gitlab.Gitlab, path: str, what: str, **kwargs: Any) -> dict[str, Any]:
    """`GET path`, which must answer a JSON object; BadAnswer naming `what` otherwise."""
    answer = client.http_get(path, **kwargs)
    if isinstance(answer, requests.Response):  # python-gitlab hands back what is not `application/json`
        content_type = printable(answer.headers.get("Content-Type") or "no Content-Type", 60)
        raise BadAnswer(f"GitLab's answer for {what} is not JSON ({content_type})")
    if not isinstance(answer, dict):
        raise BadAnswer(f"GitLab's answer for {what} is {kind_of(answer)}, not an object")
    return answer


def list_pages(
    client: gitlab.Gitlab,
    path: str,
    query: Mapping[str, Any],
    *,
    what: str,
    advice: str = "",
    max_pages: int = MAX_PAGES,
) -> Iterator[list[Any]]:
    """The pages of a GitLab list, each a JSON list, following `Link: rel="next"` as python-gitlab does (a link
    GitLab builds on another external_url's API path is read from the configured host).

    Refused in one line (BadAnswer): a page that is not a list, a next link that is not an http(s) URL, a page
    already read (the same link, or the same content again), more than `max_pages` pages."""
    url, params = path, dict(query)
    links: set[str] = set()
    bodies: dict[bytes, int] = {}
    for number in range(1, max_pages + 1):
        response = client.http_request("get", url, query_data=params)
        try:
            page = json_value(response)
        except ValueError:
            raise BadAnswer(f"{what}: page {number} is not a JSON answer") from None
        if not isinstance(page, list):
            raise BadAnswer(f"{what}: page {number} is {kind_of(page)}, not a list")
        digest = hashlib.sha256(response.content).digest()
        if digest in bodies:
            raise BadAnswer(f"{what}: page {number} is page {bodies[digest]} again: GitLab's paging goes round")
        bodies[digest] = number
        yield page
        link = _next_link(client, response, what, number)
        if link is None:
            return
        if link in links:
            raise BadAnswer(f"{what}: the page after page {number} is one already read: GitLab's paging goes round")
        links.add(link)
        url, params = link, {}
    raise BadAnswer(f"{what}: more than {max_pages} pages: stopped" + (f"; {advice}" if advice else ""))


def _next_link(client: gitlab.Gitlab, response: requests.Response, what: str, number: int) -> str | None:
    link = (response.links.get("next") or {}).get("url")
    if not link:
        return None
    shown = printable(link, 80)
    if len(link) > MAX_LINK:
        raise BadAnswer(f"{what}: the link to page {number + 1} is longer than {MAX_LINK} characters")
    try:
        parts = urlsplit(link)
        _ = parts.port
    except ValueError:
        raise BadAnswer(f"{what}: the link to page {number + 1} is not a URL: {shown}") from None
    if parts.scheme.lower() not in _DEFAULT_PORTS or not parts.hostname:
        raise BadAnswer(f"{what}: the link to page {number + 1} is not an http(s) URL: {shown}")
    base = str(client.url)
    if link.startswith(base):
        return link
    api = re.match(r"^(.*?)/api/", link)
    return base + link[api.end(1) :] if api else link


MAX_MESSAGES = 50


def messages(value: object, limit: int = 500) -> list[str]:
    """GitLab's list of messages (CI Lint's `errors`, `warnings`), each escaped and cut short, at most
    MAX_MESSAGES; a value that is no list is one message, not one per character."""
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    shown = [printable(str(item), limit) for item in items[:MAX_MESSAGES]]
    return shown + ([f"(and {len(items) - MAX_MESSAGES} more)"] if len(items) > MAX_MESSAGES else [])


def gitlab_status(err: GitlabError, limit: int = 200) -> str:
    """`403 Forbidden`, `403 insufficient_scope`: the code once, then GitLab's message, escaped and cut short."""
    message = err.error_message
    text = printable(message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message), limit)
    code = "" if err.response_code is None else str(err.response_code)
    return text if text.startswith(code) else f"{code} {text}".strip()
