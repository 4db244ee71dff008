"""The bounds `infra.gitlab_api` puts on every GitLab client: what a 429 may ask, what an answer may cost, how far
a list may page, how many requests a run may send, and how GitLab's text is shown.

The three clients (`workload`, `mr-note`, `check-ci --online`) each meet a hostile answer from
tests/support/fake_gitlab.py here; `tests/workload/test_workload_answers.py` goes through the workload's
answers in detail.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gitlab.exceptions import GitlabHttpError
from support.fake_gitlab import FakeGitLab, Raw, Token, running
from support.paths import ROOT

from infra import gitlab_api
from infra.__main__ import main
from infra.documents import printable
from infra.gitlab_api import BadAnswer, Delay, OverBudget, connect, list_pages, retry_delay
from infra.review.gitlab_notes import NoteError, Target, upsert_note

NOW = 1_800_000_000.0
"""2027-01-15 08:00 UTC, as a Unix time."""
BOT = Token(user_id=900, username="project_42_bot", scopes=frozenset({"api"}))
NOTES = "/api/v4/projects/42/merge_requests/7/notes"


@pytest.mark.parametrize(
    ("headers", "attempt", "delay"),
    [
        ({"Retry-After": "7"}, 0, Delay(7.0, "Retry-After")),
        ({"Retry-After": " 2.5 "}, 0, Delay(2.5, "Retry-After")),
        ({"Retry-After": "-3"}, 0, Delay(0.0, "Retry-After")),
        ({"Retry-After": "Fri, 15 Jan 2027 08:01:00 GMT"}, 0, Delay(60.0, "Retry-After")),
        ({"Retry-After": "Thu, 01 Jan 1970 00:00:00 GMT"}, 0, Delay(0.0, "Retry-After")),
        ({"Retry-After": "Fri, 15 Jan 2027 08:00:30 -0000"}, 0, Delay(30.0, "Retry-After")),  # UTC, origin unknown
        ({"Retry-After": "1e999"}, 0, Delay(float("inf"), "Retry-After")),
        ({"Retry-After": "9" * 400}, 0, Delay(float("9" * 100), "Retry-After")),  # read as its first 100 digits
        ({"Retry-After": "nan"}, 3, Delay(0.8)),
        ({"Retry-After": "Fri, 99 Foo 2027"}, 0, Delay(0.1)),
        ({"Retry-After": "soon", "RateLimit-Reset": str(int(NOW) + 90)}, 0, Delay(90.0, "RateLimit-Reset")),
        ({"RateLimit-Reset": "45"}, 0, Delay(45.0, "RateLimit-Reset")),  # seconds (the IETF draft), not a time
        ({"RateLimit-Reset": str(int(NOW) - 90)}, 0, Delay(0.0, "RateLimit-Reset")),
        ({"RateLimit-Reset": "tomorrow"}, 1, Delay(0.2)),
        ({}, 20, Delay(102.4)),  # the backoff stops doubling
    ],
)
def test_retry_delay_reads_every_form_and_never_goes_negative(
    headers: dict[str, str], attempt: int, delay: Delay
) -> None:
    assert retry_delay(headers, attempt, NOW) == delay


def test_printable_escapes_what_would_forge_or_garble_a_line() -> None:
    assert printable("train-dqn") == "train-dqn"
    assert printable("a\nerror: b\x1b[2J\r\u202e\x00") == "a\\nerror: b\\x1b[2J\\r\\u202e\\x00"
    assert printable("x" * 300, 10) == "x" * 10 + "…"


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    state = FakeGitLab(
        tokens={"bot-token": BOT}, projects={"42": 42, "ml-team/training": 42}, merge_requests={(42, 7): "a" * 40}
    )
    with running(state) as server:
        yield server


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")


def _pages(url: str, *bodies: Any) -> Any:
    """An `answer` hook serving the notes list as `bodies` (page n is bodies[n-1]), each linking the next."""

    def answer(method: str, path: str, query: dict[str, str]) -> tuple[int, Any, dict[str, str]] | None:
        if method != "GET" or path != NOTES:
            return None
        page = int(query.get("page", "1"))
        headers = {}
        if page < len(bodies):
            headers["Link"] = f'<{url}{NOTES}?page={page + 1}&per_page=100>; rel="next"'
        return 200, bodies[min(page, len(bodies)) - 1], headers

    return answer


def _note(note_id: int, body: str = "other") -> dict[str, Any]:
    return {"id": note_id, "body": body, "author": {"id": BOT.user_id}, "system": False}


def test_a_list_is_read_page_by_page_within_its_budget(gitlab: FakeGitLab) -> None:
    client = connect(gitlab.url, private_token="bot-token")
    gitlab.answer = _pages(gitlab.url, [_note(1)], [_note(2)], [_note(3)])
    assert [len(page) for page in list_pages(client, NOTES.removeprefix("/api/v4"), {}, what="notes")] == [1, 1, 1]
    with pytest.raises(BadAnswer) as over:
        list(list_pages(client, NOTES.removeprefix("/api/v4"), {}, what="the notes", max_pages=2))
    assert str(over.value) == "the notes: more than 2 pages: stopped"


@pytest.mark.parametrize(
    ("bodies", "says"),
    [
        (([_note(1)], [_note(1)]), "page 2 is page 1 again: GitLab's paging goes round"),
        (({"1": _note(1)},), "page 1 is an object, not a list"),
        (([_note(1), 5, "x", {"id": True, "body": "<!-- gpu-ci", "author": 900, "system": False}],), None),
    ],
)
def test_mr_note_reads_the_notes_within_the_shared_bounds(
    bodies: tuple[Any, ...], says: str | None, gitlab: FakeGitLab
) -> None:
    """Circular pages, a list that is a mapping: one NoteError line; entries of any shape are never ours."""
    gitlab.answer = _pages(gitlab.url, *bodies)
    target = Target(gitlab.url, "42", 7)
    if says is None:
        outcome = upsert_note(target, "bot-token", "<!-- gpu-ci", "new", user_id=BOT.user_id, create=False)
        assert outcome.action == "skipped"
        return
    with pytest.raises(NoteError) as refused:
        upsert_note(target, "bot-token", "<!-- gpu-ci", "new", user_id=BOT.user_id, create=True)
    assert str(refused.value) == f"the notes of merge request !7 of project 42 on {gitlab.url}: {says}"
    assert gitlab.writes() == []


def test_check_ci_online_refuses_an_answer_over_the_budget_in_one_line(
    gitlab: FakeGitLab, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITLAB_TOKEN", "bot-token")
    monkeypatch.delenv("CI_JOB_TOKEN", raising=False)
    pipeline = tmp_path / ".gitlab-ci.yml"
    pipeline.write_text("lint: {script: [ruff]}\n", encoding="utf-8")
    gitlab.answer = lambda method, path, query: (200, Raw(b'{"valid": ' + b"[" * 5000 + b"]" * 5000 + b"}"), {})
    args = [str(pipeline), "--online", "--gitlab-url", gitlab.url, "--project", "ml-team/training"]
    assert main(["check-ci", *args]) == 2
    assert capsys.readouterr().err == (
        "error: GitLab's answer to POST /api/v4/projects/ml-team%2Ftraining/ci/lint: nested more than 32 levels "
        "deep, not a GitLab answer\n"
    )


def test_a_client_sends_at_most_its_request_budget(gitlab: FakeGitLab) -> None:
    client = connect(gitlab.url, private_token="bot-token", max_requests=3)
    for _ in range(3):
        client.http_get("/user")
    with pytest.raises(OverBudget) as over:
        client.http_get("/user")
    assert str(over.value) == f"more than 3 requests to GitLab at {gitlab.url} in one run: stopped"
    assert len(gitlab.requests) == 3


@pytest.mark.parametrize(
    ("answer", "lines"),
    [
        ({"valid": False, "errors": "abc"}, ["error: abc"]),  # one message, not one per character
        ({"valid": False, "errors": ["jobs \x1b[2J\nerror: forged"]}, ["error: jobs \\x1b[2J\\nerror: forged"]),
        ({"valid": False, "errors": 5}, ["error: 5"]),
        ([{"valid": True}] * 2000, None),  # not an object: python-gitlab's message quotes it whole
    ],
)
def test_check_ci_online_shows_gitlabs_messages_escaped_and_short(
    answer: Any, lines: list[str] | None, gitlab: FakeGitLab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = tmp_path / ".gitlab-ci.yml"
    pipeline.write_text("lint: {script: [ruff]}\n", encoding="utf-8")
    gitlab.answer = lambda method, path, query: (200, answer, {}) if path.endswith("/ci/lint") else None
    args = [str(pipeline), "--online", "--gitlab-url", gitlab.url, "--project", "ml-team/training"]
    with pytest.MonkeyPatch.context() as env:
        env.setenv("GITLAB_TOKEN", "bot-token")
        env.delenv("CI_JOB_TOKEN", raising=False)
        assert main(["check-ci", *args]) == 2
    err = capsys.readouterr().err.splitlines()
    if lines is not None:
        assert err == lines
        return
    [line] = err
    assert line.startswith(f"error: GitLab at {gitlab.url} answered None: Attempted to initialize RESTObject")
    assert len(line) < 400


def test_a_5xx_with_a_wait_header_python_gitlab_cannot_read_is_retried_on_its_short_backoff(
    gitlab: FakeGitLab,
) -> None:
    """mr-note lets python-gitlab retry a 503; python-gitlab would `int()` this Retry-After (ValueError) or
    sleep until 9999: the header does not reach it, and it retries after 0.1 s."""
    answered: list[str] = []

    def once_unavailable(method: str, path: str, query: dict[str, str]) -> tuple[int, Any, dict[str, str]] | None:
        if path.endswith("/merge_requests/7") and not answered:
            answered.append(path)
            return 503, {"message": "503 Service Unavailable"}, {"Retry-After": "Fri, 31 Dec 9999 23:59:59 GMT"}
        return None

    gitlab.answer = once_unavailable
    outcome = upsert_note(Target(gitlab.url, "42", 7), "bot-token", "<!-- m", "body", user_id=BOT.user_id, create=True)
    assert outcome.action == "created"
    assert len([r for r in gitlab.requests if r.path.endswith("/merge_requests/7")]) == 2


@pytest.mark.parametrize(
    ("url", "token", "expected"),
    [
        ("http://[::1/", "t", "--gitlab-url 'http://[::1/': not an http(s) URL with a host"),
        ("file:///etc/passwd", "t", "--gitlab-url 'file:///etc/passwd': not an http(s) URL with a host"),
        ("http://gitlab.example.com:99999", "t", "--gitlab-url 'http://gitlab.example.com:99999': not an http(s) URL"),
        ("https://gitlab.example.com", "glpat-abc\nX-Evil: 1", "$TOKEN holds a space, a line break or a character"),
        ("https://gitlab.example.com", "glpat-é", "$TOKEN holds a space, a line break or a character"),
        ("https://gitlab.example.com", "glpat-abcdefgh", ""),
    ],
    ids=["broken-ipv6", "file", "port", "newline", "non-ascii", "fine"],
)
def test_what_no_request_can_be_sent_with_is_said_before_any_client_is_built(
    url: str, token: str, expected: str
) -> None:
    """requests and python-gitlab fail on these with a traceback, quoting the header (the token) for a newline."""
    problem = gitlab_api.connection_problem(url, token, "--gitlab-url", "$TOKEN")
    assert problem.startswith(expected) and (bool(problem) == bool(expected))
    assert "glpat" not in problem


def test_an_unreachable_gitlab_stops_after_a_few_attempts_not_minutes(capsys: pytest.CaptureFixture[str]) -> None:
    """mr-note's client retries connection errors (`retry_transient_errors`): 10 times, doubling its wait, which
    was minutes of waiting for a GitLab that is down. Nothing listens on the port: 3 attempts, then one line."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = connect(f"http://127.0.0.1:{port}", private_token="bot-token", retry_transient_errors=True)
    with pytest.raises(gitlab_api.Unreachable, match=r"cannot reach GitLab at http://127.0.0.1:\d+ \(3 attempts"):
        gitlab_api.get_object(client, "/user", "GET /user")


@pytest.mark.parametrize(
    ("command", "variable"),
    [
        (["workload", "--from-gitlab"], "GITLAB_TOKEN"),
        (["check-ci", "tests/fixtures/training-repo", "--online"], "GITLAB_TOKEN"),
        (["mr-note", "--plan-diff", "README.md", "--mr", "1", "--project", "1"], "GITLAB_NOTE_TOKEN"),
    ],
    ids=["workload", "check-ci", "mr-note"],
)
@pytest.mark.parametrize(
    "case",
    [
        ("http://[::1", "glpat-abcdefghijklmnop", "--gitlab-url 'http://[::1': not an http(s) URL with a host"),
        ("http://127.0.0.1:9", "glpat-abcdefghijklmnop\nX-Evil: 1", "holds a space, a line break or a character"),
    ],
    ids=["broken-url", "token-with-a-newline"],
)
def test_every_gitlab_command_refuses_what_no_request_can_carry_in_one_line(
    command: list[str],
    variable: str,
    case: tuple[str, str, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each used to end in a traceback; the newline one quoted the header, so the token, in it."""
    url, token, expected = case
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv(variable, token)
    assert main([*command, "--gitlab-url", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and expected in err, err
    assert "abcdefghijklmnop" not in err


@pytest.mark.parametrize(
    "body",
    [b"[" * 5000 + b"]" * 5000, b'{"message": NaN}', b"\xff\xfe not text", b"<html>502</html>"],
    ids=["deep", "nan", "binary", "html"],
)
def test_an_error_answer_whose_body_is_no_json_within_the_budget_is_still_its_status(
    body: bytes, gitlab: FakeGitLab
) -> None:
    """python-gitlab reads an error's message with `json()` on any answer: a 5,000-deep body would be a
    RecursionError in its parser. The backend's answer says "not JSON" instead: the refusal is the 404."""
    gitlab.answer = lambda method, path, query: (404, Raw(body), {})
    client = connect(gitlab.url, private_token="bot-token")
    with pytest.raises(GitlabHttpError) as refused:
        gitlab_api.get_object(client, "/user", "GET /user")
    assert refused.value.response_code == 404


def test_a_body_larger_than_the_budget_is_cut_off_while_it_arrives(gitlab: FakeGitLab) -> None:
    """No Content-Length: the body is read through the bounded stream and stops past 8 MiB, not held whole."""
    chunk = b" " * (1 << 20)
    gitlab.answer = lambda method, path, query: (200, Raw(iter([b"["] + [chunk] * 64 + [b"]"])), {})
    client = connect(gitlab.url, private_token="bot-token")
    with pytest.raises(BadAnswer, match=r"GitLab's answer to GET /api/v4/user: larger than 8192 KiB"):
        client.http_get("/user")
    assert gitlab.bytes_sent < 40 << 20
