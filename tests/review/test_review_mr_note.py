"""`python -m infra mr-note` against a GitLab that speaks the notes API on 127.0.0.1 (tests/support/fake_gitlab.py).

python-gitlab runs for real: its HTTP requests, pagination and error handling meet a real server, and the
tests assert on what the server received and holds, not on how the client was called.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import date, timedelta
from pathlib import Path

import gitlab as python_gitlab
import pytest
from gitlab.exceptions import GitlabUpdateError
from support.fake_gitlab import FakeGitLab, Token, running

from infra.__main__ import main
from infra.review.gitlab_notes import Target, TokenFacts, judge_token, upsert_note
from infra.review.note import marker

PROJECT = 42
MR = 7
HEAD_SHA = "a" * 40
BOT = Token(user_id=900, username="project_42_bot", scopes=frozenset({"api"}))
HUMAN = Token(user_id=5, username="alice", scopes=frozenset({"api"}))
READER = Token(user_id=901, username="project_42_reader", scopes=frozenset({"read_api"}))
OFFLINE_BOT = Token(user_id=902, username="project_42_bot_1", scopes=frozenset({"api"}))
"""The unprotected plan-diff job's token user: another bot than the protected preview's."""

CHANGES = """\
Previewing update (dev):
  pulumi:pulumi:Stack: (same)
    ~ scaleway:kubernetes/pool:Pool: (update)
        [urn=urn:pulumi:dev::gpu-ci::gpu-ci:infra:KapsuleCluster$scaleway:kubernetes/pool:Pool::kapsule-ci-training]
      ~ maxSize: 1 => 2
Resources:
    ~ 1 to update
    7 unchanged
"""
NO_CHANGES = "Previewing update (dev):\n  pulumi:pulumi:Stack: (same)\nResources:\n    8 unchanged\n"


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    state = FakeGitLab(
        tokens={"bot-token": BOT, "human-token": HUMAN, "reader-token": READER, "offline-token": OFFLINE_BOT},
        projects={str(PROJECT): PROJECT, "platform/gpu-ci": PROJECT},
        merge_requests={(PROJECT, MR): HEAD_SHA},
    )
    with running(state) as server:
        yield server


@pytest.fixture
def ci_env(monkeypatch: pytest.MonkeyPatch, gitlab: FakeGitLab) -> pytest.MonkeyPatch:
    """GitLab CI's predefined variables of a merge request pipeline, and the two note tokens."""
    for name, value in {
        "CI_SERVER_URL": gitlab.url,
        "CI_MERGE_REQUEST_PROJECT_ID": str(PROJECT),
        "CI_MERGE_REQUEST_IID": str(MR),
        "CI_COMMIT_SHA": HEAD_SHA,
        "CI_COMMIT_SHORT_SHA": HEAD_SHA[:8],
        "CI_JOB_URL": "https://gitlab.example.com/platform/gpu-ci/-/jobs/123",
        "CI_JOB_TOKEN": "glcbt-64_job-token-of-this-job",
        "GITLAB_PREVIEW_NOTE_TOKEN": "bot-token",
        "GITLAB_NOTE_TOKEN": "offline-token",
        "PULUMI_STACK": "dev",
        "NO_PROXY": "127.0.0.1",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", raising=False)
    return monkeypatch


def _preview(tmp_path: Path, text: str) -> str:
    path = tmp_path / "preview.txt"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_first_push_creates_one_note_and_later_pushes_update_it(
    ci_env: pytest.MonkeyPatch, gitlab: FakeGitLab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mr-note", "--preview", _preview(tmp_path, CHANGES)]) == 0
    [note] = gitlab.notes_of(PROJECT, MR)
    assert note["author"]["id"] == BOT.user_id
    assert note["body"].startswith(marker("dev") + "\n")
    assert "~ maxSize: 1 => 2" in note["body"]
    assert "**`pulumi preview`** at commit `aaaaaaaa`: 1 to update, 7 unchanged" in note["body"]
    assert f"created note {note['id']}" in capsys.readouterr().out

    second = CHANGES.replace("1 => 2", "1 => 3")
    assert main(["mr-note", "--preview", _preview(tmp_path, second)]) == 0
    [updated] = gitlab.notes_of(PROJECT, MR)
    assert updated["id"] == note["id"]
    assert "~ maxSize: 1 => 3" in updated["body"] and "1 => 2" not in updated["body"]
    assert [(r.method, r.path.rsplit("/", 1)[-1]) for r in gitlab.writes()] == [
        ("POST", "notes"),
        ("PUT", str(note["id"])),
    ]


def test_an_identical_note_is_not_rewritten(ci_env: pytest.MonkeyPatch, gitlab: FakeGitLab, tmp_path: Path) -> None:
    preview = _preview(tmp_path, CHANGES)
    assert main(["mr-note", "--preview", preview]) == 0
    assert main(["mr-note", "--preview", preview]) == 0
    assert [r.method for r in gitlab.writes()] == ["POST"]


def test_finds_its_note_among_many_and_never_touches_other_users_notes(
    ci_env: pytest.MonkeyPatch, gitlab: FakeGitLab, tmp_path: Path
) -> None:
    for i in range(110):
        gitlab.add_note(PROJECT, MR, f"review comment {i}", HUMAN.user_id)
    quoted = gitlab.add_note(PROJECT, MR, marker("dev") + "\nalice pasted the bot's note", HUMAN.user_id)
    ours = gitlab.add_note(PROJECT, MR, marker("dev") + "\nold preview", BOT.user_id)
    gitlab.add_note(PROJECT, MR, marker("prod") + "\nanother stack's note", BOT.user_id)
    gitlab.add_note(PROJECT, MR, "added 1 commit", BOT.user_id, system=True)

    assert main(["mr-note", "--preview", _preview(tmp_path, CHANGES)]) == 0

    pages = [r.query.get("page", "1") for r in gitlab.requests if r.method == "GET" and r.path.endswith("/notes")]
    assert pages == ["1", "2"]  # 114 notes, 100 per page: ours is on the second page
    assert [r.path.rsplit("/", 1)[-1] for r in gitlab.writes()] == [str(ours)]
    bodies = {n["id"]: n["body"] for n in gitlab.notes_of(PROJECT, MR)}
    assert "1 to update" in bodies[ours]
    assert bodies[quoted].endswith("alice pasted the bot's note")
    assert len(bodies) == 114


def test_nothing_to_say_posts_nothing(
    ci_env: pytest.MonkeyPatch, gitlab: FakeGitLab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mr-note", "--preview", _preview(tmp_path, NO_CHANGES)]) == 0
    assert gitlab.writes() == []
    assert gitlab.notes_of(PROJECT, MR) == []
    assert "nothing posted" in capsys.readouterr().out


def test_an_earlier_note_is_replaced_when_the_mr_no_longer_changes_anything(
    ci_env: pytest.MonkeyPatch, gitlab: FakeGitLab, tmp_path: Path
) -> None:
    assert main(["mr-note", "--preview", _preview(tmp_path, CHANGES)]) == 0
    assert main(["mr-note", "--preview", _preview(tmp_path, NO_CHANGES)]) == 0
    [note] = gitlab.notes_of(PROJECT, MR)
    assert note["body"].startswith(marker("dev"))
    assert "No infrastructure changes as of commit `aaaaaaaa`: `pulumi preview` reports 8 unchanged" in note["body"]
    assert "maxSize" not in note["body"]


def test_a_failed_preview_is_worth_a_note(ci_env: pytest.MonkeyPatch, gitlab: FakeGitLab, tmp_path: Path) -> None:
    failed = "Previewing update (dev):\nerror: scaleway-sdk-go: http error 403 Forbidden: insufficient permissions\n"
    assert main(["mr-note", "--preview", _preview(tmp_path, failed), "--exit-code", "255"]) == 0
    [note] = gitlab.notes_of(PROJECT, MR)
    assert "**`pulumi preview` failed** (exit code 255)" in note["body"]
    assert "insufficient permissions" in note["body"]


def test_a_token_without_the_api_scope_gets_a_clear_error(
    ci_env: pytest.MonkeyPatch, gitlab: FakeGitLab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ci_env.setenv("GITLAB_PREVIEW_NOTE_TOKEN", "reader-token")
    assert main(["mr-note", "--preview", _preview(tmp_path, CHANGES)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: the token lacks the `api` scope (GitLab answered 403 insufficient_scope)")
    assert err.count("\n") == 1
    assert gitlab.notes_of(PROJECT, MR) == []
    assert [r.method for r in gitlab.writes()] == ["POST"]  # refused by the server, not by the client


def test_the_ci_job_token_is_refused_before_any_request(
    ci_env: pytest.MonkeyPatch, gitlab: FakeGitLab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ci_env.setenv("GITLAB_PREVIEW_NOTE_TOKEN", "glcbt-64_job-token-of-this-job")
    assert main(["mr-note", "--preview", _preview(tmp_path, CHANGES)]) == 1
    assert "CI job token, which cannot post merge-request notes" in capsys.readouterr().err
    assert gitlab.requests == []


def test_an_unknown_token_is_reported_as_rejected(
    ci_env: pytest.MonkeyPatch, gitlab: FakeGitLab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ci_env.setenv("GITLAB_PREVIEW_NOTE_TOKEN", "glpat-revoked")
    assert main(["mr-note", "--preview", _preview(tmp_path, CHANGES)]) == 1
    assert capsys.readouterr().err.startswith("error: GitLab rejected the token (401")


def test_an_unknown_merge_request_is_named(
    ci_env: pytest.MonkeyPatch, gitlab: FakeGitLab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mr-note", "--preview", _preview(tmp_path, CHANGES), "--project", "platform/gpu-ci", "--mr", "8"]) == 1
    assert "merge request !8 of project platform/gpu-ci" in capsys.readouterr().err


def test_an_older_pipeline_does_not_overwrite_a_newer_note(
    ci_env: pytest.MonkeyPatch, gitlab: FakeGitLab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ci_env.setenv("CI_COMMIT_SHA", "b" * 40)  # this pipeline ran an older commit of the MR
    assert main(["mr-note", "--preview", _preview(tmp_path, CHANGES)]) == 0
    assert gitlab.writes() == []
    assert "not written: the merge request is at aaaaaaaaaaaa now, this pipeline ran bbbbbbbbbbbb" in (
        capsys.readouterr().out
    )


def test_without_a_token_the_note_is_printed_not_posted(
    ci_env: pytest.MonkeyPatch, gitlab: FakeGitLab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ci_env.delenv("GITLAB_PREVIEW_NOTE_TOKEN")
    assert main(["mr-note", "--preview", _preview(tmp_path, CHANGES)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith(marker("dev"))
    assert "$GITLAB_PREVIEW_NOTE_TOKEN is not set" in captured.err
    assert gitlab.requests == []


def test_outside_a_merge_request_pipeline_it_says_so(
    ci_env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ci_env.delenv("CI_MERGE_REQUEST_IID")
    assert main(["mr-note", "--preview", _preview(tmp_path, CHANGES)]) == 2
    assert capsys.readouterr().err.startswith("error: not a merge request pipeline")


# ---------------------------------------------------------------------------------------------------------
# Least trust: the token is vetted before anything is written, and the two jobs post as two users


def _plan_diff(tmp_path: Path) -> str:
    path = tmp_path / "plan-diff.txt"
    path.write_text(
        "Offline plan diff of stack 'dev': main -> head\n\n" + CHANGES.split("Resources:")[1].join(["Resources:", ""]),
        encoding="utf-8",
    )
    return str(path)


@pytest.mark.parametrize(
    "case",
    [
        (
            lambda g: g.members.update({(PROJECT, BOT.user_id): 30}),
            "role on the project is Developer (30), above Reporter",
        ),
        (
            lambda g: g.members.update({(PROJECT, BOT.user_id): 40}),
            "role on the project is Maintainer (40), above Reporter",
        ),
        (lambda g: g.members.update({(PROJECT, BOT.user_id): None}), "the token's user is not a member of the project"),
        (lambda g: g.token_expiry.update({"bot-token": None}), "the token never expires"),
        (
            lambda g: g.token_expiry.update({"bot-token": (date.today() + timedelta(days=120)).isoformat()}),
            "more than 90 days from now",
        ),
        (
            lambda g: g.tokens.update(
                {"bot-token": Token(BOT.user_id, BOT.username, frozenset({"api", "write_repository"}))}
            ),
            "the token has scopes ['write_repository'] besides `api`",
        ),
    ],
    ids=["developer", "maintainer", "not-a-member", "never-expires", "120-days", "write-repository"],
)
def test_a_token_that_could_do_more_than_comment_is_refused_before_any_write(
    ci_env: pytest.MonkeyPatch,
    gitlab: FakeGitLab,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    case: tuple[Callable[[FakeGitLab], None], str],
) -> None:
    setup, expected = case
    setup(gitlab)
    assert main(["mr-note", "--preview", _preview(tmp_path, CHANGES)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and expected in err and err.count("\n") == 1
    assert gitlab.writes() == [] and gitlab.notes_of(PROJECT, MR) == []
    asked = [r.path for r in gitlab.requests]
    assert asked[0] == "/api/v4/personal_access_tokens/self"


def test_a_reporter_token_expiring_within_90_days_is_asked_about_and_used(
    ci_env: pytest.MonkeyPatch, gitlab: FakeGitLab, tmp_path: Path
) -> None:
    gitlab.token_expiry["bot-token"] = (date.today() + timedelta(days=90)).isoformat()
    assert main(["mr-note", "--preview", _preview(tmp_path, CHANGES)]) == 0
    paths = [r.path for r in gitlab.requests]
    assert paths[:2] == ["/api/v4/personal_access_tokens/self", f"/api/v4/projects/{PROJECT}/members/all/900"]
    assert len(gitlab.notes_of(PROJECT, MR)) == 1


def test_the_token_s_user_is_taken_from_the_vetting_and_only_the_other_token_is_asked_who_it_is(
    ci_env: pytest.MonkeyPatch, gitlab: FakeGitLab, tmp_path: Path
) -> None:
    assert main(["mr-note", "--preview", _preview(tmp_path, CHANGES)]) == 0
    assert [r.path for r in gitlab.requests].count("/api/v4/user") == 1  # $GITLAB_NOTE_TOKEN's, for same_user
    assert gitlab.notes_of(PROJECT, MR)[0]["author"]["id"] == BOT.user_id


@pytest.mark.parametrize("unprotected", ["bot-token", "bot-token-again"])
def test_the_protected_preview_refuses_to_post_as_the_unprotected_tokens_user(
    ci_env: pytest.MonkeyPatch, gitlab: FakeGitLab, tmp_path: Path, capsys: pytest.CaptureFixture[str], unprotected: str
) -> None:
    gitlab.tokens["bot-token-again"] = BOT  # a second token of the same bot user
    ci_env.setenv("GITLAB_NOTE_TOKEN", unprotected)
    assert main(["mr-note", "--preview", _preview(tmp_path, CHANGES)]) == 1
    err = capsys.readouterr().err
    assert "$GITLAB_PREVIEW_NOTE_TOKEN acts as the same GitLab user as $GITLAB_NOTE_TOKEN" in err
    assert gitlab.writes() == []


def test_the_unprotected_job_never_touches_the_protected_previews_note(
    ci_env: pytest.MonkeyPatch, gitlab: FakeGitLab, tmp_path: Path
) -> None:
    assert main(["mr-note", "--preview", _preview(tmp_path, CHANGES)]) == 0
    [preview] = gitlab.notes_of(PROJECT, MR)
    before = dict(preview)
    assert preview["body"].startswith(marker("dev", "preview") + "\n")
    gitlab.requests.clear()
    assert main(["mr-note", "--plan-diff", _plan_diff(tmp_path)]) == 0
    preview_after, offline = gitlab.notes_of(PROJECT, MR)
    assert preview_after == before
    assert (offline["author"]["id"], offline["body"].split("\n", 1)[0]) == (
        OFFLINE_BOT.user_id,
        marker("dev", "offline"),
    )
    assert [(r.method, r.path) for r in gitlab.writes()] == [
        ("POST", f"/api/v4/projects/{PROJECT}/merge_requests/{MR}/notes")
    ]


def test_a_note_edit_by_another_user_is_refused_by_gitlab(gitlab: FakeGitLab) -> None:
    """Why two identities suffice: only a note's author may edit it (GitLab's rule, which the fake keeps)."""
    note = gitlab.add_note(PROJECT, MR, marker("dev", "offline") + "\nby the preview bot", BOT.user_id)
    target = Target(gitlab.url, str(PROJECT), MR)
    outcome = upsert_note(
        target, "offline-token", marker("dev", "offline"), "x", user_id=OFFLINE_BOT.user_id, create=False
    )
    assert outcome.action == "skipped"
    client = python_gitlab.Gitlab(gitlab.url, private_token="offline-token")
    notes = client.projects.get(str(PROJECT), lazy=True).mergerequests.get(MR, lazy=True).notes
    with pytest.raises(GitlabUpdateError) as refused:
        notes.update(note, {"body": "tampered"})
    assert refused.value.response_code == 403
    assert gitlab.notes_of(PROJECT, MR)[0]["body"].endswith("by the preview bot")


@pytest.mark.parametrize(
    ("facts", "reason"),
    [
        (TokenFacts(1, ("api",), date(2027, 2, 28), 20), None),
        (TokenFacts(1, ("api",), date(2027, 3, 1), 20), "the token expires on 2027-03-01, more than 90 days from now"),
        (TokenFacts(1, ("api", "self_rotate"), date(2026, 12, 31), 10), None),
        (TokenFacts(1, ("api",), date(2026, 12, 31), 20, active=False), "the token is revoked or inactive"),
    ],
    ids=["90-days", "91-days", "guest-self-rotate", "revoked"],
)
def test_judge_token_boundaries(facts: TokenFacts, reason: str | None) -> None:
    assert judge_token(facts, today=date(2026, 11, 30)) == reason


def test_a_redirect_to_another_host_takes_no_token_there(
    ci_env: pytest.MonkeyPatch, gitlab: FakeGitLab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with running(FakeGitLab(tokens={"bot-token": BOT, "offline-token": OFFLINE_BOT})) as other:
        gitlab.redirect_to = other.url
        assert main(["mr-note", "--preview", _preview(tmp_path, CHANGES)]) == 1
    assert other.requests == []
    err = capsys.readouterr().err
    assert f"sent the client on to {other.url}" in err and "bot-token" not in err


def test_the_outcome_line_shows_the_origin_only(
    ci_env: pytest.MonkeyPatch, gitlab: FakeGitLab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A credential typed into --gitlab-url is not echoed back on success (error lines are redacted)."""
    with_userinfo = gitlab.url.replace("http://", "http://oauth2:glpat-typed-into-the-url-1234@")
    assert main(["mr-note", "--preview", _preview(tmp_path, CHANGES), "--gitlab-url", with_userinfo]) == 0
    out = capsys.readouterr().out
    assert f"created note {gitlab.notes_of(PROJECT, MR)[0]['id']} (merge request !7 of project 42 on " in out
    assert "glpat-typed" not in out and "oauth2" not in out


_SELF = "/api/v4/personal_access_tokens/self"
_MEMBER = f"/api/v4/projects/{PROJECT}/members/all/{BOT.user_id}"
_MR_PATH = f"/api/v4/projects/{PROJECT}/merge_requests/{MR}"
_GOOD_SELF = {"user_id": BOT.user_id, "scopes": ["api"], "expires_at": "2026-12-20", "active": True}


@pytest.mark.usefixtures("ci_env")
@pytest.mark.parametrize(
    "case",
    [
        (_SELF, [1, 2], "GET /personal_access_tokens/self is a list, not an object"),
        (_SELF, {"scopes": ["api"]}, "user_id is null, not a whole number"),
        (_SELF, {**_GOOD_SELF, "user_id": "900"}, "user_id is a string"),
        (_SELF, {**_GOOD_SELF, "user_id": True}, "user_id is a boolean"),
        (_SELF, {**_GOOD_SELF, "user_id": 1e308}, "user_id is a number, not a whole number"),
        (_SELF, {**_GOOD_SELF, "expires_at": "yesterday"}, "expires_at is a string, not a date"),
        (_SELF, {**_GOOD_SELF, "expires_at": 5}, "expires_at is a number, not a date"),
        (_SELF, {**_GOOD_SELF, "scopes": "api,write_repository"}, "scopes is a string, not a list of names"),
        (_SELF, {**_GOOD_SELF, "scopes": 5}, "scopes is a number"),
        (_SELF, {**_GOOD_SELF, "active": "false"}, "active is a string, not true or false"),
        (_SELF, {**_GOOD_SELF, "revoked": "no"}, "revoked is a string"),
        (_MEMBER, [1], "membership of project 42 is a list, not an object"),
        (_MEMBER, {"id": BOT.user_id}, "membership of project 42: access_level is null"),
        (_MEMBER, {"id": BOT.user_id, "access_level": "20"}, "access_level is a string"),
        (_MR_PATH, {"iid": MR, "sha": 5}, "sha is a number, not a commit id"),
        (_MR_PATH, {"iid": MR, "sha": "<b>@all</b>"}, "sha is a string, not a commit id"),
        (_MR_PATH, [1], f"merge request !{MR} of project 42 on "),
        ("/api/v4/user", [1], "GET /user with the other token is a list, not an object"),
    ],
)
def test_an_answer_of_another_shape_is_refused_in_one_line_and_nothing_is_written(
    gitlab: FakeGitLab, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: tuple[str, object, str]
) -> None:
    """An answer of another shape is refused, never read as a default: `active: "false"` is no active token."""
    path, answer, said = case
    gitlab.answer = lambda method, asked, _query: (200, answer, {}) if (method, asked) == ("GET", path) else None
    assert main(["mr-note", "--preview", _preview(tmp_path, CHANGES)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and said in err
    assert "Traceback" not in err and "bot-token" not in err
    assert gitlab.writes() == []


@pytest.mark.parametrize("created", [{"body": "x"}, {"id": "1001"}, [1]])
def test_a_created_note_without_an_id_is_refused_in_one_line(
    ci_env: pytest.MonkeyPatch, gitlab: FakeGitLab, tmp_path: Path, capsys: pytest.CaptureFixture[str], created: object
) -> None:
    gitlab.answer = lambda method, _path, _query: (201, created, {}) if method == "POST" else None
    assert main(["mr-note", "--preview", _preview(tmp_path, CHANGES)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: GitLab's answer ") and err.count("\n") == 1


def test_a_merge_request_without_a_head_commit_is_not_stale(
    ci_env: pytest.MonkeyPatch, gitlab: FakeGitLab, tmp_path: Path
) -> None:
    gitlab.answer = lambda method, path, _query: (200, {"iid": MR}, {}) if (method, path) == ("GET", _MR_PATH) else None
    assert main(["mr-note", "--preview", _preview(tmp_path, CHANGES)]) == 0
    assert len(gitlab.notes_of(PROJECT, MR)) == 1
