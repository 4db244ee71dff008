"""A property of `workload --from-gitlab` over generated hostile GitLab answers (hypothesis), served by the fake.

Job entries with random wrong fields, pages that are not lists, endless or circular pages, random `Retry-After`,
`RateLimit-Reset` and `Link` headers, a project answer of any shape, traces of any bytes, status or shape (a
marker anywhere, at any time, an escape in its name): the command exits 0 with a plausible
result (a `workload:` section the spec accepts, a stack file `plan` still loads), or 1/2 with one short `error:`
line; never a traceback, a hang (pages and waits are counted), a raw control character or the token.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.fake_gitlab import CiHistory, Drop, FakeGitLab, Raw, Token, running
from test_workload_gitlab import HISTORY, PROJECT
from test_workload_traces import _isolated

from infra import gitlab_api
from infra.__main__ import main
from infra.config.load import load_spec
from infra.model.platform import load_platform
from infra.offline.stack_config import PROJECT_ROOT, load_stack_config
from infra.workload import gitlab_jobs

TOKEN = "glpat-property-secret-token"
PAGES = 4
"""The page budget in these runs (MAX_PAGES), so that an endless list costs a few requests."""
TEMPLATES = [
    job
    for job in sorted(HISTORY, key=lambda job: -job["id"])
    if job["status"] != "skipped" and job["created_at"] >= "2026-11-16"
][:60:5]
"""A dozen real entries of the window (training jobs and lint, successes and failures) to mutate."""
FIELDS = (
    "id",
    "name",
    "status",
    "created_at",
    "started_at",
    "duration",
    "queued_duration",
    "failure_reason",
    "tag_list",
    "runner",
    "pipeline",
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([10**400, -(10**400), 2**63])
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["yesterday", "2026-11-29T10:00:00", "2026-11-29T10:00:00Z", "0001-01-01T00:00:00+01:00"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
"""Any JSON value, NaN and infinities included (the fake writes them as `NaN`/`Infinity`, as a broken server)."""
header_text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40) | st.sampled_from(
    ["1.5", "-3", "0", "Wed, 21 Oct 2015 07:28:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT", "1e999", "4102444800"]
)


absurd = st.sampled_from(
    ["yesterday", "2026-11-29T10:00:00", "0001-01-01T00:00:00+01:00", 1e308, 10**400, -1, float("nan"), "x", [1], {}]
)
"""Values that nearly make sense for some field: a naive time, a time that overflows in UTC, a huge duration."""


@st.composite
def job_entries(draw: st.DrawFn) -> Any:
    """A real job with 1-3 fields replaced by anything, its id drawn from a small range (duplicates happen)."""
    job = copy.deepcopy(draw(st.sampled_from(TEMPLATES)))
    job["id"] = draw(st.integers(min_value=1, max_value=40))
    for key in draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=3, unique=True)):
        job[key] = draw(absurd | json_values)
    return job


@st.composite
def pages(draw: st.DrawFn) -> Any:
    """A page: mostly job entries, a little junk among them; now and then no list at all."""
    if draw(st.integers(min_value=0, max_value=7)) == 7:  # not 0: hypothesis draws 0 most often
        return draw(json_values)
    return draw(st.lists(job_entries(), min_size=1, max_size=5)) + draw(st.lists(json_values, max_size=2))


@pytest.fixture(scope="module")
def gitlab() -> Iterator[FakeGitLab]:
    state = FakeGitLab(tokens={TOKEN: Token(user_id=901, username="reader", scopes=frozenset({"read_api"}))})
    with running(state) as server:
        yield server


@dataclass(frozen=True)
class Hostile:
    """What the fake answers in one run, and whether the run writes the stack file."""

    pages: list[Any]
    links: str
    """`last page ends`, `endless` (the pages again and again) or `always page 2`."""
    rate_limits: int
    rate_headers: dict[str, str]
    link_header: dict[str, str] | None
    project: dict[str, Any] | None
    write: bool


RUNS = settings(
    max_examples=20,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
"""Each example is a run of the command against the fake: few, and the same ones every time."""

hostile = st.builds(
    Hostile,
    pages=st.lists(pages(), min_size=1, max_size=3),
    links=st.sampled_from(["last page ends", "last page ends", "last page ends", "endless", "always page 2"]),
    rate_limits=st.sampled_from([0, 0, 0, 1, 2]),
    rate_headers=st.dictionaries(st.sampled_from(["Retry-After", "RateLimit-Reset"]), header_text, max_size=2),
    link_header=st.none() | header_text.map(lambda text: {"Link": text}),
    project=st.none() | st.dictionaries(st.sampled_from(["id", "path_with_namespace", "created_at"]), json_values),
    write=st.booleans(),
)


@given(case=hostile)
@RUNS
def test_hostile_answers_give_a_plausible_result_or_one_error_line(
    case: Hostile,
    gitlab: FakeGitLab,
    stack: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sleeps: list[float] = []
    monkeypatch.setattr(gitlab_api, "wait", sleeps.append)
    monkeypatch.setattr(gitlab_jobs, "MAX_PAGES", PAGES)
    monkeypatch.setenv("GITLAB_TOKEN", TOKEN)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    stack.write_text((PROJECT_ROOT / "Pulumi.dev.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    history = CiHistory(42, PROJECT, "2026-01-05T09:00:00.000Z", rate_limit=case.rate_limits)
    history.rate_limit_headers = case.rate_headers
    history.page_headers = case.link_header or {}
    history.project_answer = case.project
    history.page_of = lambda n: case.pages[(n - 1) % len(case.pages)]
    history.last_page = len(case.pages) if case.links == "last page ends" else None
    history.next_page_of = (lambda n: 2) if case.links == "always page 2" else None
    gitlab.ci_history, gitlab.requests = history, []

    flags = ["--gitlab-url", gitlab.url, "--until", "2026-11-30", *(["--write"] if case.write else [])]
    code = main(["workload", "--from-gitlab", "--config", str(stack), *flags])

    out, err = capsys.readouterr()
    assert code in (0, 1, 2)
    assert TOKEN not in out + err
    assert all(line.isprintable() for line in (out + err).splitlines())
    assert "Traceback" not in err
    assert all(0 <= seconds <= gitlab_api.MAX_WAIT_SECONDS for seconds in sleeps)
    assert len([r for r in gitlab.requests if r.path.endswith("/jobs")]) <= PAGES * (gitlab_api.MAX_RETRIES + 1)
    platform = load_stack_config("dev", path=stack).get("platform")
    if case.write and code == 0:
        load_platform(platform)  # `plan` still loads the stack file written
    if code != 0:
        assert out == ""
        last = err.rstrip("\n").splitlines()[-1]
        assert last.startswith("error: ") and len(last) < 600, err
        assert sum(line.startswith("error:") for line in err.splitlines()) == 1, err
    elif out:
        assert load_spec({**platform, "workload": yaml.safe_load(out)["workload"]}).workload is not None


@pytest.fixture
def stack(tmp_path: Path) -> Path:
    return tmp_path / "Pulumi.dev.yaml"


def _marker(kind: str, at: int, name: str) -> bytes:
    return f"section_{kind}:{at}:{name}\r\x1b[0K".encode()


TRACED = _isolated(days=3)
"""Six jobs with traces: each trace is replaced by a generated one."""
T0 = min(int(datetime.fromisoformat(job["started_at"].replace("Z", "+00:00")).timestamp()) for job in TRACED)
trace_pieces = st.one_of(
    st.builds(
        _marker,
        st.sampled_from(["start", "end"]),
        st.integers(T0 - 10**7, T0 + 10**7) | st.sampled_from([0, 10**12 - 1, T0, T0 + 600]),
        st.sampled_from(["prepare_executor", "prepare_script", "get_sources", "resolve_secrets", "prepare_\x1b[0m"]),
    ),
    st.sampled_from([b'\tUnschedulable: "0/1 nodes"\n', b"TriggeredScaleUp\n", b"\x00", b"\xff\xfe", b"\n" * 3]),
    st.binary(max_size=30),
)
trace_answers = st.one_of(
    st.lists(trace_pieces, max_size=12).map(lambda pieces: Raw(b"".join(pieces), "text/plain")),
    st.sampled_from([(403, {"message": "403 Forbidden"}), (404, {"message": "404"}), (500, "x"), Drop()]),
    st.tuples(st.sampled_from([200, 502]), json_values),
)


@given(case=st.tuples(st.lists(trace_answers, min_size=len(TRACED), max_size=len(TRACED)), st.booleans()))
@RUNS
def test_hostile_traces_give_figures_from_what_is_sound_or_none(
    case: tuple[list[Any], bool],
    gitlab: FakeGitLab,
    stack: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every trace of a small history answered with anything: the run exits 0, counts no more cold starts or
    waits than jobs, asks each trace once, prints nothing raw, and writes a stack file `plan` loads."""
    answers, write = case
    monkeypatch.setenv("GITLAB_TOKEN", TOKEN)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    stack.write_text((PROJECT_ROOT / "Pulumi.dev.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    history = CiHistory(42, PROJECT, "2026-01-05T09:00:00.000Z", TRACED)
    history.traces = {job["id"]: answer for job, answer in zip(TRACED, answers, strict=True)}
    gitlab.ci_history, gitlab.requests = history, []
    flags = ["--gitlab-url", gitlab.url, "--until", "2026-11-30", "--days", "7", *(["--write"] if write else [])]
    code = main(["workload", "--from-gitlab", "--config", str(stack), *flags])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Traceback" not in err and all(line.isprintable() for line in (out + err).splitlines())
    traces = [r.path for r in gitlab.requests if r.path.endswith("/trace")]
    assert len(traces) == len(set(traces)) <= len(TRACED)
    pool = next(line for line in err.splitlines() if line.startswith("ci-training "))
    cold, warm = (int(cell) for cell in re.split(r"  +", pool)[1:4:2])
    assert cold + warm <= len(TRACED)
    if write:
        load_platform(load_stack_config("dev", path=stack).get("platform"))
