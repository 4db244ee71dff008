"""A job's class is its pipeline's source: from the jobs list, else from `GET /projects/:id/pipelines/:id`, else
from the stack file's kind of that name; and a kind of both classes is split or folded.

GitLab before `PipelineBasic.source` lists jobs whose `pipeline` has no `source`: the command asks each pipeline
once (the fake serves them), within a budget of its own and of the run's requests. A refusal stops the lookups
at once, and says so in one note line; what GitLab answers there is checked like everything else.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.fake_gitlab import FakeGitLab, Raw, running
from support.workload_history import (
    RUNNERS,
    SCHEDULES,
    WORKING_DAYS,
    Figures,
    KindFigures,
    Schedule,
    build_history,
    pipelines_of,
    schedules,
    without_sources,
)
from test_workload_gitlab import (
    HISTORY,
    LEGACY_WORKLOAD,
    READER,
    UNTIL,
    WEEK,
    WEEK_HISTORY,
    _history,
    _run,
    _run_week,
    _with_workload,
)

from infra import gitlab_api
from infra.model.platform import load_platform
from infra.offline.stack_config import PROJECT_ROOT, load_stack_config
from infra.workload import gitlab_jobs

SINCE = "2026-11-23"
"""The first day of WEEK_HISTORY's window, which these runs measure (`_run_week`)."""
TRAINING_PIPELINES = sorted(
    {
        job["pipeline"]["id"]
        for job in WEEK_HISTORY
        if job["created_at"] >= SINCE and job["stage"] == "train" and job["status"] != "skipped"
    }
)
"""The window's pipelines with a training job: what the command needs the source of (26: the 25 of the figures
and the one whose only job was never taken)."""
TAKEN = [job for job in WEEK_HISTORY if job["created_at"] >= SINCE and job["stage"] == "train" and job["started_at"]]
"""The window's training jobs a runner took: those the report counts (58: 30, 6, 15 and 7 by kind)."""


def _taken(kind: str, profile: str | None = None, jobs: list[dict[str, Any]] = TAKEN) -> int:
    """How many of `jobs` are of `kind` (their name's start), on `profile`'s runner (None: any)."""
    return sum(
        job["name"].startswith(kind) and (profile is None or job["runner"]["id"] == RUNNERS[profile]["id"])
        for job in jobs
    )


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    """GitLab before `source` in the jobs list: every pipeline answers `GET /projects/:id/pipelines/:id`."""
    history = _history(jobs=without_sources(WEEK_HISTORY))
    history.pipelines = pipelines_of(WEEK_HISTORY)
    state = FakeGitLab(tokens={"reader": READER}, ci_history=history)
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


def _kinds(out: str) -> dict[str, Any]:
    return {name: profile["kinds"] for name, profile in yaml.safe_load(out)["workload"]["profiles"].items()}


def _pipeline_requests(gitlab: FakeGitLab) -> list[int]:
    return [int(r.path.rsplit("/", 1)[1]) for r in gitlab.requests if "/pipelines/" in r.path]


def _pages_read(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries of the jobs list's pages a run reads: newest first, 100 a page (the scope leaves the skipped
    ones out), up to the first page whose last entry is older than the window."""
    listed = sorted((job for job in jobs if job["status"] != "skipped"), key=lambda job: -job["id"])
    pages = [listed[start : start + 100] for start in range(0, len(listed), 100)]
    ends = [n for n, page in enumerate(pages) if page[-1]["created_at"] < SINCE]
    return [job for page in pages[: (ends[0] if ends else len(pages) - 1) + 1] for job in page]


def _notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("note: ")]


def test_without_source_in_the_jobs_list_each_pipeline_is_asked_once_and_the_figures_come_back(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run_week(stack, gitlab) == 0
    out, err = capsys.readouterr()
    assert _kinds(out) == WEEK.written()
    asked = _pipeline_requests(gitlab)
    assert sorted(asked) == TRAINING_PIPELINES  # once each; not the older pipelines, nor lint-only ones
    assert len(TRAINING_PIPELINES) == WEEK.pipelines() + 1
    assert all(r.path.startswith("/api/v4/projects/42/pipelines/") for r in gitlab.requests if "/pipelines/" in r.path)
    assert f"reading the source of {len(asked)} pipelines of ml-team/training (their jobs' entries lack it)" in err
    assert not [note for note in _notes(err) if "source" in note]


def test_a_refused_pipeline_lookup_stops_at_once_and_the_stack_file_classes_the_kinds(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    """The dev stack has both kinds of both profiles: the classes it gives them are the measured ones."""
    assert gitlab.ci_history is not None
    gitlab.ci_history.pipeline_refusal = (403, "403 Forbidden")
    assert _run_week(stack, gitlab) == 0
    out, err = capsys.readouterr()
    assert _kinds(out) == WEEK.written()
    assert len(_pipeline_requests(gitlab)) == 1
    [note] = [note for note in _notes(err) if "source" in note]
    assert note == (
        f"note: the source of {len(TRAINING_PIPELINES)} of {len(TRAINING_PIPELINES)} pipelines is unknown (GitLab "
        "answered 403 Forbidden to GET /projects/:id/pipelines/:id, so no more were asked for); of the jobs whose "
        f"pipeline's source is unknown, {len(TAKEN)} counted in the class of their kind in the stack file"
    )
    # Said beside each kind, and the comparison measured no class.
    assert sum(line.endswith("class from the stack file (no source)") for line in err.splitlines()) == 4 + 4
    assert "profiles.rl.kinds.hyperopt.class                          batch          -            batch" in err


def test_a_server_error_on_a_pipeline_stops_the_lookups_not_the_run(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gitlab.ci_history is not None
    gitlab.ci_history.pipeline_refusal = (502, "502 Bad Gateway")
    assert _run_week(stack, gitlab) == 0
    out, err = capsys.readouterr()
    assert _kinds(out) == WEEK.written()
    assert len(_pipeline_requests(gitlab)) == 1
    assert "(GitLab answered 502 Bad Gateway to GET /projects/:id/pipelines/:id, so no more were asked for)" in err


def test_a_kind_the_stack_file_does_not_class_is_shown_but_not_written(
    tmp_path: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stack in the profile-level form has one kind a profile, `train-validate`, merge_request: the hyperopt
    jobs have no class to take, so they are left out of what is written (and said so)."""
    stack = tmp_path / "Pulumi.dev.yaml"
    stack.write_text(_with_workload(LEGACY_WORKLOAD), encoding="utf-8")
    assert gitlab.ci_history is not None
    gitlab.ci_history.pipeline_refusal = (404, "404 Not found")
    assert _run_week(stack, gitlab, "--write") == 0
    err = capsys.readouterr().err
    [note] = [note for note in _notes(err) if "source" in note]
    assert note.endswith(
        f"of the jobs whose pipeline's source is unknown, {_taken('train-validate')} counted in the class of their "
        f"kind in the stack file, {_taken('hyperopt')} not written (no kind of that name in the stack file)"
    )
    assert "GitLab answered 404 Not found to GET /projects/:id/pipelines/:id" in note
    unknown = [
        line.split() for line in err.splitlines() if " unknown " in line and "class unknown: not written" in line
    ]
    assert [(row[0], row[1], row[3]) for row in unknown] == [
        ("rl", "hyperopt", str(_taken("hyperopt", "rl"))),
        ("supervised", "hyperopt", str(_taken("hyperopt", "supervised"))),
    ]
    workload = load_platform(load_stack_config("dev", path=stack).get("platform")).spec.workload
    assert workload is not None
    for name, kinds in WEEK.written().items():
        kind = workload.profiles[name].kinds["train-validate"]
        assert (kind.job_class, kind.jobs_per_day) == ("merge_request", kinds["train-validate"]["jobs_per_day"])
        assert set(workload.profiles[name].kinds) == {"train-validate"}


HOSTILE_SOURCES: list[Any] = [
    5,
    "",
    "\x1b[31mmerge_request_event",
    "merge_request_event\n",
    "Merge_Request_Event",
    "x" * 65,
    ["push"],
    {},
]


def test_a_hostile_source_in_the_jobs_list_is_dropped_and_the_pipeline_asked(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each pipeline's entries carry one of the hostile sources (in turn): each is dropped, counted, and its
    pipeline asked for instead."""
    jobs = copy.deepcopy(WEEK_HISTORY)
    pipelines = sorted({job["pipeline"]["id"] for job in jobs})
    for job in jobs:
        job["pipeline"]["source"] = HOSTILE_SOURCES[pipelines.index(job["pipeline"]["id"]) % len(HOSTILE_SOURCES)]
    assert gitlab.ci_history is not None
    gitlab.ci_history.jobs = jobs
    assert _run_week(stack, gitlab) == 0
    out, err = capsys.readouterr()
    assert _kinds(out) == WEEK.written()
    assert sorted(_pipeline_requests(gitlab)) == TRAINING_PIPELINES
    [skipped] = [note for note in _notes(err) if note.startswith("note: skipped")]
    read = _pages_read(jobs)
    assert f"{len(read)} pipeline.source: not a pipeline source (a snake_case word)" in skipped
    assert all(line.isprintable() for line in (out + err).splitlines())


HOSTILE_ANSWERS: list[tuple[Any, str]] = [
    ({"id": 1, "source": "\x1b[2J\nerror: forged"}, "pipeline source: not a pipeline source (a snake_case word)"),
    ({"id": 1, "source": 10**400}, "pipeline source: not a pipeline source (a snake_case word)"),
    ({"id": 1}, ""),
    ([{"source": "push"}], "pipeline: not a usable answer"),
    (Raw(b"<html>sign in</html>", "text/html"), "pipeline: not a usable answer"),
    (Raw(b'{"source": NaN}'), "pipeline: not a usable answer"),
]


def test_a_hostile_pipeline_answer_leaves_the_class_to_the_stack_file(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each pipeline answers one of the hostile answers (in turn): a source is used only if it is a pipeline
    source; else the run goes on (the stack file classes the kinds), with one note, and nothing from an answer
    reaches the terminal raw."""
    assert gitlab.ci_history is not None
    answers = [HOSTILE_ANSWERS[n % len(HOSTILE_ANSWERS)] for n in range(len(TRAINING_PIPELINES))]
    gitlab.ci_history.pipelines = {
        pipeline: answer for pipeline, (answer, _) in zip(TRAINING_PIPELINES, answers, strict=True)
    }
    assert _run_week(stack, gitlab) == 0
    out, err = capsys.readouterr()
    assert all(line.isprintable() for line in (out + err).splitlines())
    assert not any(line.startswith("error") for line in err.splitlines())
    assert _kinds(out) == WEEK.written()
    assert len(_pipeline_requests(gitlab)) == len(TRAINING_PIPELINES)
    [note] = [note for note in _notes(err) if "pipelines is unknown" in note]
    assert f"{len(TRAINING_PIPELINES)} answered without a usable source" in note
    [skipped] = [note for note in _notes(err) if note.startswith("note: skipped")]
    for reason in {reason for _, reason in HOSTILE_ANSWERS if reason}:
        assert f"{sum(r == reason for _, r in answers)} {reason}" in skipped


def test_pipeline_lookups_stop_at_their_budget(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pipelines with the most training jobs are asked first (the merge requests': three jobs each)."""
    monkeypatch.setattr(gitlab_jobs, "MAX_PIPELINE_LOOKUPS", 5)
    assert _run_week(stack, gitlab) == 0
    out, err = capsys.readouterr()
    asked = _pipeline_requests(gitlab)
    assert len(asked) == 5
    merge_requests = {
        job["pipeline"]["id"] for job in WEEK_HISTORY if job["pipeline"]["source"] == "merge_request_event"
    }
    assert set(asked) <= merge_requests
    [note] = [note for note in _notes(err) if "pipelines is unknown" in note]
    assert f"{len(TRAINING_PIPELINES) - 5} not asked for: at most 5 a run, within its 1000 requests" in note
    assert _kinds(out) == WEEK.written()  # the rest classed by the stack file


def test_pipeline_lookups_leave_the_run_requests_to_finish(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run of 20 requests: the project, 5 pages, 3 runners, then lookups while more than a request's retries
    are left. Never `more than N requests ... stopped`: the measurement goes on without the rest."""
    assert gitlab.ci_history is not None  # HISTORY's two weeks: its five pages
    gitlab.ci_history.jobs, gitlab.ci_history.pipelines = without_sources(HISTORY), pipelines_of(HISTORY)
    monkeypatch.setattr(gitlab_jobs, "connect", functools.partial(gitlab_api.connect, max_requests=20))
    assert _run(stack, gitlab) == 0
    err = capsys.readouterr().err
    assert len(gitlab.requests) == 20 - (gitlab_api.MAX_RETRIES + 1)
    assert len(_pipeline_requests(gitlab)) == 20 - (gitlab_api.MAX_RETRIES + 1) - 9
    assert "not asked for" in next(note for note in _notes(err) if "pipelines is unknown" in note)


# --- a kind of both classes ---------------------------------------------------------------------------------


PUSHED = tuple(job for job in SCHEDULES[0].jobs if job[0] == "rl" or job[2].endswith(("-tft", "-mamba2")))
"""A merge request's train-validate jobs here: two families of each profile (a kind's jobs need two to have a p50
and a p90, and one push a week has one job a family)."""
PER_PUSH = {profile: sum(p == profile for p, _, _ in PUSHED) for profile in ("rl", "supervised")}
"""Each profile's train-validate jobs a pipeline: one a family, two each."""


def _pushes(weekdays: tuple[int, ...], minutes: tuple[int, int]) -> Figures:
    """WEEK's figures with the 17:40 pipelines of `weekdays` pushes to main (merges), not merge requests: their
    train-validate jobs are batch, `minutes` (p50, p90) long."""
    merge_requests = Schedule("merge_request_event", WORKING_DAYS, ("09:10", "13:20"), PUSHED)
    push_jobs = [(p, "train-validate-batch", name) for p, _, name in PUSHED]
    pushes = Schedule("push", weekdays, ("17:40",), tuple(push_jobs))
    others = [k for k in WEEK.kinds if k.kind != "train-validate"]
    days = ",".join(("Mon", "Tue", "Wed", "Thu", "Fri")[day] for day in weekdays)
    kinds = [
        KindFigures(p, "train-validate", "merge_request", 2 * PER_PUSH[p], 25, 31, "Mon-Fri", ("09:00", "13:30"))
        for p in ("rl", "supervised")
    ] + [
        KindFigures(p, "train-validate-batch", "batch", PER_PUSH[p], *minutes, days, ("17:30", "17:45"))
        for p in ("rl", "supervised")
    ]
    return replace(WEEK, kinds=(*kinds, *others), schedules=(merge_requests, pushes, *WEEK.schedules[1:]))


def _serve_history(gitlab: FakeGitLab, figures: Figures) -> None:
    assert gitlab.ci_history is not None
    gitlab.ci_history.jobs = build_history(UNTIL, figures)


def test_a_kind_of_two_classes_of_a_fair_share_each_is_split(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    """Merge requests twice a working day, merges to main at 17:40 on Mon, Wed, Fri (3 of 13 pipelines): the
    merge requests keep `train-validate`, the pushes are `train-validate-batch`, each with its own figures."""
    figures = _pushes((0, 2, 4), (20, 22))
    _serve_history(gitlab, figures)
    assert _run_week(stack, gitlab) == 0
    out, err = capsys.readouterr()
    assert _kinds(out) == figures.written()
    assert "counts with the other" not in err


def test_a_class_with_a_small_share_of_a_kind_counts_with_the_other(
    stack: Path, gitlab: FakeGitLab, capsys: pytest.CaptureFixture[str]
) -> None:
    """One merge to main in the week (Wednesday) beside 10 merge requests: under 10 % of the kind's jobs (1 of 11),
    so it counts as merge requests, said in one note."""
    _serve_history(gitlab, _pushes((2,), (25, 31)))
    assert _run_week(stack, gitlab) == 0
    out, err = capsys.readouterr()
    kinds = _kinds(out)
    for name, per_pipeline in PER_PUSH.items():
        assert set(kinds[name]) == {"train-validate", "hyperopt"}
        merged = kinds[name]["train-validate"]
        assert merged["class"] == "merge_request"
        assert merged["jobs_per_day"] == round(per_pipeline * 11 / 5)  # 11 pipelines over 5 working days
        # 1 pipeline's jobs of 11 (9 %) arrive at 17:40: more than the 5 % the window leaves out
        assert (merged["days"], merged["from"], merged["to"]) == ("Mon-Fri", "09:00", "17:45")
    [note] = [note for note in _notes(err) if "counts with the other" in note]
    assert note == (
        "note: a class with under 10 % of its kind's jobs counts with the other: rl train-validate: "
        f"{PER_PUSH['rl']} batch jobs counted as merge_request; supervised train-validate: {PER_PUSH['supervised']} "
        "batch jobs counted as merge_request"
    )


def test_the_history_is_whole_weeks_from_a_monday() -> None:
    with pytest.raises(AssertionError):
        build_history(datetime.fromisoformat("2026-11-29T00:00:00+00:00"))
    web = schedules({"rl": ("dqn", "ppo"), "supervised": ()})[1]
    assert web.jobs == (("rl", "hyperopt", "hyperopt-dqn"), ("rl", "hyperopt", "hyperopt-ppo"))
