"""`workload --from-gitlab` against a GitLab that answers badly: wrong fields, wrong shapes, endless or circular
pages, huge bodies, odd rate-limit headers, control characters, figures the spec refuses.

The invariant everywhere: exit 0 with a plausible result, or exit 1/2 with one short `error:` line; never a
traceback, a hang, a sleep past the cap, a raw control character or the token in the output.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.fake_gitlab import CiHistory, FakeGitLab, Raw, running
from test_workload_gitlab import READER, WEEK, WEEK_HISTORY, _history, _job_pages, _run_week, before_equals_after

from infra import gitlab_api
from infra.__main__ import main
from infra.config.load import load_spec
from infra.offline.stack_config import PROJECT_ROOT, load_stack_config
from infra.workload import gitlab_jobs
from infra.workload.job_entries import read_job

FINISHED = [job for job in sorted(WEEK_HISTORY, key=lambda job: -job["id"]) if job["status"] != "skipped"]
"""The history (WEEK's: 86 entries) newest first, as the jobs list with its scope serves it."""


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    state = FakeGitLab(tokens={"reader": READER}, ci_history=_history(WEEK_HISTORY))
    with running(state) as server:
        yield server


@pytest.fixture
def stack(tmp_path: Path) -> Path:
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text((PROJECT_ROOT / "Pulumi.dev.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITLAB_TOKEN", "reader")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """What the client would have slept, instead of sleeping."""
    waited: list[float] = []
    monkeypatch.setattr(gitlab_api, "wait", waited.append)
    return waited


def _serve(history: CiHistory, entries: list[Any], per_page: int = 100) -> None:
    """Serve `entries` (any values) as the jobs list, `per_page` a page, linked by `next` up to the last."""
    pages = [entries[i : i + per_page] for i in range(0, len(entries), per_page)] or [[]]
    history.page_of = lambda n: pages[n - 1] if n <= len(pages) else []
    history.last_page = len(pages)


def _error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    assert err.rstrip("\n").endswith(lines[0]), err
    return lines[0]


def _workload(out: str) -> dict[str, Any]:
    section: dict[str, Any] = yaml.safe_load(out)["workload"]
    return section


def _assert_the_figures(section: dict[str, Any]) -> None:
    for name, kinds in WEEK.written().items():
        assert section["profiles"][name]["kinds"] == kinds


def _lint_job() -> dict[str, Any]:
    return copy.deepcopy(next(job for job in FINISHED if job["name"] == "lint"))


def test_bad_entries_and_fields_are_skipped_and_counted_in_one_line(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    """Junk around the real jobs, wrong fields on jobs the figures do not hang on, duplicates: the figures
    stay exact, and one note says what was left out and why."""
    template = _lint_job()
    junk: list[Any] = [
        5,
        "job",
        None,
        {**template, "id": 1, "created_at": "yesterday"},
        {**template, "id": 2, "created_at": "2026-11-29T10:00:00"},  # no timezone
        {**template, "id": 3, "name": 5},
        {**template, "id": "4"},
        {**template, "id": 5, "status": "exploded"},
    ]
    jobs = copy.deepcopy(FINISHED)
    lint = [job for job in jobs if job["name"] == "lint"]
    lint[0]["duration"], lint[1]["duration"], lint[2]["duration"] = 1e308, -5, "long"
    lint[3]["tag_list"], lint[4]["runner"], lint[5]["queued_duration"] = 5, "x", float("1e7")
    rl = [job for job in jobs if job["name"] == "hyperopt-ppo"]
    rl[0]["runner"] = "x"  # still rl: its tags say so
    rl[1]["tag_list"] = [1, 2]  # still rl: its runner says so
    duplicates = [copy.deepcopy(jobs[0]), copy.deepcopy(jobs[50])]
    assert gitlab.ci_history is not None
    entries = [*junk, *jobs[:50], *duplicates, *jobs[50:]]
    _serve(gitlab.ci_history, entries, per_page=50)  # a duplicate of page 1's first job on page 2

    assert _run_week(stack, gitlab) == 0
    out, err = capsys.readouterr()
    _assert_the_figures(_workload(out))
    assert len(entries) == 96 and _job_pages(gitlab) == ["1", "2"]  # every entry read: 8 junk, 86 jobs, 2 twice
    [note] = [line for line in err.splitlines() if line.startswith("note: skipped")]
    assert note == (
        f"note: skipped from GitLab's answers: 8 of {len(entries)} job entries (3 not an object, 1 created_at: a "
        "time without a timezone, 1 created_at: not an ISO 8601 time, 1 id: not a positive integer, 2 more (2 other "
        "reasons)); "
        "8 fields (2 duration: not between 0 and 31 days, 2 runner: not an object, 1 duration: not a number, "
        "1 queued_duration: not between 0 and 31 days, 2 more (2 other reasons)); 2 jobs listed twice (counted once)"
    )


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("duration", 10**400, "duration: not between 0 and 31 days"),  # no float() of it: it has none
        ("duration", -(10**400), "duration: not between 0 and 31 days"),
        ("duration", float("nan"), "duration: not between 0 and 31 days"),
        ("duration", float("inf"), "duration: not between 0 and 31 days"),
        ("duration", True, "duration: not a number"),
        ("queued_duration", 31 * 86_400 + 1, "queued_duration: not between 0 and 31 days"),
        ("started_at", "0001-01-01T00:00:00+01:00", "started_at: out of range"),
        ("started_at", "2026-11-29", "started_at: a time without a timezone"),
        ("started_at", "9999-12-31T00:00:00Z", "started_at: out of range"),  # no zone east of UTC could tell it
        ("failure_reason", "\x1b[31mred", "failure_reason: not a GitLab failure reason (a snake_case word)"),
        ("tag_list", ["x" * 256], "tag_list: not a list of tags (strings of at most 255 characters)"),
        ("runner", {"id": 2**63}, "runner.id: not a positive integer"),
        ("runner", {"id": 3, "description": ["k8s"]}, "runner.description: not a string of at most 1024 characters"),
        ("pipeline", {"id": -1}, "pipeline.id: not a positive integer"),
        ("stage", 5, "stage: not a string of at most 255 characters"),
    ],
)
def test_a_field_gitlab_got_wrong_is_dropped_with_its_reason(key: str, value: Any, reason: str) -> None:
    job, dropped = read_job({**_lint_job(), key: value})
    assert job is not None
    assert dropped == [reason]


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("id", 0, "id: not a positive integer"),
        ("id", True, "id: not a positive integer"),
        ("name", "x" * 256, "name: not a string of at most 255 characters"),
        ("status", None, "status: not a GitLab job status"),
        ("created_at", "9" * 100, "created_at: not a timestamp"),
        ("created_at", "0001-01-01T00:00:00+01:00", "created_at: out of range"),
        ("created_at", "9999-12-30T12:00:00-01:00", "created_at: out of range"),
    ],
)
def test_an_entry_without_its_essentials_is_no_job(key: str, value: Any, reason: str) -> None:
    assert read_job({**_lint_job(), key: value}) == (None, [reason])


@pytest.mark.parametrize(
    ("page", "says"),
    [
        ({"0": {"id": 1}}, "page 1 is an object, not a list"),
        ("jobs", "page 1 is a string, not a list"),
        (None, "page 1 is null, not a list"),
        (Raw(b"<html>sign in</html>", "text/html"), "page 1 is not a JSON answer"),
        (Raw(b"[" * 10_000 + b"]" * 10_000), "nested more than 32 levels deep, not a GitLab answer"),
        (Raw(b'[{"id": 1, "duration": NaN}]'), "NaN is not a finite number"),
        (Raw(b'[{"id": 1, "duration": 1e999}]'), "1e999 is not a finite number"),
        (Raw(b'[{"id": 1' + b"9" * 5000 + b"}]"), "not readable JSON"),
        (Raw(b"[\xff]"), "not UTF-8 text"),
        (Raw(b"[1, 2"), "not valid JSON"),
    ],
)
def test_a_jobs_page_that_is_not_a_list_of_entries_is_refused_in_one_line(
    page: Any, says: str, stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gitlab.ci_history is not None
    gitlab.ci_history.page_of, gitlab.ci_history.last_page = (lambda n: page), 1
    assert _run_week(stack, gitlab, "--write") == 2
    out, err = capsys.readouterr()
    assert out == ""
    line = _error_line(err)
    assert says in line
    assert line.startswith(("error: GitLab's list of the jobs of ml-team/training", "error: GitLab's answer to GET"))
    assert len(line) < 300
    assert before_equals_after(stack)


def test_a_project_answer_with_bad_fields_is_used_for_what_is_sound(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    """No id: the jobs are asked for by the path given; a creation time that says nothing is left out."""
    assert gitlab.ci_history is not None
    gitlab.ci_history.project_answer = {"id": "42", "path_with_namespace": 5, "created_at": "yesterday"}
    assert _run_week(stack, gitlab) == 0
    out, err = capsys.readouterr()
    _assert_the_figures(_workload(out))
    assert {r.path for r in gitlab.requests if r.path.endswith("/jobs")} == {"/api/v4/projects/ml-team%2Ftraining/jobs"}
    assert "3 fields (1 project created_at: not an ISO 8601 time, 1 project id: not a positive integer" in err


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ([{"id": 42}], "error: GitLab's answer for project ml-team/training is a list, not an object"),
        (Raw(b"<html>", "text/html"), "error: GitLab's answer for project ml-team/training is not JSON (text/html)"),
    ],
)
def test_a_project_answer_that_is_no_project_is_refused_in_one_line(
    answer: Any, says: str, stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gitlab.ci_history is not None
    gitlab.ci_history.project_answer = answer
    assert _run_week(stack, gitlab) == 2
    assert _error_line(capsys.readouterr().err).startswith(says)


def _fresh_page(number: int) -> list[dict[str, Any]]:
    """A page of distinct jobs, all inside the window: a list that never reaches back before it."""
    template = FINISHED[0]
    return [{**template, "id": 10_000_000 - number * 10 - i} for i in range(3)]


def test_an_endless_next_stops_at_the_page_budget(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gitlab_jobs, "MAX_PAGES", 6)
    assert gitlab.ci_history is not None
    gitlab.ci_history.page_of = _fresh_page
    assert _run_week(stack, gitlab) == 2
    line = _error_line(capsys.readouterr().err)
    assert line == (
        "error: GitLab's list of the jobs of ml-team/training: more than 6 pages: stopped; "
        "read a shorter window (--days, --until)"
    )
    assert _job_pages(gitlab) == [str(n) for n in range(1, 7)]


@pytest.mark.parametrize(
    "case",
    [
        ("next is always page 2", "the page after page 2 is one already read: GitLab's paging goes round", 2),
        ("every page is page 1", "page 2 is page 1 again: GitLab's paging goes round", 2),
    ],
)
def test_the_same_page_forever_stops_at_once(
    case: tuple[str, str, int], stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    how, says, pages = case
    assert gitlab.ci_history is not None
    if how == "next is always page 2":
        gitlab.ci_history.page_of, gitlab.ci_history.next_page_of = _fresh_page, lambda n: 2
    else:
        gitlab.ci_history.page_of = lambda n: _fresh_page(1)
    assert _run_week(stack, gitlab) == 2
    assert _error_line(capsys.readouterr().err) == f"error: GitLab's list of the jobs of ml-team/training: {says}"
    assert len(_job_pages(gitlab)) == pages


def test_a_body_without_end_is_cut_off_at_the_answer_budget(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server would write forever: the client stops reading past 8 MiB and says so."""
    assert gitlab.ci_history is not None
    gitlab.ci_history.page_of = lambda n: Raw(itertools.chain([b"["], itertools.repeat(b"0, " * 20_000)))
    assert _run_week(stack, gitlab) == 2
    line = _error_line(capsys.readouterr().err)
    assert line == "error: GitLab's answer to GET /api/v4/projects/42/jobs: larger than 8192 KiB, not a GitLab answer"
    assert gitlab.bytes_sent < 64 << 20


def test_a_declared_length_over_the_budget_is_not_read(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gitlab.ci_history is not None
    gitlab.ci_history.page_headers = {"Content-Length": str(1 << 40)}
    gitlab.ci_history.page_of = lambda n: Raw(itertools.repeat(b" " * 65_536))
    assert _run_week(stack, gitlab) == 2
    assert "larger than 8192 KiB" in _error_line(capsys.readouterr().err)


@pytest.mark.parametrize(
    "case",
    [
        ({"Retry-After": "1.5"}, 1.5, "1.5 s as Retry-After asks"),
        ({"Retry-After": "-30"}, 0.0, "0 s as Retry-After asks"),
        ({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0, "0 s as Retry-After asks"),  # a date gone by
        ({"Retry-After": "soon"}, 0.1, "0.1 s (no usable Retry-After)"),
        ({"Retry-After": "nan"}, 0.1, "0.1 s (no usable Retry-After)"),
        ({"RateLimit-Reset": "30"}, 30.0, "30 s as RateLimit-Reset asks"),
        ({"RateLimit-Reset": "1"}, 1.0, "1 s as RateLimit-Reset asks"),
        ({"RateLimit-Reset": "1e9"}, 0.0, "0 s as RateLimit-Reset asks"),  # a Unix time gone by
        ({}, 0.1, "0.1 s (no usable Retry-After)"),
    ],
)
def test_a_429_waits_what_its_headers_ask_whatever_their_form(
    case: tuple[dict[str, str], float, str],
    stack: Path,
    gitlab: FakeGitLab,
    capsys: pytest.CaptureFixture[str],
    sleeps: list[float],
) -> None:
    headers, waited, why = case
    assert gitlab.ci_history is not None
    _serve(gitlab.ci_history, [job for job in FINISHED if job["name"] == "train-validate-dqn"])  # 15
    gitlab.ci_history.rate_limit, gitlab.ci_history.rate_limit_headers = 1, headers
    assert _run_week(stack, gitlab) == 0
    out, err = capsys.readouterr()
    assert _workload(out)["profiles"]["rl"]["kinds"]["train-validate"]["minutes_per_job"] > 0
    assert sleeps == [waited]
    assert f"GitLab rate limit (HTTP 429) on /api/v4/projects/42/jobs: waiting {why}, then retrying (1 of" in err


@pytest.mark.parametrize(
    "case",
    [
        ({"Retry-After": "Fri, 31 Dec 9999 23:59:59 GMT"}, "asks to wait more than a year"),
        ({"Retry-After": "1e999"}, "asks to wait forever"),
        ({"Retry-After": "121"}, "asks to wait 121 s"),
        ({"Retry-After": "soon", "RateLimit-Reset": "4102444800"}, "resets in more than a year (RateLimit-Reset)"),
    ],
)
def test_a_429_that_asks_too_long_a_wait_gives_up_at_once(
    case: tuple[dict[str, str], str],
    stack: Path,
    gitlab: FakeGitLab,
    capsys: pytest.CaptureFixture[str],
    sleeps: list[float],
) -> None:
    headers, says = case
    assert gitlab.ci_history is not None
    gitlab.ci_history.rate_limit, gitlab.ci_history.rate_limit_headers = 1, headers
    assert _run_week(stack, gitlab) == 1
    line = _error_line(capsys.readouterr().err)
    assert line == f"error: GitLab's rate limit (HTTP 429) {says}, more than 120 s: try again later"
    assert sleeps == []


def test_control_characters_from_gitlab_never_reach_the_terminal(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    """A project path, a failure reason, GitLab's messages: escaped on every line, none can start a line."""
    assert gitlab.ci_history is not None
    forged = "ml-team/\x1b[2Jtraining\nerror: forged\u202e"
    gitlab.ci_history.project_answer = {"id": 42, "path_with_namespace": forged, "created_at": "2026-01-05T09:00:00Z"}
    jobs = copy.deepcopy(FINISHED)
    failed = next(job for job in jobs if job["status"] == "failed")
    failed["failure_reason"] = "\x1b[31mscript_failure"
    _serve(gitlab.ci_history, jobs)
    assert _run_week(stack, gitlab) == 0
    out, err = capsys.readouterr()
    assert "ml-team/\\x1b[2Jtraining\\nerror: forged\\u202e: " in err
    assert "failure_reason: not a GitLab failure reason" in err
    assert all(line.isprintable() for line in (out + err).splitlines())
    assert not any(line.startswith("error") for line in err.splitlines())

    gitlab.answer = lambda method, path, query: (404, {"message": "404 \x1b[2J\nerror: forged"}, {})
    assert _run_week(stack, gitlab) == 2
    line = _error_line(capsys.readouterr().err)
    assert line == (
        "error: project ml-team/training not found on " + gitlab.url + ", or not visible to the token "
        "(404 \\x1b[2J\\nerror: forged)"
    )


def test_an_error_answer_of_any_shape_is_one_short_line(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 500 whose body nests 10,000 levels deep (json would raise RecursionError), then one of 1 MiB."""
    deep = Raw(b"[" * 10_000 + b"]" * 10_000)
    gitlab.answer = lambda method, path, query: (500, deep, {})
    assert _run_week(stack, gitlab) == 1
    line = _error_line(capsys.readouterr().err)
    assert line.startswith("error: GitLab answered 500 [[[[") and len(line) < 400
    gitlab.answer = lambda method, path, query: (500, Raw(b"x" * (1 << 20), "text/plain"), {})
    assert _run_week(stack, gitlab) == 1
    assert len(_error_line(capsys.readouterr().err)) < 400


def test_runner_lookups_are_bounded(stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]) -> None:
    """A list naming thousands of runners costs at most MAX_RUNNER_LOOKUPS requests, not one per runner."""
    jobs = copy.deepcopy(FINISHED)
    for index, job in enumerate(jobs):
        if job["runner"]:
            job["runner"]["id"] = 100 + index
    assert gitlab.ci_history is not None
    _serve(gitlab.ci_history, jobs)
    assert _run_week(stack, gitlab) == 0
    out, err = capsys.readouterr()
    _assert_the_figures(_workload(out))  # the descriptions still name the pools
    lookups = [r for r in gitlab.requests if r.path.startswith("/api/v4/runners/")]
    assert len(lookups) == gitlab_jobs.MAX_RUNNER_LOOKUPS
    assert "runners ran these jobs: the tags of the 64 that ran the most were read" in err


def test_a_measured_figure_the_spec_refuses_is_neither_written_nor_printed(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    """Supervised jobs of 8 days (under GitLab's month, over the spec's week): `plan` would refuse the file."""
    jobs = copy.deepcopy(FINISHED)
    for job in jobs:
        if (
            job["name"].startswith("train-validate-")
            and job["duration"]
            and job["tag_list"] == ["ci-training", "kapsule"]
        ):
            job["duration"] = 8 * 86_400.0
    assert gitlab.ci_history is not None
    _serve(gitlab.ci_history, jobs)
    for extra in ((), ("--write",)):
        assert _run_week(stack, gitlab, *extra) == 1
        out, err = capsys.readouterr()
        assert out == ""
        line = _error_line(err)
        assert line.startswith("error: the measured workload does not fit the spec, so nothing is written: ")
        assert "platform.workload.profiles.supervised.kinds.train-validate.minutes_per_job" in line
        assert before_equals_after(stack)
    platform = load_stack_config("dev", path=stack).get("platform")
    assert load_spec(platform).workload is not None


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (("--days", "100000"), "error: --days 100000: at most 366 days (a year) are read at once"),
        (("--until", "0001-01-02"), "error: --until '0001-01-02': not an ISO date or time"),
        (("--until", "9999-12-31"), "error: --until '9999-12-31': not an ISO date or time"),
        (("--until", "2026-11-30T10:00\x1b[2J"), "error: --until '2026-11-30T10:00\\\\x1b[2J': not an ISO date"),
    ],
)
def test_a_window_out_of_range_is_one_line(
    flags: tuple[str, ...], says: str, stack: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["workload", "--from-gitlab", "--config", str(stack), *flags]) == 2
    assert _error_line(capsys.readouterr().err).startswith(says)
