"""What the three GitLab clients (`review.gitlab_notes`, `workload.gitlab_jobs`, check-ci `--online`) share: a
python-gitlab client that treats GitLab's answers as untrusted input, and a refusal's status in one line.

Every request goes through `PinnedSession`, which bounds what one run can cost and where it can go:

- **origin**: python-gitlab follows what GitLab answers. A redirect to another host, or a `Link: rel="next"` page
  on another host, would be fetched with the same `PRIVATE-TOKEN` header (requests strips only `Authorization`
  when a redirect leaves the host, and python-gitlab only warns about a foreign next page). No request, first or
  followed, goes to an origin (scheme, host, port) other than the configured URL's: `OffHostRequest`, before a
  byte leaves.
- **each answer**: read in chunks, at most `GITLAB_ANSWER.max_bytes` (a larger body is cut off, never held in
  memory whole) and for at most `ANSWER_SECONDS`; a JSON answer is parsed once, within the budget's depth and
  values, with no NaN or infinity (`infra.documents.parse_json`), and python-gitlab is handed that value.
- **rate limits**: a 429 is waited out here, not by python-gitlab (whose `int(Retry-After)` crashes on an HTTP
  date or `1.5` and sleeps as long as `RateLimit-Reset` says): `Retry-After` as seconds (fractional, negative
  read as 0) or an HTTP date, else `RateLimit-Reset`, else a short backoff; never past `MAX_WAIT_SECONDS`, at
  most `MAX_RETRIES` times in a row. Other answers reach python-gitlab without those two headers, so its
  retry of a 5xx backs off on its own short, bounded schedule.
- **requests per run**: at most `MAX_REQUESTS` per client; a list is read `list_pages` at a time, at most
  `MAX_PAGES` pages, and a page already read (same link, same content) stops it; lookups one by one (a
  pipeline's source: `MAX_PIPELINE_LOOKUPS`) stop before the run's last requests (`requests_left`).

Over a bound: one `RefusedAnswer` line (`exit_code` 2: not what GitLab answers, check the URL; 1: try later).
python-gitlab is imported by whoever calls `connect`.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import requests

from infra.documents import GITLAB_ANSWER, Budget, DocumentError, parse_json, printable

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
_WAIT_HEADERS = ("Retry-After", "RateLimit-Reset")
_YEAR = 365 * 86_400.0
_EPOCH_2001 = 978_307_200
"""`RateLimit-Reset` below this is a number of seconds (the IETF draft), above it a Unix time (GitLab)."""


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


@dataclass(frozen=True)
class Delay:
    """How long a 429 asks to wait, and what said so (`Retry-After`, `RateLimit-Reset`, or "" for a backoff)."""

    seconds: float
    source: str = ""


def retry_delay(headers: Mapping[str, str], attempt: int, now: float) -> Delay:
    """The wait a 429's headers ask for (pure): `Retry-After` in seconds or as an HTTP date, else
    `RateLimit-Reset`, else 0.1 s doubling per attempt. Negative is 0; unreadable is ignored; inf stays inf."""
    after = (headers.get("Retry-After") or "").strip()[:100]
    if after:
        seconds = _number(after)
        if seconds is None:
            seconds = _http_date(after, now)
        if seconds is not None:
            return Delay(max(0.0, seconds), "Retry-After")
    reset = _number((headers.get("RateLimit-Reset") or "").strip()[:100])
    if reset is not None:
        return Delay(max(0.0, reset - now if reset >= _EPOCH_2001 else reset), "RateLimit-Reset")
    return Delay(0.1 * 2 ** min(attempt, 10))


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isnan(value) else value


def _http_date(text: str, now: float) -> float | None:
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # `-0000`: "UTC, origin unknown"
        when = when.replace(tzinfo=UTC)
    try:
        return when.timestamp() - now
    except (OverflowError, OSError, ValueError):
        return None


def _seconds_text(seconds: float) -> str:
    if math.isinf(seconds):
        return "forever"
    if seconds >= _YEAR:
        return "more than a year"
    if seconds.is_integer() or seconds >= 1000:
        return f"{seconds:.0f} s"
    return f"{seconds:.1f} s"


class PinnedSession(requests.Session):
    """A requests session that sends nothing to an origin other than `url`'s (redirect hops included), reads
    every answer within `budget`, waits out 429s within a cap, and sends at most `max_requests` requests."""

    def __init__(
        self,
        url: str,
        *,
        budget: Budget = GITLAB_ANSWER,
        max_requests: int = MAX_REQUESTS,
        max_retries: int = MAX_RETRIES,
        max_wait: float = MAX_WAIT_SECONDS,
        notice: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__()
        self.pinned = origin(url)
        self.pinned_text = shown_origin(url)
        self.budget, self.max_requests = budget, max_requests
        self.max_retries, self.max_wait, self.notice = max_retries, max_wait, notice
        self.sent = self.unreachable = 0
        self.hooks["response"].insert(0, self._read_bounded)

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
        attempt = 0
        while True:
            self.sent += 1
            if self.sent > self.max_requests:
                raise OverBudget(
                    f"more than {self.max_requests} requests to GitLab at {self.pinned_text} in one run: stopped"
                )
            try:
                response = super().send(request, **kwargs)
            except (requests.ConnectionError, requests.Timeout) as err:
                self.unreachable += 1
                if self.unreachable >= MAX_UNREACHABLE:
                    raise Unreachable(
                        f"cannot reach GitLab at {self.pinned_text} ({self.unreachable} attempts in a row): "
                        f"{printable(str(err), 200)}"
                    ) from None
                raise
            self.unreachable = 0
            if response.status_code != 429:
                # python-gitlab retries a 5xx itself (`retry_transient_errors`) and would read these with `int()`
                # and sleep as long as they say: without them it backs off 0.1 s, doubling, a few times.
                for header in _WAIT_HEADERS:
                    response.headers.pop(header, None)
                return response
            self._wait_out(response, attempt)
            attempt += 1

    def _wait_out(self, response: requests.Response, attempt: int) -> None:
        """Sleep as a 429 asks, within the caps; RateLimited when it asks too much or keeps coming."""
        if attempt >= self.max_retries:
            raise RateLimited(f"GitLab still rate-limits (HTTP 429) after {self.max_retries} retries: try again later")
        delay = retry_delay(response.headers, attempt, time.time())
        if delay.seconds > self.max_wait:
            asked = (
                f"resets in {_seconds_text(delay.seconds)} (RateLimit-Reset)"
                if delay.source == "RateLimit-Reset"
                else f"asks to wait {_seconds_text(delay.seconds)}"
            )
            raise RateLimited(f"GitLab's rate limit (HTTP 429) {asked}, more than {self.max_wait:g} s: try again later")
        if self.notice is not None:
            why = f"as {delay.source} asks" if delay.source else "(no usable Retry-After)"
            path = printable(urlsplit(response.request.path_url or "").path, 120)
            self.notice(
                f"GitLab rate limit (HTTP 429) on {path}: waiting {_seconds_text(delay.seconds)} {why}, "
                f"then retrying ({attempt + 1} of at most {self.max_retries})"
            )
        wait(delay.seconds)

    def _read_bounded(self, response: requests.Response, *args: Any, **kwargs: Any) -> requests.Response:
        """A response hook (every hop, before requests reads a byte of it): the body within the budget, and its
        JSON parsed once, safely, for python-gitlab's `response.json()`."""
        name = f"GitLab's answer to {response.request.method} {printable(urlsplit(response.url).path, 120)}"
        data = self._body(response, name)
        value: Any = _NOT_JSON
        content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if data and (content_type == "application/json" or content_type.endswith("+json")):
            try:
                value = parse_json(data, name, self.budget)
            except DocumentError as err:
                if 200 <= response.status_code < 300:
                    raise BadAnswer(str(err)) from None
        response.json = _json_of(value)  # type: ignore[method-assign]
        return response

    def _body(self, response: requests.Response, name: str) -> bytes:
        limit = self.budget.max_bytes
        too_large = f"{name}: larger than {limit >> 10} KiB, not a GitLab answer"
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > limit:
            response.close()
            raise BadAnswer(too_large)
        data = bytearray()
        deadline = time.monotonic() + ANSWER_SECONDS
        try:
            for chunk in response.iter_content(_CHUNK):
                data += chunk
                if len(data) > limit:
                    raise BadAnswer(too_large)
                if time.monotonic() > deadline:
                    raise BadAnswer(f"{name}: still arriving after {ANSWER_SECONDS} s: stopped")
        except BadAnswer:
            response.close()
            raise
        body = bytes(data)
        response._content = body  # what `response.content` returns from now on
        response._content_consumed = True
        return body


_NOT_JSON = object()


def _json_of(value: Any) -> Callable[..., Any]:
    def json(**_: Any) -> Any:
        if value is _NOT_JSON:
            raise ValueError("not a JSON answer")
        return value

    return json


def connect(
    url: str,
    *,
    private_token: str | None = None,
    job_token: str | None = None,
    notice: Callable[[str], None] | None = None,
    max_requests: int = MAX_REQUESTS,
    **kwargs: Any,
) -> gitlab.Gitlab:
    """A python-gitlab client on `url` whose requests go through a `PinnedSession`; `notice` is told of each
    rate-limit wait (one line).

    `keep_base_url`: a next-page link GitLab builds from another external_url is rewritten onto `url`, so a
    GitLab behind a proxy still pages; a link to another host that is not GitLab's API is refused."""
    import gitlab  # noqa: PLC0415 - slow to import: only the commands that talk to GitLab pay for it

    session = PinnedSession(url, notice=notice, max_requests=max_requests)
    return gitlab.Gitlab(
        url,
        private_token=private_token,
        job_token=job_token,
        session=session,
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
            page = response.json()
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
