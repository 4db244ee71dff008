"""A job's prepare time read from the start of its trace, and whether its pod waited for a node (pure).

The runner writes each stage of a job between `section_start:<unix time>:<name>` and `section_end:<unix
time>:<name>` markers (each followed by `\\r\\e[0K`). Its first stages are `prepare_executor` ("Preparing the
"kubernetes" executor": the executor's settings) and `prepare_script` ("Preparing environment"): in the
Kubernetes executor the job's pod is created and waited for inside `prepare_script` (gitlab-runner 18.x,
`ensurePodsConfigured` on the first stage's `Run`), so the time from the job being picked to its pod running is
from the start of `prepare_executor` to the end of `prepare_script`. GitLab's `duration` starts when the runner
picks the job: this time is inside it, and it is time the job waited, not ran.

**Cold or warm.** While it waits, the runner polls the pod every `poll_interval` (3 s) and writes `Waiting for
pod <ns>/<name> to be running, status is Pending`, then each pod condition that has a reason, one a line,
`\\t<reason>: "<message>"`. A pod that no node can take yet is `Unschedulable` (`0/3 nodes are available: ...`);
one on a node pulling its image is `ContainersNotReady`. A prepare whose trace shows the pod `Unschedulable` (or
a `TriggeredScaleUp` event, where `FF_PRINT_POD_EVENTS` prints events instead) waited for a node: a cold start.
Any other prepare is warm, however long its image pull took. Limits: a pod that waits because the pool's nodes
are full (a slot the runner counted free while a pod still terminates) is Unschedulable too, and counts as cold;
a wait shorter than one poll shows no condition at all.

A trace is input like any other: only markers before the first of another stage count (a job's own script,
later, can print markers too); a stage started twice, an end before its start, a time outside the job's life
(before it was created, after it finished, in the future, with `CLOCK_SKEW` of slack), a prepare longer than the
job's `duration`: each is a `TraceProblem` (one reason), never a figure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from infra.workload.job_entries import Job

PREPARE = ("prepare_executor", "prepare_script")
"""The stages from the job being picked to its pod running (and the prepare script run in it)."""
BEFORE = frozenset({"resolve_secrets"})
"""A stage the runner may write before preparing (a job's secrets)."""
CLOCK_SKEW = timedelta(minutes=10)
"""How far the runner's clock (the markers) may be from GitLab's (the job's times)."""
_MARKER = re.compile(rb"section_(start|end):(\d{1,12}):([A-Za-z0-9_.-]{1,64})(?=\[|\r|\n|\x1b|$)")
_COLD = re.compile(rb"\tUnschedulable: |TriggeredScaleUp")


@dataclass(frozen=True)
class Prepare:
    """How long a job waited from being picked to its pod running, and whether it waited for a node."""

    seconds: int
    cold: bool


@dataclass(frozen=True)
class TraceProblem:
    """Why a trace's prepare time is not known (one clause, the same for every trace of its kind)."""

    reason: str


def prepare_of(data: bytes, job: Job, now: datetime, *, complete: bool = True) -> Prepare | TraceProblem:
    """The prepare of `job` from the start of its trace `data` (all of it when `complete`, else a prefix)."""
    try:
        marks, first, last = _markers(data, complete)
        start, end = _span(marks)
        _within(job, start, end, now)
    except _UnusableError as err:
        return TraceProblem(str(err))
    return Prepare(end - start, bool(_COLD.search(data, first, last)))


class _UnusableError(ValueError):
    """Why a trace's prepare cannot be read; str() is the reason."""


def _markers(data: bytes, complete: bool) -> tuple[dict[tuple[str, str], int], int, int]:
    """The prepare stages' markers, (start|end, stage) to unix time, and where in `data` they begin and end."""
    marks: dict[tuple[str, str], int] = {}
    first = last = 0
    ended = False
    for match in _MARKER.finditer(data):
        kind, at, name = match.group(1).decode(), int(match.group(2)), match.group(3).decode()
        if name in BEFORE:
            continue
        if name not in PREPARE:
            ended = True  # another stage: what follows is the job's own, or later stages
            if marks and ("end", PREPARE[1]) not in marks:
                raise _UnusableError("another section before the prepare's end")
            break
        if (kind, name) in marks:
            raise _UnusableError(f"{name} started or ended twice")
        marks[(kind, name)] = at
        first = match.start() if len(marks) == 1 else first
        last = match.end()
    if not complete and not ended and ("end", PREPARE[1]) not in marks:
        raise _UnusableError("no end of the prepare in the part read")
    return marks, first, last


def _span(marks: dict[tuple[str, str], int]) -> tuple[int, int]:
    """From the first prepare stage's start to `prepare_script`'s end, each stage in order."""
    starts = [marks[("start", name)] for name in PREPARE if ("start", name) in marks]
    if not starts:
        raise _UnusableError("no prepare section")
    end = marks.get(("end", PREPARE[1]))
    if end is None:
        raise _UnusableError("the prepare never ended (the job ended while its pod waited)")
    if any(marks.get(("end", name), 1 << 62) < marks.get(("start", name), 0) for name in PREPARE):
        raise _UnusableError("a prepare section ends before it starts")
    if end < starts[0] or marks.get(("end", PREPARE[0]), end) > end:
        raise _UnusableError("the prepare sections are out of order")
    return starts[0], end


def _within(job: Job, start: int, end: int, now: datetime) -> None:
    """The marker times `start`..`end` are this job's: after its creation, before its end and now, and no longer
    than its `duration` (each with CLOCK_SKEW of slack)."""
    if end > (now + CLOCK_SKEW).timestamp():
        raise _UnusableError("a prepare time in the future")
    if start < (job.created_at - CLOCK_SKEW).timestamp():
        raise _UnusableError("a prepare before the job was created")
    if job.started_at is not None and job.duration is not None:
        if end > (job.started_at + timedelta(seconds=job.duration) + CLOCK_SKEW).timestamp():
            raise _UnusableError("a prepare after the job")
        if end - start > job.duration + CLOCK_SKEW.total_seconds():
            raise _UnusableError("a prepare longer than the job's duration")
