"""A job's `timeout:` as GitLab reads it, against what its template must hold (pure: no Pulumi import).

GitLab parses `timeout:` with ChronicDuration: numbers with units (`3h 30m`, `90 minutes`, `1.5 hours`, `2h30m`,
`1 hour and 5 mins`), a number alone as seconds, or `h:mm:ss` / `m:ss`. What is read here is that form; number
words (`three hours`) and anything else are not read (a warning: not checked), never guessed. A platform
template's `timeout:` holds one attempt's wait for a node plus its pool's longest job on a full node
(`infra.model.timeouts`); a job that lowers it is killed once it waits out a cold start and then runs long.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from infra.model.timeouts import gitlab_duration
from infra.pipeline.resolved import ResolvedJob, brief

_UNIT_SECONDS = {
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 3600),
    **dict.fromkeys(("d", "day", "days"), 86400),
    **dict.fromkeys(("w", "wk", "wks", "week", "weeks"), 7 * 86400),
    **dict.fromkeys(("mo", "mos", "month", "months"), 30 * 86400),
    **dict.fromkeys(("y", "yr", "yrs", "year", "years"), 365 * 86400),
}
"""ChronicDuration's units (a month is 30 days, a year 365)."""
_NUMBER = re.compile(r"\d+(?:\.\d+)?|\.\d+")
_PART = re.compile(rf"\s*({_NUMBER.pattern})\s*([a-z]+)\s*")
_CLOCK = re.compile(r"(?:(\d+):)?(\d+):(\d{1,2})")
_FILLER = re.compile(r"\band\b|,")
MAX_TEXT = 200
"""Characters of a `timeout:` read at all: GitLab's own values are a few words."""


def gitlab_duration_seconds(value: object) -> float | None:
    """Seconds in a `timeout:` value as GitLab reads it; None for what is not read here."""
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        return None
    text = _FILLER.sub(" ", value.strip().lower()).strip()
    if clock := _CLOCK.fullmatch(text):
        hours, minutes, seconds = (int(part) if part else 0 for part in clock.groups())
        return float(3600 * hours + 60 * minutes + seconds)
    if _NUMBER.fullmatch(text):
        return float(text)
    total, position = 0.0, 0
    while position < len(text):
        match = _PART.match(text, position)
        multiplier = _UNIT_SECONDS.get(match[2]) if match else None
        if match is None or multiplier is None:
            return None
        total += float(match[1]) * multiplier
        position = match.end()
    return total if text else None


def check_timeout(
    job: ResolvedJob,
    template: str,
    needed_seconds: int,
    *,
    violation: Callable[[str], None],
    warning: Callable[[str], None],
) -> None:
    """The job's `timeout:` (its template's, or one it sets over it) holds what the template holds; a value not
    read here is a warning, a templates file without one (committed before the timeouts) too."""
    needed = gitlab_duration(needed_seconds)
    if "timeout" not in job.keys:
        warning(
            f"no timeout: {template} predates the platform's timeouts (commit the templates file gpu-ci renders): "
            "GitLab gives the job the project's timeout, 60 min by default"
        )
        return
    value = job.keys["timeout"]
    seconds = gitlab_duration_seconds(value)
    if seconds is None:
        warning(
            f"timeout: {brief(value, 60)} is not read by check-ci: whether it holds {template}'s {needed} is unchecked"
        )
    elif seconds < needed_seconds:
        violation(
            f"timeout: {value} is below {template}'s {needed}, which holds one attempt's wait for a node plus the "
            "pool's longest job on a full node: GitLab kills the job when it waits out a cold start and then runs "
            "long (drop `timeout:` from the job)"
        )
