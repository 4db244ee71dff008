"""What a job says about its kind, its class and its time (pure): the words of `workload.profiles.<p>.kinds`.

- **kind**: the job-name prefix before the family (`train-validate-dqn` -> `train-validate`, `hyperopt-ppo: [3]`
  -> `hyperopt`), the family found as the mapping finds it (`infra.config.profiles.name_tokens`);
- **class**: from the source of the job's pipeline: a merge request's pipeline (`merge_request_event`, or an
  external repository's pull request) is `merge_request`, anything else (push, schedule, web, api, trigger,
  pipeline, parent_pipeline, ...) is `batch`; no source (or GitLab's own `unknown`) is no class;
- **days** and **hours**: the weekdays a kind's jobs arrive on (`Mon-Fri`), and the window of the day they arrive
  in (`09:00`-`17:45`), in `workload.time_zone`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from datetime import UTC, datetime, time, timedelta, tzinfo

from infra.config.profiles import name_tokens
from infra.config.schedule import WEEKDAYS
from infra.config.workload import LEGACY_KIND, JobClass

MERGE_REQUEST_SOURCES = frozenset({"merge_request_event", "external_pull_request_event"})
"""Pipeline sources of a merge request (GitLab's own, and a pull request of a repository mirrored for CI)."""
NO_SOURCE = "unknown"
"""GitLab's source of a pipeline it cannot class (old pipelines): no class, as if absent."""
MAX_KIND = 63
"""A kind's name: `infra.config.workload` takes 1-63 of a-z, 0-9, `_`, `-`, starting with a letter or digit."""
QUARTER = 15
"""Minutes an arrival window is rounded out to."""
WINDOW_PERCENTILES = (5, 95)
"""The arrival window holds the middle 90 % of a kind's arrivals: a stray late job does not stretch it."""

_SUFFIX = re.compile(r"(?::\s*\[.*\]|\s+\d+/\d+)\s*$")
"""What GitLab appends to a job's name: `: [ppo, 3]` (parallel: matrix), ` 2/4` (parallel: N)."""
_WORD = re.compile(r"[a-z0-9_]+")
_NOT_KIND = re.compile(r"[^a-z0-9_-]+")


def kind_of(name: str, families: Iterable[str], stage: str = "") -> str:
    """The kind of a job of a profile with `families`: the name's part before its first family, else the part
    after it, else its stage, else `train-validate` (a name without a family keeps all of it: `nightly`)."""
    text = _SUFFIX.sub("", name.lower())
    known = set(families) & name_tokens(text)
    where = _family_at(text, known) if known else None
    candidates = [text, stage] if where is None else [text[: where[0]], text[where[1] :], stage]
    for candidate in candidates:
        kind = _kind_name(candidate)
        if kind:
            return kind
    return LEGACY_KIND


def _family_at(text: str, families: set[str]) -> tuple[int, int] | None:
    """Where the first family sits in `text`: a whole word, or an `_` part of one (`hyperopt_ppo`)."""
    for word in _WORD.finditer(text):
        if word[0] in families:
            return word.span()
        offset = word.start()
        for part in word[0].split("_"):
            if part in families:
                return offset, offset + len(part)
            offset += len(part) + 1
    return None


def _kind_name(text: str) -> str:
    return _NOT_KIND.sub("-", text.lower()).strip("-_")[:MAX_KIND].strip("-_")


def job_class(source: str | None) -> JobClass | None:
    """The class of a job whose pipeline came from `source`; None when GitLab does not say."""
    if source is None or source == NO_SOURCE:
        return None
    return "merge_request" if source in MERGE_REQUEST_SOURCES else "batch"


def days_text(weekdays: Iterable[int]) -> str:
    """`Mon-Fri`, `Mon,Wed,Fri`, `Sat,Sun`: the weekdays (0 = Monday), runs of three or more as ranges."""
    days = sorted(set(weekdays))
    runs: list[list[int]] = []
    for day in days:
        if runs and runs[-1][-1] == day - 1:
            runs[-1].append(day)
        else:
            runs.append([day])
    parts = []
    for run in runs:
        names = [WEEKDAYS[day].title() for day in run]
        parts.append(f"{names[0]}-{names[-1]}" if len(run) >= 3 else ",".join(names))
    return ",".join(parts)


def minute_of_day(when: datetime, zone: tzinfo) -> int:
    local = when.astimezone(zone)
    return local.hour * 60 + local.minute


def weekday(when: datetime, zone: tzinfo) -> int:
    return when.astimezone(zone).weekday()


def arrival_window(minutes: Iterable[int]) -> tuple[str, str] | None:
    """`from`/`to` of the arrivals (minutes of the day): their 5th to 95th percentile (nearest rank), rounded
    out to the quarter hour, at least a quarter long; None without arrivals."""
    ordered = sorted(minutes)
    if not ordered:
        return None
    low, high = (ordered[max(1, math.ceil(pct / 100 * len(ordered))) - 1] for pct in WINDOW_PERCENTILES)
    start = low // QUARTER * QUARTER
    end = min(24 * 60, max(-(-high // QUARTER) * QUARTER, start + QUARTER))
    return clock(start), clock(end)


def clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def weekday_exposure(start: datetime, until: datetime, zone: tzinfo) -> tuple[float, ...]:
    """How many of each weekday (0 = Monday) [start, until) holds in `zone`: a whole day counts 1, a part of one
    its share (a day of a daylight-saving change is the hours it has)."""
    exposure = [0.0] * 7
    day, last = start.astimezone(zone).date(), until.astimezone(zone).date()
    while day <= last:
        midnight = datetime.combine(day, time(), zone).astimezone(UTC)
        following = datetime.combine(day + timedelta(days=1), time(), zone).astimezone(UTC)
        covered = min(until, following) - max(start, midnight)
        if covered > timedelta(0):
            exposure[day.weekday()] += covered / (following - midnight)
        day += timedelta(days=1)
    return tuple(exposure)
