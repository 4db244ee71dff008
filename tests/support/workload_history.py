"""A project's CI job history in the shape GitLab's jobs API returns it, built from known figures.

Two weeks, Monday to Monday, in the dev stack's time zone (Europe/Paris), and two days before them. Pipelines:

- **merge requests** (`merge_request_event`), 3 a working day at 09:10, 13:20 and 17:40: each runs
  `train-validate-<family>` for every family of both profiles;
- **RL hyperopt trials** started by hand (`web`) on Mon, Wed and Fri at 13:30: `hyperopt-dqn`, `hyperopt-ppo`;
- **the supervised hyperopt**, a schedule (`schedule`) every night at 22:00: `hyperopt: [<family>]`, a
  `parallel: matrix` job.

Each pipeline also runs a lint job (not training, on a shared runner) and a skipped docs job. Each kind's
successful jobs run for durations whose nearest-rank p50 and p90 are the kind's figures exactly, and its jobs wait
for a runner 4 s at the median, 30 s at p90 (0.1 and 0.5 min). A few jobs fail (`runner_system_failure` after the
poll timeout, a `script_failure`), one never starts (`stuck_or_timeout_failure`), and the two days before the
window hold older jobs, far longer, that must not count.

Each training job of the window that a runner took has a trace (`_trace`, which the fake serves as
`GET /projects/:id/jobs/:id/trace` and leaves out of the jobs list), shaped like gitlab-runner 18.9's: its
`prepare_executor` and `prepare_script` sections, the pod's `Waiting for pod ...` lines, then the script. Every
fourth job of a pool (by id) waited for a node (its pod `Unschedulable`): a cold start, whose prepare times have
the pool's `COLD` p50, p90 and max exactly; the others' pods were on a node (`ContainersNotReady` while the image
is pulled): warm, `WARM` at p50 and p90. GitLab's `duration` is the run plus the prepare (it starts when the runner
takes the job), so the run times measured without the prepare are the kinds' figures. A job that failed waiting
for its pod (`runner_system_failure`) has a prepare that never ends.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from random import Random
from typing import Any
from zoneinfo import ZoneInfo

RL_FAMILIES = ("dqn", "ppo")
SUPERVISED_FAMILIES = ("tft", "mamba2", "tggn", "tlob", "liquid", "kan", "xlstm", "diffusion")
FAMILIES = {"rl": RL_FAMILIES, "supervised": SUPERVISED_FAMILIES}
RUNNERS: dict[str | None, dict[str, Any]] = {
    "rl": {
        "id": 11,
        "description": "gpu-ci: Kapsule GPU runner (managed by Pulumi) - pool ci-compile",
        "tags": ["ci-compile", "gpu", "kapsule"],
    },
    "supervised": {
        "id": 12,
        "description": "gpu-ci: Kapsule GPU runner (managed by Pulumi) - pool ci-training",
        "tags": ["ci-training", "kapsule"],
    },
    None: {"id": 3, "description": "shared-runners-manager-3", "tags": []},
}
POOLS = {"rl": "ci-compile", "supervised": "ci-training"}
COLD = {"ci-compile": (540, 690, 800), "ci-training": (600, 750, 900)}
"""Each pool's cold starts in seconds: p50, p90 (690 s: 11.5 min, written as 12) and the worst."""
WARM = (20, 40)
"""The warm prepares' p50 and p90, in seconds (scheduling on a node, and the image pull)."""
POLL_TIMEOUT_SECONDS = 49 * 60
"""The dev stack's poll_timeout: a job pod that waits longer for a node fails with runner_system_failure."""
TIME_ZONE = ZoneInfo("Europe/Paris")
"""The dev stack's `workload.time_zone`: the hours below are told in it."""
WORKING_DAYS = (0, 1, 2, 3, 4)
EVERY_DAY = (0, 1, 2, 3, 4, 5, 6)


@dataclass(frozen=True)
class KindFigures:
    """One kind of a profile: how its jobs are made, and the `kinds.<kind>` measuring them must give back."""

    profile: str
    kind: str
    job_class: str
    jobs_per_day: int
    minutes: int
    """The p50 of the successful jobs' durations (`minutes_per_job`)."""
    p90: int
    days: str
    window: tuple[str, str]
    """`from`/`to`: the arrival times below, rounded out to the quarter hour."""
    failures: tuple[tuple[int, str], ...] = ()
    """(index among the kind's jobs in the window, failure_reason) of the jobs that fail after running."""

    def written(self) -> dict[str, Any]:
        return {
            "class": self.job_class,
            "jobs_per_day": self.jobs_per_day,
            "minutes_per_job": self.minutes,
            "minutes_p90": self.p90,
            "days": self.days,
            "from": self.window[0],
            "to": self.window[1],
        }


@dataclass(frozen=True)
class Schedule:
    """Pipelines of one source: on these weekdays, at these local times, each running these jobs."""

    source: str
    weekdays: tuple[int, ...]
    times: tuple[str, ...]
    jobs: tuple[tuple[str, str, str], ...]
    """(profile, kind, job name) of each training job of a pipeline, in YAML order."""


def schedules(families: dict[str, tuple[str, ...]]) -> tuple[Schedule, ...]:
    """The history's pipelines, each running a job per family of its profile."""

    def jobs(profile: str, kind: str, name: str) -> tuple[tuple[str, str, str], ...]:
        return tuple((profile, kind, name.format(family=family)) for family in families[profile])

    return (
        Schedule(
            "merge_request_event",
            WORKING_DAYS,
            ("09:10", "13:20", "17:40"),
            jobs("rl", "train-validate", "train-validate-{family}")
            + jobs("supervised", "train-validate", "train-validate-{family}"),
        ),
        Schedule("web", (0, 2, 4), ("13:30",), jobs("rl", "hyperopt", "hyperopt-{family}")),
        Schedule("schedule", EVERY_DAY, ("22:00",), jobs("supervised", "hyperopt", "hyperopt: [{family}]")),
    )


SCHEDULES = schedules(FAMILIES)
KINDS = (
    KindFigures(
        "rl",
        "train-validate",
        "merge_request",
        6,
        25,
        31,
        "Mon-Fri",
        ("09:00", "17:45"),
        ((10, "runner_system_failure"), (25, "runner_system_failure"), (40, "runner_system_failure")),
    ),
    KindFigures("rl", "hyperopt", "batch", 2, 147, 150, "Mon,Wed,Fri", ("13:30", "13:45")),
    KindFigures(
        "supervised",
        "train-validate",
        "merge_request",
        24,
        45,
        51,
        "Mon-Fri",
        ("09:00", "17:45"),
        ((50, "script_failure"), (120, "runner_system_failure")),
    ),
    KindFigures("supervised", "hyperopt", "batch", 8, 60, 75, "Mon-Sun", ("22:00", "22:15")),
)


@dataclass(frozen=True)
class Figures:
    """What the history is built from, and so what measuring it must give back."""

    days: int = 14
    before_window_days: int = 7
    kinds: tuple[KindFigures, ...] = KINDS
    schedules: tuple[Schedule, ...] = SCHEDULES
    stuck_day: int = 4
    """The window's day (0: the first) on whose evening a merge request's supervised job is never taken."""

    def kind(self, profile: str, kind: str) -> KindFigures:
        return next(k for k in self.kinds if (k.profile, k.kind) == (profile, kind))

    def written(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Profile -> kind -> the keys `--write` must put in the stack file."""
        result: dict[str, dict[str, dict[str, Any]]] = {}
        for kind in self.kinds:
            result.setdefault(kind.profile, {})[kind.kind] = kind.written()
        return result

    def pipelines(self) -> int:
        """Pipelines with a training job in the window."""
        return sum(len(s.times) * sum(1 for day in range(self.days) if (day % 7) in s.weekdays) for s in self.schedules)


@dataclass
class _Slot:
    """One training job to be: where it sits, and (once known) how long it ran and waited."""

    job_id: int
    pipeline: dict[str, Any]
    at: datetime
    profile: str
    kind: str
    name: str
    index: int | None
    """Its place among its kind's jobs in the window (None: before the window)."""
    seconds: float | None = None
    queued: float | None = None
    failure: str | None = None
    prepare: int | None = None
    """Seconds from being taken to its pod running (None: it never ran, or failed waiting)."""
    cold: bool = False


@dataclass
class _Ids:
    job: int = 5000
    pipeline: int = 900

    def next_job(self) -> int:
        self.job += 1
        return self.job

    def next_pipeline(self) -> int:
        self.pipeline += 1
        return self.pipeline


def build_history(until: datetime, figures: Figures = Figures()) -> list[dict[str, Any]]:
    """The jobs, oldest first (ids grow with time, as GitLab's do). `until` is a Monday 00:00 UTC."""
    assert until.weekday() == 0 and until.astimezone(TIME_ZONE).hour < 12, "the window is whole weeks from Monday"
    first_day = until.astimezone(TIME_ZONE).date() - timedelta(days=figures.days + figures.before_window_days)
    since = until - timedelta(days=figures.days)
    starts: list[tuple[datetime, Schedule | None]] = []
    for offset in range(figures.days + figures.before_window_days):
        day = first_day + timedelta(days=offset)
        starts += [(_local(day, c), s) for s in figures.schedules if day.weekday() in s.weekdays for c in s.times]
    stuck_day = first_day + timedelta(days=figures.before_window_days + figures.stuck_day)
    starts.append((_local(stuck_day, "20:00"), None))
    ids, entries, slots = _Ids(), list[dict[str, Any] | _Slot](), list[_Slot]()
    counters: dict[tuple[str, str], int] = {}
    for at, runs in sorted(starts, key=lambda item: item[0]):
        if runs is None:
            entries.append(_stuck_job(ids, at))
            continue
        pipeline = _pipeline(ids, at, runs.source)
        entries.append(_job(ids.next_job(), pipeline, at, "lint", stage="test", profile=None, seconds=60, queued=2))
        for profile, kind, name in runs.jobs:
            index = None
            if at >= since:
                index = counters.get((profile, kind), 0)
                counters[(profile, kind)] = index + 1
            slots.append(_Slot(ids.next_job(), pipeline, at, profile, kind, name, index))
            entries.append(slots[-1])
        entries.append(
            _job(ids.next_job(), pipeline, at, "pages", stage="deploy", profile=None, queued=0, status="skipped")
        )
    _durations(figures, slots)
    return [
        _job(
            item.job_id,
            item.pipeline,
            item.at,
            item.name,
            stage="train",
            profile=item.profile,
            seconds=item.seconds,
            queued=item.queued,
            failure=item.failure,
            trace=_prepare_trace(item),
            prepare=(item.prepare, item.cold),
        )
        if isinstance(item, _Slot)
        else item
        for item in entries
    ]


def _local(day: Any, clock: str) -> datetime:
    hours, minutes = (int(part) for part in clock.split(":"))
    return datetime.combine(day, time(hours, minutes), TIME_ZONE).astimezone(UTC)


def _durations(figures: Figures, slots: list[_Slot]) -> None:
    """Each kind's durations and waits, exact at its percentiles; the jobs before the window run 5 h."""
    for kind in figures.kinds:
        mine = [s for s in slots if (s.profile, s.kind) == (kind.profile, kind.kind) and s.index is not None]
        failures = dict(kind.failures)
        successes = [s for s in mine if s.index not in failures]
        runs = exact_percentiles(len(successes), kind.minutes * 60, kind.p90 * 60, below=120, above=900, seed=kind.kind)
        waits = exact_percentiles(len(mine), 4, 30, below=1, above=60, seed=kind.profile)
        for slot, seconds in zip(successes, runs, strict=True):
            slot.seconds = seconds
        for slot, queued in zip(mine, waits, strict=True):
            slot.queued = queued
            if slot.index in failures:
                slot.failure = failures[slot.index]
                slot.seconds = 600 if slot.failure == "script_failure" else POLL_TIMEOUT_SECONDS
    for slot in slots:
        if slot.index is None:
            slot.seconds, slot.queued = 5 * 3600, 4  # counting them would move every figure
    _prepares(slots)


def _prepares(slots: list[_Slot]) -> None:
    """Each pool's jobs of the window that got their pod: every fourth (by id) cold, exact at the pool's COLD
    percentiles, the others warm; the prepare is added to the job's duration (GitLab counts it as running)."""
    for pool, (p50, p90, worst) in COLD.items():
        mine = [s for s in slots if POOLS[s.profile] == pool and s.index is not None and s.failure != RSF]
        cold, warm = mine[::4], [s for i, s in enumerate(mine) if i % 4]
        cold_values = exact_percentiles(len(cold), p50, p90, below=20, above=worst - p90, seed=pool)
        warm_values = exact_percentiles(len(warm), WARM[0], WARM[1], below=2, above=10, seed=pool + "-warm")
        for slot, seconds in [*zip(cold, cold_values, strict=True), *zip(warm, warm_values, strict=True)]:
            slot.prepare, slot.cold = int(seconds), slot in cold
            assert slot.seconds is not None
            slot.seconds += seconds


RSF = "runner_system_failure"


def _prepare_trace(slot: _Slot) -> str | None:
    """The start of the job's trace as gitlab-runner 18.9 writes it (None: a job outside the window)."""
    if slot.index is None or slot.queued is None:
        return None
    start = int((slot.at + timedelta(seconds=slot.queued)).timestamp())
    pod = f"gitlab-runner/runner-{POOLS[slot.profile]}-project-42-concurrent-0-{slot.job_id}"
    lines = [
        "\x1b[0KRunning with gitlab-runner 18.9.0 (a1b2c3d4)\x1b[0;m",
        f"\x1b[0K  on gpu-ci-{POOLS[slot.profile]} t3_Abc, system ID: r_x1\x1b[0;m",
        f"section_start:{start}:prepare_executor\r\x1b[0K\x1b[0K\x1b[36;1mPreparing the kubernetes executor\x1b[0;m",
        "\x1b[0KUsing Kubernetes namespace: gitlab-runner\x1b[0;m",
        f"section_end:{start + 1}:prepare_executor\r\x1b[0K",
        f"section_start:{start + 1}:prepare_script\r\x1b[0K\x1b[0K\x1b[36;1mPreparing environment\x1b[0;m",
        f"Waiting for pod {pod} to be running, status is Pending",
    ]
    if slot.failure == RSF or slot.cold:
        lines.append('\tUnschedulable: "0/2 nodes are available: 1 Insufficient nvidia.com/gpu."')
    lines.append('\tContainersNotReady: "containers with unready status: [build helper]"')
    if slot.failure == RSF:
        return "\n".join(
            [
                *lines,
                "ERROR: Job failed (system failure): prepare environment: waiting for pod running: "
                "timed out waiting for pod to start",
                "",
            ]
        )
    assert slot.prepare is not None
    lines += [
        f"Running on runner-{slot.job_id} via gitlab-runner-7c9f...",
        f"section_end:{start + slot.prepare}:prepare_script\r\x1b[0K",
        f"section_start:{start + slot.prepare}:get_sources\r\x1b[0K\x1b[0K\x1b[36;1mGetting source from Git\x1b[0;m",
        f"section_end:{start + slot.prepare + 3}:get_sources\r\x1b[0K",
        f"section_start:{start + slot.prepare + 3}:step_script\r\x1b[0K\x1b[0K\x1b[36;1mExecuting step_script\x1b[0;m",
        "$ python train.py",
        "",
    ]
    return "\n".join(lines)


def exact_percentiles(count: int, p50: float, p90: float, *, below: float, above: float, seed: str) -> list[float]:
    """`count` values, in a seeded order, whose nearest-rank p50 and p90 are `p50` and `p90`: a third of them
    spread under the median, the median, values up to the p90, the p90, and the rest `above` it."""
    assert count >= 2 and p90 >= p50
    k50, k90 = math.ceil(0.5 * count), math.ceil(0.9 * count)
    ordered = [p50 - below * (1 + i % 3) for i in range(k50 - 1)] + [p50] * (k90 - k50) + [p90]
    ordered += [p90 + above] * (count - k90)
    assert len(ordered) == count and ordered[k50 - 1] == p50 and ordered[k90 - 1] == p90
    values = list(ordered)
    Random(seed).shuffle(values)
    return values


def _pipeline(ids: _Ids, at: datetime, source: str) -> dict[str, Any]:
    number = ids.next_pipeline()
    return {
        "id": number,
        "iid": number - 800,
        "project_id": 42,
        "sha": f"{number:040x}",
        "ref": "main",
        "status": "success",
        "source": source,
        "created_at": _stamp(at),
        "updated_at": _stamp(at + timedelta(hours=2)),
        "web_url": f"https://gitlab.example.com/ml-team/training/-/pipelines/{number}",
    }


def _stuck_job(ids: _Ids, at: datetime) -> dict[str, Any]:
    """A merge request's supervised job no runner took: failed after GitLab's pending timeout, never started."""
    pipeline = _pipeline(ids, at, "merge_request_event")
    pipeline["status"] = "failed"
    return _job(
        ids.next_job(),
        pipeline,
        at,
        "train-validate-tft",
        stage="train",
        profile="supervised",
        seconds=None,
        queued=None,
        failure="stuck_or_timeout_failure",
        started=False,
    )


def _job(
    job_id: int,
    pipeline: dict[str, Any],
    at: datetime,
    name: str,
    *,
    stage: str,
    profile: str | None,
    seconds: float | None = None,
    queued: float | None,
    failure: str | None = None,
    status: str | None = None,
    started: bool = True,
    trace: str | None = None,
    prepare: tuple[int | None, bool] = (None, False),
) -> dict[str, Any]:
    status = status or ("failed" if failure else "success")
    ran = started and status != "skipped"
    duration = float(seconds) if ran and seconds is not None else None
    start = at + timedelta(seconds=queued or 0)
    runner = RUNNERS[profile]
    tags = {"rl": ["gpu", "kapsule"], "supervised": ["ci-training", "kapsule"], None: []}[profile]
    job: dict[str, Any] = {
        "id": job_id,
        "status": status,
        "stage": stage,
        "name": name,
        "ref": "main",
        "tag": False,
        "coverage": None,
        "allow_failure": False,
        "created_at": _stamp(at),
        "started_at": _stamp(start) if ran else None,
        "finished_at": _stamp(start + timedelta(seconds=duration)) if duration is not None else None,
        "erased_at": None,
        "duration": duration,
        "queued_duration": float(queued) if ran and queued is not None else None,
        "user": {"id": 7, "username": "ml-bot", "name": "ML bot", "state": "active"},
        "commit": {"id": pipeline.get("sha"), "short_id": str(pipeline.get("sha", ""))[:8], "title": "Nightly"},
        "pipeline": pipeline,
        "web_url": f"https://gitlab.example.com/ml-team/training/-/jobs/{job_id}",
        "project": {"ci_job_token_scope_enabled": False},
        "artifacts": [],
        "runner": (
            {
                "id": runner["id"],
                "description": runner["description"],
                "ip_address": None,
                "active": True,
                "paused": False,
                "is_shared": profile is None,
                "runner_type": "instance_type" if profile is None else "project_type",
                "name": "gitlab-runner",
                "online": True,
                "status": "online",
            }
            if ran
            else None
        ),
        "artifacts_expire_at": None,
        "archived": False,
        "tag_list": tags,
    }
    if status == "failed":
        job["failure_reason"] = failure
    if trace is not None and ran:
        job["_trace"] = trace
        job["_prepare"], job["_cold"] = prepare  # what the trace says: the truth the measurement must find
    return job


def traced_job(
    job_id: int, at: datetime, name: str, *, source: str, queued: int, prepare: int, run: int, cold: bool
) -> dict[str, Any]:
    """One successful supervised job of its own pipeline (id `job_id`), with its trace: queued `queued` s, its pod
    running `prepare` s after it was taken (`cold`: it waited for a node), then running `run` s."""
    pipeline = _pipeline(_Ids(pipeline=job_id - 1), at, source)
    slot = _Slot(job_id, pipeline, at, "supervised", name, name, 0, run + prepare, queued, prepare=prepare, cold=cold)
    trace = _prepare_trace(slot)
    return _job(
        job_id,
        pipeline,
        at,
        name,
        stage="train",
        profile="supervised",
        seconds=run + prepare,
        queued=queued,
        trace=trace,
        prepare=(prepare, cold),
    )


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def without_sources(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The jobs as a GitLab before `PipelineBasic.source` lists them: their pipeline without its source."""
    copies = copy.deepcopy(jobs)
    for job in copies:
        job["pipeline"].pop("source", None)
    return copies


def pipelines_of(jobs: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Each pipeline of the jobs by id, with its source: what `GET /projects/:id/pipelines/:id` answers."""
    return {job["pipeline"]["id"]: copy.deepcopy(job["pipeline"]) for job in jobs}
