"""GitLab's job and project entries read as data to validate (pure: no GitLab, no Pulumi).

An entry of `GET /projects/:id/jobs` becomes a `Job` when its essential fields (`id`, `name`, `status`,
`created_at`) are there and sound; otherwise it is skipped, with a reason. Any other field the measurement uses
that has the wrong type or an absurd value (`duration: 1e308`, `tag_list: 5`, `runner: "x"`, a pipeline `source`
that is no snake_case word) is dropped, with a reason, and the job still counts without it. A job id already
read counts once. `Ledger` keeps the tally and says it in one line. What a job *is* for the measurement (`Job`)
is decided here, and only here: measuring (`measure.py`) never sees GitLab's JSON.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from infra.workload.mapping import JobFacts

MAX_SECONDS = 31 * 86_400
"""A duration or a wait longer than a month is absurd: GitLab's longest job timeout is one month."""
MAX_ID = 2**63 - 1
MAX_NAME = 255
"""GitLab's limit on a job's name (and a tag's)."""
MAX_TEXT = 1_024
"""A runner's description, a project's path."""
MAX_TAGS = 100
STATUSES = frozenset(
    {
        "created",
        "waiting_for_resource",
        "preparing",
        "pending",
        "running",
        "success",
        "failed",
        "canceling",
        "canceled",
        "skipped",
        "manual",
        "scheduled",
        "waiting_for_callback",
    }
)
"""GitLab's job statuses (the `status` of `GET /projects/:id/jobs`)."""
_REASON = re.compile(r"[a-z][a-z0-9_]{0,63}")
"""GitLab's failure reasons and pipeline sources are snake_case words (`script_failure`, `merge_request_event`)."""


@dataclass(frozen=True)
class Job:
    """The fields of one GitLab job the measurement uses, each checked."""

    id: int
    name: str
    status: str
    created_at: datetime
    started_at: datetime | None = None
    duration: float | None = None
    """Seconds running (GitLab's `duration`), for a job that started."""
    queued_duration: float | None = None
    """Seconds pending before a runner took it (GitLab's `queued_duration`)."""
    failure_reason: str | None = None
    tags: tuple[str, ...] = ()
    runner_description: str | None = None
    runner_id: int | None = None
    pipeline_id: int | None = None
    pipeline_source: str | None = None
    """Where the job's pipeline came from (`merge_request_event`, `push`, `schedule`, ...): the job's class.
    GitLab's jobs list carries it in current versions; older ones do not (`gitlab_jobs` then asks the pipeline)."""
    stage: str = ""

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> Job:
        """The job of a GitLab entry; ValueError naming the field if it cannot be one (dropped fields are lost:
        read through a `Ledger` to count them)."""
        job, problems = read_job(data)
        if job is None:
            raise ValueError(problems[0])
        return job

    def facts(self, runner_tags: Mapping[int, tuple[str, ...]] | None = None) -> JobFacts:
        tags = (runner_tags or {}).get(self.runner_id, ()) if self.runner_id is not None else ()
        return JobFacts(self.name, self.tags, self.runner_description, tags)


def parse_time(text: str) -> datetime:
    """GitLab's ISO 8601 timestamps (`2026-11-30T10:00:00.000Z`, or with an offset); naive if `text` is."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class FieldError(ValueError):
    """A field's value that cannot be used; str() is the reason, without the value."""


EARLIEST = datetime.min.replace(tzinfo=UTC) + timedelta(days=2)
LATEST = datetime.max.replace(tzinfo=UTC) - timedelta(days=2)
"""The times a job may have: two days inside Python's, so that any time zone can tell one, and its next day."""


def aware_time(value: object, key: str) -> datetime:
    """A timestamp with a timezone, in UTC; FieldError otherwise (`"yesterday"`, a naive time, year 1 minus an
    hour, the last days of year 9999)."""
    if not isinstance(value, str) or len(value) > 64:
        raise FieldError(f"{key}: not a timestamp")
    try:
        when = parse_time(value)
    except ValueError:
        raise FieldError(f"{key}: not an ISO 8601 time") from None
    if when.tzinfo is None:
        raise FieldError(f"{key}: a time without a timezone")
    try:
        when = when.astimezone(UTC)
    except OverflowError:
        raise FieldError(f"{key}: out of range") from None
    if not EARLIEST <= when <= LATEST:
        raise FieldError(f"{key}: out of range")
    return when


def _id(value: object, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_ID:
        raise FieldError(f"{key}: not a positive integer")
    return value


def _seconds(value: object, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FieldError(f"{key}: not a number")
    if not 0 <= value <= MAX_SECONDS:  # compared before any float(): an int of 400 digits has none; NaN fails
        raise FieldError(f"{key}: not between 0 and {MAX_SECONDS // 86_400} days")
    return float(value)


def _text(value: object, key: str, limit: int) -> str:
    if not isinstance(value, str) or len(value) > limit:
        raise FieldError(f"{key}: not a string of at most {limit} characters")
    return value


def tag_list(value: object, key: str = "tag_list") -> tuple[str, ...]:
    """A job's or a runner's tags; FieldError unless a list of at most MAX_TAGS short strings."""
    if not isinstance(value, list) or len(value) > MAX_TAGS:
        raise FieldError(f"{key}: not a list of at most {MAX_TAGS} tags")
    if not all(isinstance(tag, str) and len(tag) <= MAX_NAME for tag in value):
        raise FieldError(f"{key}: not a list of tags (strings of at most {MAX_NAME} characters)")
    return tuple(value)


def read_job(entry: object) -> tuple[Job | None, list[str]]:
    """The job of one entry and the fields dropped from it; (None, [why]) when the entry cannot be a job."""
    if not isinstance(entry, dict):
        return None, ["not an object"]
    try:
        job_id, name = _id(entry.get("id"), "id"), _text(entry.get("name"), "name", MAX_NAME)
        status, created_at = _status(entry.get("status")), aware_time(entry.get("created_at"), "created_at")
    except FieldError as bad:
        return None, [str(bad)]
    dropped: list[str] = []

    def field(read: Callable[[Any, str], Any], value: object, key: str, default: Any = None) -> Any:
        """The field read by `read`, or `default` when it is null, or dropped (with its reason) when it is bad."""
        if value is None:
            return default
        try:
            return read(value, key)
        except FieldError as bad:
            dropped.append(str(bad))
            return default

    runner = field(_mapping, entry.get("runner"), "runner", {})
    pipeline = field(_mapping, entry.get("pipeline"), "pipeline", {})
    job = Job(
        id=job_id,
        name=name,
        status=status,
        created_at=created_at,
        started_at=field(aware_time, entry.get("started_at"), "started_at"),
        duration=field(_seconds, entry.get("duration"), "duration"),
        queued_duration=field(_seconds, entry.get("queued_duration"), "queued_duration"),
        failure_reason=field(_failure_reason, entry.get("failure_reason"), "failure_reason"),
        tags=field(tag_list, entry.get("tag_list"), "tag_list", ()),
        stage=field(_short_text, entry.get("stage"), "stage", ""),
        runner_id=field(_id, runner.get("id"), "runner.id"),
        runner_description=field(_long_text, runner.get("description"), "runner.description"),
        pipeline_id=field(_id, pipeline.get("id"), "pipeline.id"),
        pipeline_source=field(pipeline_source, pipeline.get("source"), "pipeline.source"),
    )
    return job, dropped


def _status(value: object) -> str:
    if not isinstance(value, str) or value not in STATUSES:
        raise FieldError("status: not a GitLab job status")
    return value


def _failure_reason(value: object, key: str) -> str:
    if not isinstance(value, str) or not _REASON.fullmatch(value):
        raise FieldError(f"{key}: not a GitLab failure reason (a snake_case word)")
    return value


def pipeline_source(value: object, key: str = "source") -> str:
    """A pipeline's `source`; FieldError unless a snake_case word (GitLab adds sources over time: any word is one)."""
    if not isinstance(value, str) or not _REASON.fullmatch(value):
        raise FieldError(f"{key}: not a pipeline source (a snake_case word)")
    return value


def _mapping(value: object, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FieldError(f"{key}: not an object")
    return value


def _short_text(value: object, key: str) -> str:
    return _text(value, key, MAX_NAME)


def _long_text(value: object, key: str) -> str:
    return _text(value, key, MAX_TEXT)


@dataclass
class Ledger:
    """What was read from GitLab's answers: the jobs (each id once) and the tally of what was skipped."""

    entries: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    """Entries that are no job, by reason."""
    dropped: Counter[str] = field(default_factory=Counter)
    """Fields left out of a job (or of the project's or a runner's answer), by reason."""
    duplicates: int = 0
    ids: set[int] = field(default_factory=set)

    def read(self, entry: object) -> Job | None:
        """The job of an entry of the jobs list, or None (skipped, or an id already read): counted either way."""
        self.entries += 1
        job, problems = read_job(entry)
        if job is None:
            self.skipped[problems[0]] += 1
            return None
        self.dropped.update(problems)
        if job.id in self.ids:
            self.duplicates += 1
            return None
        self.ids.add(job.id)
        return job

    def drop(self, reason: str) -> None:
        self.dropped[reason] += 1

    def summary(self) -> str:
        """One line saying what was skipped and why, or "" when everything was read."""
        parts = []
        if self.skipped:
            parts.append(f"{sum(self.skipped.values())} of {self.entries} job entries ({_tally(self.skipped)})")
        if self.dropped:
            parts.append(f"{sum(self.dropped.values())} fields ({_tally(self.dropped)})")
        if self.duplicates:
            parts.append(f"{self.duplicates} job{'s' if self.duplicates > 1 else ''} listed twice (counted once)")
        return "skipped from GitLab's answers: " + "; ".join(parts) if parts else ""


def _tally(counter: Counter[str], shown: int = 4) -> str:
    ordered = sorted(counter.items(), key=lambda item: (-item[1], item[0]))
    text = ", ".join(f"{count} {reason}" for reason, count in ordered[:shown])
    rest = ordered[shown:]
    if not rest:
        return text
    return text + f", {sum(count for _, count in rest)} more ({len(rest)} other reason{'s' if len(rest) > 1 else ''})"
