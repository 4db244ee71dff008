"""How long a GitLab 429 asks to wait (pure): `Retry-After` in seconds or as an HTTP date, `RateLimit-Reset` as a
Unix time or a number of seconds, else a short backoff; and a wait said for a message. Which other failures are
worth another try, and after how long. `infra.gitlab_api`'s session waits them out within its caps."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime

_YEAR = 365 * 86_400.0
_EPOCH_2001 = 978_307_200
"""`RateLimit-Reset` below this is a number of seconds (the IETF draft), above it a Unix time (GitLab)."""


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


def seconds_text(seconds: float) -> str:
    if math.isinf(seconds):
        return "forever"
    if seconds >= _YEAR:
        return "more than a year"
    if seconds.is_integer() or seconds >= 1000:
        return f"{seconds:.0f} s"
    return f"{seconds:.1f} s"


MAX_TRANSIENT_RETRIES = 10
"""Retries of a 5xx or a dropped connection, where a client asks for them (`mr-note`), on a short backoff."""
_TRANSIENT = frozenset({500, 502, 503, 504, *range(520, 531)})


def transient_failure(status: int, reason: str | None) -> bool:
    """A failure worth one more try: a 5xx of a proxy or a restarting GitLab, or a repository lock (409)."""
    return status in _TRANSIENT or (status == 409 and "Resource lock" in (reason or ""))


def backoff(attempt: int) -> float:
    """0.1 s, doubling: a 5xx's own `Retry-After` is not read (a date in year 9999 would be a wait for ever)."""
    return 0.1 * 2 ** min(attempt, 10)
