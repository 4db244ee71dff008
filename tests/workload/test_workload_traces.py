"""`workload --from-gitlab` reads the start of each training job's trace: the cold starts per pool, the waits per
class, the run times without the prepare, and the model's error, against histories whose prepares are known
(tests/support/workload_history.py: every job's `_prepare` and `_cold` are what its trace says), and against
hostile traces, each a bounded read and one note."""

from __future__ import annotations

import copy
import itertools
import math
import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.fake_gitlab import Drop, FakeGitLab, Raw, running
from support.workload_history import COLD, POOLS, TIME_ZONE, WARM, traced_job
from test_workload_gitlab import (
    HISTORY,
    READER,
    TWO_WEEKS_HISTORY,
    UNTIL,
    WEEK_HISTORY,
    _history,
    _run,
    _run_week,
    measured_history,
)

from infra.config.pools import PoolSpec
from infra.offline.stack_config import PROJECT_ROOT
from infra.offline.stack_edit import set_keys
from infra.workload import gitlab_traces
from infra.workload.waits import COLD_KEYS, PoolStarts, cold_start_edit

SINCE = UNTIL - timedelta(days=14)


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    with running(FakeGitLab(tokens={"reader": READER}, ci_history=_history(HISTORY))) as server:
        yield server


@pytest.fixture
def one_week() -> Iterator[FakeGitLab]:
    """WEEK_HISTORY (58 traced jobs; HISTORY has 424): the history around the one trace whose answer a test
    chooses (what the other traces cost is not what those tests are about)."""
    with running(FakeGitLab(tokens={"reader": READER}, ci_history=_history(WEEK_HISTORY))) as server:
        yield server


@pytest.fixture
def stack(tmp_path: Path) -> Path:
    path = tmp_path / "Pulumi.dev.yaml"
    shutil.copy(PROJECT_ROOT / "Pulumi.dev.yaml", path)
    return path


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITLAB_TOKEN", "reader")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")


def _rows(err: str, heading: str) -> dict[str, list[str]]:
    """The table after the line starting with `heading`, by its first cell."""
    lines = err.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading)) + 3  # heading, header, rule
    rows = {}
    for line in itertools.takewhile(lambda text: text.strip() and not text.startswith("note:"), lines[start:]):
        cells = re.split(r"  +", line.strip())
        rows[cells[0]] = cells[1:]
    return rows


def _rank(values: list[float], pct: int) -> float:
    """Nearest rank, written out again: the test's own, not the product's."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(pct * len(ordered) / 100)) - 1]


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f}"


def _in_window(job: dict[str, Any]) -> bool:
    created = datetime.fromisoformat(job["created_at"].replace("Z", "+00:00"))
    return SINCE <= created < UNTIL


def _traced(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The jobs of the window whose trace tells their prepare."""
    return [job for job in jobs if job.get("_prepare") is not None and _in_window(job)]


def test_the_traces_give_back_the_cold_starts_waits_and_run_times_the_history_holds() -> None:
    run = measured_history()  # HISTORY's two weeks, as test_workload_gitlab.py measures them
    assert run.code == 0
    err = run.err
    traced = _traced(HISTORY)
    pools = _rows(err, "prepare: from a runner taking a job")
    for profile, pool in POOLS.items():
        mine = [job for job in traced if job["runner"]["id"] == {"rl": 11, "supervised": 12}[profile]]
        cold = [job["_prepare"] for job in mine if job["_cold"]]
        warm = [job["_prepare"] for job in mine if not job["_cold"]]
        assert len(cold) == len(mine[::4])  # every fourth job of the pool waited for a node
        p50, p90, worst = COLD[pool]
        assert (_rank(cold, 50), _rank(cold, 90), max(cold)) == (p50, p90, worst)
        assert (_rank(warm, 50), _rank(warm, 90)) == WARM
        assert pools[pool] == [
            str(len(cold)),
            f"{_minutes(p50)} / {_minutes(p90)} / {_minutes(worst)}",
            str(len(warm)),
            f"{_minutes(WARM[0])} / {_minutes(WARM[1])}",
        ]
    waits = _rows(err, "wait from queued to running")
    for job_class, sources in (("merge_request", {"merge_request_event"}), ("batch", {"web", "schedule"})):
        seconds = [job["queued_duration"] + job["_prepare"] for job in traced if job["pipeline"]["source"] in sources]
        measured = f"{_minutes(_rank(seconds, 50))} / {_minutes(_rank(seconds, 95))}"
        assert waits[job_class][:2] == [str(len(seconds)), measured]
    # Run times: every duration of a successful job the traces told has its prepare taken off, and the kinds'
    # figures come back exactly (test_workload_gitlab.py checks them: without the traces they would not).
    successes = [job for job in HISTORY if _in_window(job) and job["status"] == "success" and job["stage"] == "train"]
    told = [job for job in successes if job.get("_prepare") is not None]
    assert f"the trace told it ({len(told)} of {len(successes)} durations)" in err
    assert "25.0 / 31.0" in err and "147.0 / 150.0" in err
    notes = [line for line in err.splitlines() if line.startswith("note: the prepare time")]
    assert notes == [
        f"note: the prepare time of {len(traced)} of {len(traced) + 4} training jobs is known from their trace; no "
        "prepare time: 4 the prepare never ended (the job ended while its pod waited) (those jobs count without it: "
        "their duration includes it)"
    ]
    written = _rows(err, "assumed vs measured (platform.pools)")
    for pool, (p50, p90, worst) in COLD.items():
        minutes = [math.floor(seconds / 60 + 0.5) for seconds in (p50, p90, worst)]  # half up: 690 s is 12
        for key, value in zip(COLD_KEYS, minutes, strict=True):
            spec_takes = key in PoolSpec.model_fields
            assert written[f"pools.{pool}.{key}"][2] == (str(value) if spec_takes else "-")


def test_the_cold_start_keys_are_written_through_the_editor_where_the_spec_takes_them() -> None:
    """The contract of the three keys (median, p90, worst) with the spec that reads them: each a whole minute,
    in order; one the spec does not take is shown, not written."""
    starts = {"ci-compile": PoolStarts("ci-compile", (540.0, 690.0, 800.0, 560.0), (20.0,))}
    settings, rows = cold_start_edit(starts, {}, [*PoolSpec.model_fields, *COLD_KEYS])
    assert settings == [
        (("pools", "ci-compile", "cold_start_minutes"), 9),  # nearest rank of 4: the 2nd, 560 s
        (("pools", "ci-compile", "cold_start_p90_minutes"), 13),
        (("pools", "ci-compile", "cold_start_max_minutes"), 13),
    ]
    text = set_keys((PROJECT_ROOT / "Pulumi.dev.yaml").read_text(encoding="utf-8"), "dev", "gpu-ci", settings)
    pool = yaml.safe_load(text)["config"]["gpu-ci:platform"]["pools"]["ci-compile"]
    assert {key: pool[key] for key in COLD_KEYS} == {
        "cold_start_minutes": 9,
        "cold_start_p90_minutes": 13,
        "cold_start_max_minutes": 13,
    }
    only_median, _ = cold_start_edit(starts, {}, ["cold_start_minutes"])
    assert only_median == settings[:1]
    assert [row.written for row in rows] == [9, 13, 13]


def _isolated(days: int = 5) -> list[dict[str, Any]]:
    """Each working day at 10:00 a merge request's job on a pool at zero (its pod waits 600 s for a node), and at
    10:20 a scheduled job that finds the node up (its pod runs after 30 s): one job at a time, the node removed
    between days. The model (the node takes the measured 10 min to start, a pod on a node runs at once) waits 600
    s and 0 s; GitLab waited 604 s and 34 s (each job 4 s in the queue first)."""
    jobs, job_id = [], 7000
    for day in range(days):
        morning = datetime.combine((UNTIL - timedelta(days=7)).date() + timedelta(days=day), datetime.min.time())
        at = morning.replace(hour=10, tzinfo=TIME_ZONE).astimezone(UTC)
        for offset, name, source, prepare, run, cold in (
            (0, "train-validate-tft", "merge_request_event", 600, 1800, True),
            (20, "hyperopt: [tft]", "schedule", 30, 600, False),
        ):
            job_id += 2
            jobs.append(
                traced_job(
                    job_id,
                    at + timedelta(minutes=offset),
                    name,
                    source=source,
                    queued=4,
                    prepare=prepare,
                    run=run,
                    cold=cold,
                )
            )
    return jobs


def test_the_models_error_is_the_replayed_window_against_the_measured_waits(
    stack: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with running(FakeGitLab(tokens={"reader": READER}, ci_history=_history(_isolated()))) as gitlab:
        assert _run_week(stack, gitlab) == 0
    out, err = capsys.readouterr()
    assert _rows(err, "prepare: from a runner taking a job")["ci-training"] == [
        "5",
        "10.0 / 10.0 / 10.0",
        "5",
        "0.5 / 0.5",
    ]
    waits = _rows(err, "wait from queued to running")
    assert waits["merge_request"] == ["5", "10.1 / 10.1", "10.0 / 10.0", "0.99 / 0.99"]  # 600 / 604
    assert waits["batch"] == ["5", "0.6 / 0.6", "0.0 / 0.0", "0.00 / 0.00"]  # 0 / 34: the model has no warm prepare
    kinds = yaml.safe_load(out)["workload"]["profiles"]["supervised"]["kinds"]
    assert (kinds["train-validate"]["minutes_per_job"], kinds["hyperopt"]["minutes_per_job"]) == (30, 10)


HUGE = 2 << 30
"""A 2 GiB trace: read by its first 64 KiB."""


def _first_traced() -> dict[str, Any]:
    return next(job for job in WEEK_HISTORY if job.get("_prepare") is not None)


def _never_ended(jobs: list[dict[str, Any]]) -> int:
    """The jobs of the window with a trace whose prepare never ended (they failed waiting for their pod)."""
    return len([job for job in jobs if job.get("_trace") is not None and job["_prepare"] is None and _in_window(job)])


def _endless(prefix: bytes) -> Iterator[bytes]:
    yield prefix
    yield from itertools.repeat(b"\x00" * 65_536, HUGE // 65_536)


@pytest.mark.parametrize(
    ("answer", "note"),
    [
        (Raw(b"Job succeeded\n", "text/plain"), "1 no prepare section"),
        (Raw(b"section_start:1:prepare_script\r\x1b[0K" * 2, "text/plain"), "1 prepare_script started or ended twice"),
        (Raw(b"\x00\xff\xfe\xfd" * 5000, "text/plain"), "1 no prepare section"),
        (Raw(_endless(b"Running with gitlab-runner\n"), "text/plain"), "1 no end of the prepare in the part read"),
        ((404, {"message": "404 Not Found"}), "not read: 1 404 Not Found"),
        ((500, {"message": "500 Internal Server Error"}), "not read: 1 500 Internal Server Error"),
        ((502, Raw(b"[" * 5000, "application/json")), "not read: 1 502"),
        (Drop(), "not read: 1 dropped or timed out"),
    ],
    ids=["no-section", "two-starts", "binary", "2-GiB", "404", "500", "502-deep-json", "dropped"],
)
def test_a_hostile_or_failed_trace_costs_a_bounded_read_and_one_note(
    answer: Any, note: str, stack: Path, one_week: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    gitlab = one_week
    assert gitlab.ci_history is not None
    job = _first_traced()
    gitlab.ci_history.traces[job["id"]] = answer
    assert _run_week(stack, gitlab) == 0
    err = capsys.readouterr().err
    [line] = [line for line in err.splitlines() if line.startswith("note: the prepare time")]
    traced, wanted = len(_traced(WEEK_HISTORY)), len(_traced(WEEK_HISTORY)) + _never_ended(WEEK_HISTORY)
    assert line.startswith(f"note: the prepare time of {traced - 1} of {wanted} training jobs is known"), line
    assert note in line and "Traceback" not in err
    assert gitlab.bytes_sent < 64 << 20  # the 2 GiB trace was not read through
    assert len([r for r in gitlab.requests if r.path.endswith(f"/jobs/{job['id']}/trace")]) == 1  # no retry


@pytest.mark.parametrize(("status", "said"), [(403, "403 Forbidden"), (401, "401 Unauthorized")])
def test_a_refused_trace_stops_the_reads_and_the_run_goes_on(
    status: int, said: str, stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gitlab.ci_history is not None
    job = next(job for job in HISTORY if job.get("_prepare") is not None and _in_window(job))
    gitlab.ci_history.traces[job["id"]] = (status, {"message": said})
    assert _run(stack, gitlab) == 0
    err = capsys.readouterr().err
    assert f"GitLab answered {said} to GET /projects/:id/jobs/:id/trace: no more were asked for" in err
    assert len([r for r in gitlab.requests if r.path.endswith("/trace")]) <= 1 + len(
        [j for j in _traced(HISTORY) if j["id"] < job["id"]]
    )


def test_a_trace_of_another_time_is_not_a_figure(
    stack: Path, one_week: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    """Times in the future, or before the job was created: the marker times are not this job's."""
    gitlab = one_week
    assert gitlab.ci_history is not None
    first, second = _traced(WEEK_HISTORY)[:2]
    future = int((datetime.now(UTC) + timedelta(days=30)).timestamp())
    for job, at in ((first, future), (second, 1_000_000_000)):
        text = f"section_start:{at}:prepare_script\r\x1b[0K\nsection_end:{at + 60}:prepare_script\r\x1b[0K\n"
        gitlab.ci_history.traces[job["id"]] = Raw(text.encode(), "text/plain")
    assert _run_week(stack, gitlab) == 0
    err = capsys.readouterr().err
    assert "1 a prepare before the job was created" in err and "1 a prepare time in the future" in err


def test_the_trace_budget_spreads_its_reads_over_the_window_and_says_it_cut(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gitlab_traces, "MAX_TRACE_READS", 10)
    assert _run(stack, gitlab) == 0
    err = capsys.readouterr().err
    asked = [int(r.path.split("/")[-2]) for r in gitlab.requests if r.path.endswith("/trace")]
    ran = sorted(job["id"] for job in HISTORY if _in_window(job) and job["stage"] == "train" and job["started_at"])
    assert len(asked) == 10 and asked[0] == ran[0] and asked[-1] >= ran[len(ran) * 9 // 10]
    assert f"{len(ran) - 10} traces not read: at most 10 a run" in err


def test_a_history_without_traces_measures_as_before_and_says_so(
    stack: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A GitLab whose traces are all gone (erased, expired): the figures are the job list's, durations with the
    prepare in them, one note; nothing to replay, nothing written for the pools. Two weeks (TWO_WEEKS_HISTORY): the
    rl hyperopt p90 of 12 jobs is no cold start's even with the prepare in it (over one week, of 6 jobs, it is, and
    the spec refuses its 162 min)."""
    bare = [
        {key: value for key, value in job.items() if not key.startswith("_")}
        for job in copy.deepcopy(TWO_WEEKS_HISTORY)
    ]
    with running(FakeGitLab(tokens={"reader": READER}, ci_history=_history(bare))) as gitlab:
        assert _run(stack, gitlab) == 0
    err = capsys.readouterr().err
    asked = len(_traced(TWO_WEEKS_HISTORY)) + _never_ended(TWO_WEEKS_HISTORY)  # every trace the history has: 116
    assert f"not read: {asked} 404 Not Found" in err
    assert "platform.pools" not in err and "model p50" in err
