"""`python -m infra workload --from-gitlab` against tests/support/fake_gitlab.py serving a recorded-shape history.

python-gitlab runs for real against a real HTTP server: paging, the 429 retries and the refusals are
GitLab's. The history is built from known figures (tests/support/workload_history.py), and the measured workload
must give those figures back exactly.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from support.fake_gitlab import CiHistory, FakeGitLab, Request, Token, running
from support.workload_history import (
    KINDS,
    POLL_TIMEOUT_SECONDS,
    RL_FAMILIES,
    RUNNERS,
    SUPERVISED_FAMILIES,
    Figures,
    build_history,
    schedules,
)

from infra.__main__ import main
from infra.model.platform import load_platform
from infra.offline.stack_config import PROJECT_ROOT, load_stack_config
from infra.workload.gitlab_jobs import Progress
from infra.workload.waits import COLD_KEYS

UNTIL = datetime(2026, 11, 30, tzinfo=UTC)
FIGURES = Figures()
READER = Token(user_id=901, username="project_42_reader", scopes=frozenset({"read_api"}))
NO_API = Token(user_id=902, username="project_42_repo", scopes=frozenset({"read_repository"}))
PROJECT = "ml-team/training"


HISTORY = build_history(UNTIL, FIGURES)


WEEK = Figures(
    days=7,
    before_window_days=1,
    kinds=(
        replace(KINDS[0], failures=KINDS[0].failures[:2]),  # 30 jobs: the failures at 10 and 25
        KINDS[1],
        replace(KINDS[2], jobs_per_day=3, failures=((5, "script_failure"), (11, "runner_system_failure"))),
        replace(KINDS[3], jobs_per_day=1),
    ),
    schedules=schedules({"rl": RL_FAMILIES, "supervised": SUPERVISED_FAMILIES[:1]}),
)
"""The same pipelines over one week (`--days 7`), with one supervised family of the eight (tft): 58 traced jobs,
not HISTORY's 424, and 86 entries (one page). Its kinds' figures are HISTORY's but the supervised jobs a day (3
and 1 pipeline a day, one family), and each failure sits within its kind's jobs of the week. The tests about something
other than HISTORY's own counts (a `--write` edit, a 429, runner tags, another host, a hostile field) measure it,
and its figures must come back exactly: a run is ~65 requests, not ~430."""
WEEK_HISTORY = build_history(UNTIL, WEEK)
TWO_WEEKS_HISTORY = build_history(UNTIL, replace(WEEK, days=14, kinds=(*KINDS[:2], *WEEK.kinds[2:])))
"""WEEK's pipelines over HISTORY's two weeks (`--days 14`: 166 entries, two pages; 116 traces, not 424), the rl
kinds HISTORY's."""


def _history(jobs: list[dict] | None = None, **kwargs: Any) -> CiHistory:
    return CiHistory(42, PROJECT, "2026-01-05T09:00:00.000Z", HISTORY if jobs is None else jobs, **kwargs)


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    """The fake serving WEEK_HISTORY (the tests run it with `_run_week`)."""
    state = FakeGitLab(tokens={"reader": READER, "repo-only": NO_API}, ci_history=_history(WEEK_HISTORY))
    with running(state) as server:
        yield server


@pytest.fixture
def stack(tmp_path: Path) -> Path:
    """A copy of the dev stack's file (its comments and figures as committed), for `--write` to edit; the
    tests give the fake's URL with `--gitlab-url`."""
    path = tmp_path / "Pulumi.dev.yaml"
    shutil.copy(PROJECT_ROOT / "Pulumi.dev.yaml", path)
    return path


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITLAB_TOKEN", "reader")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")


def _run(stack: Path, gitlab: FakeGitLab, *extra: str) -> int:
    return main(
        [
            "workload",
            "--from-gitlab",
            "--config",
            str(stack),
            "--gitlab-url",
            gitlab.url,
            "--until",
            "2026-11-30",
            *extra,
        ]
    )


def _run_week(stack: Path, gitlab: FakeGitLab, *extra: str) -> int:
    """A run over WEEK_HISTORY's window: the week before `--until`."""
    return _run(stack, gitlab, "--days", "7", *extra)


@dataclass(frozen=True)
class Measured:
    """One run's exit code, output and the requests the fake saw."""

    code: int
    out: str
    err: str
    requests: list[Request]


@functools.cache
def measured_history() -> Measured:
    """`workload --from-gitlab` over HISTORY, the two weeks before 2026-11-30, on a copy of the dev stack (not
    written): run once for the tests that only read what it printed and asked (here and in
    test_workload_traces.py)."""
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        path = Path(folder) / "Pulumi.dev.yaml"
        shutil.copy(PROJECT_ROOT / "Pulumi.dev.yaml", path)
        stack.enter_context(mock.patch.dict(os.environ, {"GITLAB_TOKEN": "reader", "NO_PROXY": "127.0.0.1"}))
        gitlab = stack.enter_context(running(FakeGitLab(tokens={"reader": READER}, ci_history=_history())))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = _run(path, gitlab)
        assert path.read_bytes() == (PROJECT_ROOT / "Pulumi.dev.yaml").read_bytes()
        return Measured(code, out.getvalue(), err.getvalue(), list(gitlab.requests))


def _job_pages(gitlab: FakeGitLab) -> list[str]:
    return _pages_of(gitlab.requests)


def _pages_of(requests: list[Request]) -> list[str]:
    return [r.query.get("page", "1") for r in requests if r.path.endswith("/jobs")]


def _report_rows(err: str) -> dict[tuple[str, str], list[str]]:
    """The report's rows by (profile, kind), each as its cells."""
    rows = {}
    for line in err.splitlines():
        cells = re.split(r"  +", line.strip())
        if len(cells) >= 9 and cells[0] in ("rl", "supervised", "not a training job"):
            rows[(cells[0], cells[1])] = cells[2:]
    return rows


def test_the_measured_workload_gives_back_the_figures_the_history_was_built_from(stack: Path) -> None:
    run = measured_history()
    assert run.code == 0
    out, err = run.out, run.err
    section = yaml.safe_load(out)["workload"]
    written = FIGURES.written()
    assert section["profiles"]["rl"] == {"kinds": written["rl"]}
    assert section["profiles"]["supervised"] == {"gpu_utilization": 0.34, "kinds": written["supervised"]}
    assert "batches_per_day" not in section  # every profile has kinds: bursts are the kinds' arrivals
    assert section["time_zone"] == "Europe/Paris"
    assert section["baseline"] == {"node_type": "L40S-1-48G"}
    # What is printed pastes under the stack's platform: the spec validates with it.
    platform = load_stack_config("dev", path=stack).get("platform")
    assert load_platform({**platform, "workload": section}).spec.workload is not None
    assert out.startswith("    # measured from ml-team/training, 2026-11-16 .. 2026-11-30")
    assert "# Merge-request jobs start" not in out  # the next section's comment stays with it

    rows = _report_rows(err)
    assert rows[("rl", "train-validate")] == [
        "merge_request",
        "60",
        "6.0",
        "Mon-Fri",
        "09:00-17:45",
        "25.0 / 31.0",
        "0.1 / 0.5",
        "3 runner_system_failure",
    ]
    assert rows[("rl", "hyperopt")] == [
        "batch",
        "12",
        "2.0",
        "Mon,Wed,Fri",
        "13:30-13:45",
        "147.0 / 150.0",
        "0.1 / 0.5",
        "-",
    ]
    assert rows[("supervised", "train-validate")] == [
        "merge_request",
        "240",
        "24.0",
        "Mon-Fri",
        "09:00-17:45",
        "45.0 / 51.0",
        "0.1 / 0.5",
        "1 runner_system_failure, 1 script_failure, 1 stuck_or_timeout_failure",
    ]
    assert rows[("supervised", "hyperopt")] == [
        "batch",
        "112",
        "8.0",
        "Mon-Sun",
        "22:00-22:15",
        "60.0 / 75.0",
        "0.1 / 0.5",
        "-",
    ]
    # One lint job a pipeline (and the older ones' not in the window), a minute long, 2 s in the queue.
    assert rows[("not a training job", "-")] == ["-", "50", "3.6", "-", "-", "1.0 / 1.0", "0.0 / 0.0", "-"]
    assert f"bursts: {FIGURES.pipelines()} pipelines with a training job, 3.6 per day" in err
    assert "days and hours are in Europe/Paris" in err
    assert {r.poll_timeout_seconds for r in load_platform(platform).runners.values()} == {POLL_TIMEOUT_SECONDS}
    assert f"waited past the runner's poll_timeout ({POLL_TIMEOUT_SECONDS} s here)" in err
    assert "profiles.rl.kinds.train-validate.minutes_per_job          30             25.0           25" in err
    assert "profiles.rl.kinds.hyperopt.days                           Mon-Fri        Mon,Wed,Fri    Mon,Wed,Fri" in err
    assert "not measurable from GitLab" in err

    # Newest first, 100 a page, stopping at the window: its 475 jobs (the scope leaves the skipped ones out)
    # end on page 5, whose last jobs are older; pages 6 to 8 (the week before) are never asked for. Every job's
    # entry says its pipeline's source: no pipeline is asked for.
    assert run.requests[0].path == "/api/v4/projects/ml-team%2Ftraining"
    jobs_requests = [r for r in run.requests if r.path.endswith("/jobs")]
    assert _pages_of(run.requests) == [str(n) for n in range(1, 6)]
    assert all(r.query["per_page"] == "100" for r in jobs_requests)
    assert not [r for r in run.requests if "/pipelines/" in r.path]
    progress = [line for line in err.splitlines() if line.startswith("reading jobs")]
    assert progress[0] == "reading jobs of ml-team/training: page 1, back to 2026-11-29 21:00 UTC (0 jobs read)"
    assert progress[-1] == "reading jobs of ml-team/training: page 5, back to 2026-11-17 16:40 UTC (400 jobs read)"


def _kinds_block(kinds: dict[str, dict[str, Any]], indent: int = 10) -> list[str]:
    """A profile's `kinds:` as `--write` writes it: block style, times quoted."""
    pad = " " * indent
    lines = [f"{pad}kinds:"]
    for name, keys in kinds.items():
        lines.append(f"{pad}  {name}:")
        lines += [
            f'{pad}    {key}: "{value}"' if key in ("from", "to") else f"{pad}    {key}: {value}"
            for key, value in keys.items()
        ]
    return lines


COLD_LINES = tuple(f"        {key}: " for key in COLD_KEYS)


def _without_cold_starts(lines: list[str]) -> tuple[list[str], dict[str, int]]:
    """The lines without the pools' cold-start figures (the last lines of each pool, as `--write` adds them to a
    pool that has none), and each pool's median; its p90 and max are asserted at least the median, in order."""
    kept, pool = [], ""
    figures: dict[str, list[int]] = {}
    for line in lines:
        if line.startswith("      ") and not line.startswith("       ") and line.endswith(":"):
            pool = line.strip().rstrip(":")
        if line.startswith(COLD_LINES):
            figures.setdefault(pool, []).append(int(line.split(": ")[1]))
            continue
        kept.append(line)
    assert all(len(f) == 3 and f == sorted(f) for f in figures.values()), figures  # median <= p90 <= max
    return kept, {pool: f[0] for pool, f in figures.items()}


def _without_kinds(lines: list[str]) -> list[str]:
    """The lines of a stack file without its `kinds:` blocks (each with what is indented under it)."""
    kept, depth = [], None
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if depth is not None and line.strip() and indent > depth:
            continue
        depth = indent if line.strip() == "kinds:" else None
        if depth is None:
            kept.append(line)
    return kept


def test_write_changes_the_measured_kinds_and_nothing_else(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    before = stack.read_text(encoding="utf-8")
    assert _run_week(stack, gitlab, "--write") == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert f"wrote platform.workload into {stack}" in err
    after, cold = _without_cold_starts(stack.read_text(encoding="utf-8").splitlines())
    assert cold == {"ci-compile": 9, "ci-training": 10}  # each pool's measured median (540 and 600 s)
    assert _without_kinds(after) == _without_kinds(before.splitlines())
    written = WEEK.written()
    rl, supervised = after.index("        rl:"), after.index("        supervised:")
    assert after[rl + 1 : rl + 1 + 17] == _kinds_block(written["rl"])
    assert after[supervised + 1 : supervised + 2 + 17] == [
        "          gpu_utilization: 0.34",
        *_kinds_block(written["supervised"]),
    ]
    workload = load_platform(load_stack_config("dev", path=stack).get("platform")).spec.workload  # as `plan` loads it
    assert workload is not None
    assert workload.profiles["supervised"].gpu_utilization == 0.34
    assert workload.profiles["rl"].kinds["hyperopt"].minutes_per_job == 147

    # Written again: the same file (block style, as it now is), byte for byte.
    text = stack.read_text(encoding="utf-8")
    assert _run_week(stack, gitlab, "--write") == 0
    assert stack.read_text(encoding="utf-8") == text


LEGACY_WORKLOAD = """\
    workload:
      time_zone: Europe/Paris
      batches_per_day: 3  # three bursts a day
      # per profile: jobs a day and minutes a job
      profiles:
        rl:
          jobs_per_day: 12  # an estimate
          minutes_per_job: 30
          # the RL profile ends here
        supervised:
          jobs_per_day: 24
          gpu_utilization: 0.34  # measured on the L40S
          minutes_per_job: 40
      # the old setup
      baseline:
        node_type: L40S-1-48G
"""


def _with_workload(block: str) -> str:
    text = (PROJECT_ROOT / "Pulumi.dev.yaml").read_text(encoding="utf-8")
    start, end = text.index("    workload:\n"), text.index("    # Merge-request jobs start within")
    return text[:start] + block + text[end:]


def test_write_converts_a_profile_level_workload_to_kinds_keeping_its_comments(
    tmp_path: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    """The form before kinds (one merge-request kind a profile, in `batches_per_day` bursts): each profile gets
    its kinds in place of `jobs_per_day`/`minutes_per_job`, `batches_per_day` goes, and the comments that
    introduce a key or a section stay where they were."""
    stack = tmp_path / "Pulumi.dev.yaml"
    before = _with_workload(LEGACY_WORKLOAD)
    stack.write_text(before, encoding="utf-8")
    assert load_platform(load_stack_config("dev", path=stack).get("platform")).spec.workload is not None
    assert _run_week(stack, gitlab, "--write") == 0
    err = capsys.readouterr().err
    assert "batches_per_day                                           3        3.6            (removed)" in err
    assert "profiles.rl.jobs_per_day                                  12       -              (removed)" in err
    written = WEEK.written()
    expected = [
        "    workload:",
        "      time_zone: Europe/Paris",
        "      # per profile: jobs a day and minutes a job",
        "      profiles:",
        "        rl:",
        *_kinds_block(written["rl"]),
        "          # the RL profile ends here",
        "        supervised:",
        *_kinds_block(written["supervised"]),
        "          gpu_utilization: 0.34  # measured on the L40S",
        "      # the old setup",
        "      baseline:",
        "        node_type: L40S-1-48G",
    ]
    lines, cold = _without_cold_starts(stack.read_text(encoding="utf-8").splitlines())
    assert cold == {"ci-compile": 9, "ci-training": 10}
    assert "\n".join(lines) + "\n" == _with_workload("\n".join(expected) + "\n")
    workload = load_platform(load_stack_config("dev", path=stack).get("platform")).spec.workload
    assert workload is not None
    assert workload.profiles["rl"].jobs_per_day is None
    assert workload.profiles["rl"].kinds["train-validate"].job_class == "merge_request"


def test_write_turns_a_flow_style_workload_into_block_style_kinds(
    tmp_path: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    """Block-style kinds cannot sit in a flow mapping: the profiles they are written into become blocks too."""
    stack = tmp_path / "Pulumi.dev.yaml"
    flow = (
        "    workload:\n      time_zone: Europe/Paris\n"
        "      profiles: {rl: {jobs_per_day: 12, minutes_per_job: 30}, supervised: {jobs_per_day: 24, "
        "minutes_per_job: 40, gpu_utilization: 0.34}}\n"
    )
    stack.write_text(_with_workload(flow), encoding="utf-8")
    assert _run_week(stack, gitlab, "--write") == 0
    lines = stack.read_text(encoding="utf-8").splitlines()
    rl = lines.index("        rl:")
    assert lines[rl - 1 : rl + 1 + 17] == ["      profiles:", "        rl:", *_kinds_block(WEEK.written()["rl"])]
    workload = load_platform(load_stack_config("dev", path=stack).get("platform")).spec.workload
    assert workload is not None
    assert workload.profiles["supervised"].gpu_utilization == 0.34
    assert set(workload.profiles["supervised"].kinds) == {"train-validate", "hyperopt"}


def test_write_adds_a_workload_section_a_stack_does_not_have(
    tmp_path: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without `workload:` the time zone is UTC: the hours written are the history's in UTC (Paris - 1 h)."""
    text = (PROJECT_ROOT / "Pulumi.dev.yaml").read_text(encoding="utf-8")
    start, end = text.index("    # The week the simulation runs"), text.index("    # Merge-request jobs start within")
    stack = tmp_path / "Pulumi.dev.yaml"
    stack.write_text(text[:start] + text[end:], encoding="utf-8")
    assert _run_week(stack, gitlab, "--write") == 0
    workload = load_platform(load_stack_config("dev", path=stack).get("platform")).spec.workload
    assert workload is not None
    assert workload.time_zone == "UTC"
    rl = workload.profiles["rl"].kinds
    assert (rl["train-validate"].jobs_per_day, rl["train-validate"].start, rl["train-validate"].end) == (
        6,
        "08:00",
        "16:45",
    )
    assert (rl["hyperopt"].days, rl["hyperopt"].start, rl["hyperopt"].end) == ("Mon,Wed,Fri", "12:30", "12:45")
    assert workload.profiles["supervised"].gpu_utilization is None
    assert "# Every key is documented in docs/config-reference.md" in stack.read_text(encoding="utf-8")


def test_a_429_is_waited_out_with_one_line_each(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gitlab.ci_history is not None
    gitlab.ci_history.rate_limit = 2
    assert _run_week(stack, gitlab) == 0
    out, err = capsys.readouterr()
    assert yaml.safe_load(out)["workload"]["profiles"]["rl"]["kinds"] == WEEK.written()["rl"]
    notices = [line for line in err.splitlines() if "rate limit" in line]
    assert notices == [
        "GitLab rate limit (HTTP 429) on /api/v4/projects/42/jobs: waiting 0 s as Retry-After "
        f"asks, then retrying ({n} of at most 5)"
        for n in (1, 2)
    ]
    assert _job_pages(gitlab)[:3] == ["1", "1", "1"]


def test_a_long_retry_after_or_a_lasting_429_gives_up_with_one_line(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gitlab.ci_history is not None
    gitlab.ci_history.rate_limit, gitlab.ci_history.retry_after = 1, 3600
    assert _run(stack, gitlab) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip().splitlines()[-1] == (
        "error: GitLab's rate limit (HTTP 429) asks to wait 3600 s, more than 120 s: try again later"
    )
    gitlab.ci_history.rate_limit, gitlab.ci_history.retry_after = 100, 0
    assert _run(stack, gitlab) == 1
    out, err = capsys.readouterr()
    assert err.strip().splitlines()[-1] == "error: GitLab still rate-limits (HTTP 429) after 5 retries: try again later"
    assert len(_job_pages(gitlab)) == 1 + 6


@pytest.mark.parametrize(
    "case",
    [
        ("repo-only", PROJECT, "error: the token lacks the `read_api` scope (GitLab answered 403 insufficient_scope)"),
        ("revoked", PROJECT, "error: GitLab rejected the token (401 Unauthorized)"),
        ("reader", "ml-team/other", "error: project ml-team/other not found on http://127.0.0.1:"),
    ],
)
def test_refusals_are_one_line_and_exit_2(
    stack: Path,
    gitlab: FakeGitLab,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    case: tuple[str, str, str],
) -> None:
    token, project, message = case
    monkeypatch.setenv("GITLAB_TOKEN", token)
    assert _run(stack, gitlab, "--project", project) == 2
    out, err = capsys.readouterr()
    assert out == ""
    [line] = err.strip().splitlines()
    assert line.startswith(message)
    assert before_equals_after(stack)


def before_equals_after(stack: Path) -> bool:
    return stack.read_text(encoding="utf-8") == (PROJECT_ROOT / "Pulumi.dev.yaml").read_text(encoding="utf-8")


def test_an_unreachable_gitlab_is_one_line_and_exit_1(stack: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with running(FakeGitLab()) as closed:
        url = closed.url
    assert main(["workload", "--from-gitlab", "--config", str(stack), "--gitlab-url", url]) == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: cannot reach GitLab at {url}: ")


def test_a_project_without_jobs_says_so_and_writes_nothing(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    gitlab.ci_history = _history(jobs=[])
    assert _run(stack, gitlab, "--write") == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "workload: no job in ml-team/training in the last 14 days: nothing measured\n"
    assert before_equals_after(stack)


def test_jobs_that_are_not_training_are_counted_apart_and_nothing_is_written(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    lint_only = [job for job in HISTORY if job["name"] == "lint"]
    gitlab.ci_history = _history(jobs=lint_only)
    assert _run(stack, gitlab, "--write") == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert f"none of the {FIGURES.pipelines()} jobs is a training job" in err  # one lint job a pipeline
    assert before_equals_after(stack)


def test_runners_known_only_by_their_tags_map_jobs_when_the_token_may_read_them(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing in these jobs names a profile but the tags of the runner that ran them (GET /runners/:id)."""
    anonymous = [
        {**job, "name": "nightly", "tag_list": [], "runner": job["runner"] and {**job["runner"], "description": "k8s"}}
        for job in WEEK_HISTORY
    ]
    gitlab.ci_history = _history(jobs=anonymous)
    gitlab.ci_history.runners = {int(runner["id"]): list(runner["tags"]) for runner in RUNNERS.values()}
    assert _run_week(stack, gitlab) == 0
    out, err = capsys.readouterr()
    assert "none of the" in err
    assert "note: the tags of 3 of 3 runners are not readable (403 Forbidden - No access granted; GitLab" in err
    assert out == ""

    gitlab.ci_history.runner_readers = frozenset({"reader"})
    assert _run_week(stack, gitlab) == 0
    profiles = yaml.safe_load(capsys.readouterr().out)["workload"]["profiles"]
    # One kind, `nightly`, in two classes of a fair share each: split, the merge requests keeping the name.
    for name, kinds in WEEK.written().items():
        assert profiles[name]["kinds"] == {"nightly": kinds["train-validate"], "nightly-batch": kinds["hyperopt"]}
    runner_requests = sorted(r.path for r in gitlab.requests if r.path.startswith("/api/v4/runners/"))
    assert runner_requests == sorted(["/api/v4/runners/3", "/api/v4/runners/11", "/api/v4/runners/12"] * 2)


def test_progress_rewrites_one_line_on_a_terminal_and_prints_lines_otherwise() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal, log = Terminal(), io.StringIO()
    for stream in (terminal, log):
        progress = Progress(stream)
        progress("page 1")
        progress("page 2")
        progress.say("GitLab rate limit")
        progress("page 3")
        progress.done()
    assert terminal.getvalue() == "\r\x1b[Kpage 1\r\x1b[Kpage 2\nGitLab rate limit\n\r\x1b[Kpage 3\n"
    assert log.getvalue() == "page 1\npage 2\nGitLab rate limit\npage 3\n"


def test_a_missing_token_or_source_is_one_line(
    stack: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GITLAB_TOKEN")
    assert main(["workload", "--from-gitlab", "--config", str(stack)]) == 2
    assert capsys.readouterr().err.startswith("error: $GITLAB_TOKEN is not set")
    assert main(["workload", "--config", str(stack)]) == 2
    assert "--from-gitlab" in capsys.readouterr().err
    assert main(["workload", "--from-gitlab", "--config", str(stack), "--until", "30/11/2026"]) == 2
    assert capsys.readouterr().err.startswith("error: --until '30/11/2026': not an ISO date")
    assert main(["workload", "--from-gitlab", "--config", str(stack), "--days", "0"]) == 2
    assert capsys.readouterr().err == "error: --days 0: give at least 1 day\n"


def test_a_malformed_stack_file_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Not a traceback: the stack file's error names its file and line, as `plan` and `check-ci` print it."""
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text("config: [\n", encoding="utf-8")
    assert main(["workload", "--from-gitlab", "--config", str(bad)]) == 2
    assert capsys.readouterr().err == "error: Pulumi.bad.yaml:2: not valid YAML: did not find expected node content\n"


@pytest.mark.parametrize("how", ["redirect", "next-page", "next-page-off-api"])
def test_the_token_never_reaches_another_host(
    how: str, stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    """A redirect, or a `Link: rel="next"` page, on another host: nothing is sent there. A next page GitLab
    builds on its own API path is fetched from the configured host instead (a GitLab behind a proxy)."""
    with running(FakeGitLab(tokens={"reader": READER}, ci_history=_history(WEEK_HISTORY))) as other:
        assert gitlab.ci_history is not None
        gitlab.ci_history.jobs = TWO_WEEKS_HISTORY  # two pages: a next one to link
        if how == "redirect":
            gitlab.ci_history.redirect_jobs_to = other.url
        elif how == "next-page":
            gitlab.ci_history.next_base = other.url
        else:
            gitlab.ci_history.next_url = f"{other.url}/jobs?page=2"
        code = _run(stack, gitlab)
    assert other.requests == []
    err = capsys.readouterr().err
    if how == "next-page":
        assert code == 0
        assert len(_job_pages(gitlab)) > 1
        return
    assert code == 2
    [line] = [line for line in err.splitlines() if line.startswith("error:")]
    assert f"sent the client on to {other.url}" in line
    assert "reader" not in err


def test_write_refuses_a_workload_an_anchor_shares_with_another_key(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    """Editing an anchored value edits every alias of it: `gpu-ci:other` would silently have changed too."""
    text = stack.read_text(encoding="utf-8").replace("    workload:\n", "    workload: &measured\n", 1)
    stack.write_text(text + "  gpu-ci:other: *measured\n", encoding="utf-8")
    before = stack.read_bytes()
    assert _run_week(stack, gitlab, "--write") == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"error: {stack.name}: writing platform.workload would also change gpu-ci:other (an anchor or an alias "
        "shares its value): write the workload without it: nothing written"
    )
    assert stack.read_bytes() == before
