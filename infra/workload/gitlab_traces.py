"""Read the start of each training job's trace (`GET /projects/:id/jobs/:job_id/trace`) through the one GitLab
client, within a budget, for its prepare time (`traces.prepare_of`).

The prepare sections are at a trace's start: each trace is read as a stream, at most `TRACE_BYTES`, and the
connection closed, whatever its size (a 2 GiB log costs 64 KiB). At most `MAX_TRACE_READS` traces a run, spread
evenly over the window's jobs when there are more, and never into the run's last requests (those of the job
list's retries). What one trace's answer does (a 404 for an erased log, a 5xx, a dropped connection, a body
that is no trace) costs that trace; a refusal that would refuse them all (401, 403, a redirect elsewhere, GitLab
unreachable) stops the reads. Either way the measurement goes on without them, and the note says how many were
read, how many not and why.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import gitlab
import requests
from gitlab.exceptions import GitlabError

from infra.gitlab_api import MAX_RETRIES, BadAnswer, PinnedSession, RefusedAnswer, gitlab_status
from infra.workload.job_entries import Job
from infra.workload.traces import Prepare, TraceProblem, prepare_of

MAX_TRACE_READS = 500
"""Traces one run reads (a request each): with the job list's pages and the runners, within the run's 1,000 requests."""
TRACE_BYTES = 64 << 10
"""Bytes of one trace read: the prepare sections and the pod's wait are its first few KiB."""
_CHUNK = 16 << 10


@dataclass
class Traces:
    """What the traces said: each job's prepare (by job id), and what could not be read."""

    prepares: dict[int, Prepare] = field(default_factory=dict)
    wanted: int = 0
    asked: int = 0
    problems: Counter[str] = field(default_factory=Counter)
    """Traces read whose prepare is not known, by reason."""
    refused: Counter[str] = field(default_factory=Counter)
    """Trace requests GitLab refused or that failed, by status (`404 Not Found`, `dropped`)."""
    stopped: str = ""
    """Why the reads stopped before the last trace wanted, or ""."""

    def note(self) -> str:
        """One line: how many traces were read and what is missing, or "" when every trace wanted told."""
        if self.wanted == len(self.prepares):
            return ""
        parts = [f"the prepare time of {len(self.prepares)} of {self.wanted} training jobs is known from their trace"]
        if self.asked < self.wanted and not self.stopped:
            parts.append(f"{self.wanted - self.asked} traces not read: at most {MAX_TRACE_READS} a run")
        if self.stopped:
            parts.append(self.stopped)
        if self.refused:
            parts.append("not read: " + _counts(self.refused))
        if self.problems:
            parts.append("no prepare time: " + _counts(self.problems))
        return "; ".join(parts) + " (those jobs count without it: their duration includes it)"


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{n} {why}" for why, n in sorted(counter.items(), key=lambda item: (-item[1], item[0])))


def spread(jobs: Sequence[Job], most: int) -> list[Job]:
    """At most `most` of `jobs`, evenly spaced over them (every one when they fit)."""
    if len(jobs) <= most:
        return list(jobs)
    return [jobs[index * len(jobs) // most] for index in range(most)]


def read_traces(
    client: gitlab.Gitlab,
    project_path: str,
    jobs: Sequence[Job],
    now: datetime,
    progress: Callable[[str], None],
) -> Traces:
    """The prepare of each of `jobs` (oldest first) that its trace tells, within the budgets above."""
    traces = Traces(wanted=len(jobs))
    if not jobs:
        return traces
    picked = spread(sorted(jobs, key=lambda job: job.id), MAX_TRACE_READS)
    progress(f"reading the start of {len(picked)} training jobs' traces (their prepare time)")
    session = client.session
    for job in picked:
        if isinstance(session, PinnedSession) and session.requests_left() <= MAX_RETRIES + 1:
            traces.stopped = f"{len(picked) - traces.asked} traces not read: the run's requests are spent"
            break
        traces.asked += 1
        try:
            data, complete = _start_of(client, f"{project_path}/jobs/{job.id}/trace")
        except GitlabError as err:
            status = gitlab_status(err, 60)
            traces.refused[status] += 1
            if err.response_code in (401, 403):
                traces.stopped = f"GitLab answered {status} to GET /projects/:id/jobs/:id/trace: no more were asked for"
                break
            continue
        except BadAnswer as err:
            traces.refused[_bad_answer(str(err))] += 1
            continue
        except RefusedAnswer as err:  # another host, GitLab unreachable, the run's requests spent
            traces.stopped = f"stopped: {err}"
            break
        except requests.RequestException:
            traces.refused["dropped or timed out"] += 1
            continue
        outcome = prepare_of(data, job, now, complete=complete)
        if isinstance(outcome, TraceProblem):
            traces.problems[outcome.reason] += 1
        else:
            traces.prepares[job.id] = outcome
    return traces


def _start_of(client: gitlab.Gitlab, path: str) -> tuple[bytes, bool]:
    """The first `TRACE_BYTES` of the trace at `path`, and whether that is all of it; the connection is closed."""
    response = client.http_get(path, streamed=True, raw=True)
    assert isinstance(response, requests.Response)
    data = bytearray()
    try:
        for chunk in response.iter_content(_CHUNK):
            data += chunk
            if len(data) >= TRACE_BYTES:
                return bytes(data[:TRACE_BYTES]), False
    finally:
        response.close()
    return bytes(data), True


def _bad_answer(message: str) -> str:
    """A refused trace answer's reason, without the path (the same for every job): `larger than ...`, `still
    arriving ...`."""
    return message.split(": ", 1)[-1] if ": " in message else message
