"""A job's prepare read from its trace (`infra.workload.traces.prepare_of`), case by case and generated: a figure
only from markers that can be the runner's, every other trace one reason."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infra.workload.job_entries import Job
from infra.workload.traces import CLOCK_SKEW, Prepare, TraceProblem, prepare_of

CREATED = datetime(2026, 11, 20, 9, 10, tzinfo=UTC)
STARTED = CREATED + timedelta(seconds=4)
T0 = int(STARTED.timestamp())
NOW = datetime(2026, 12, 1, tzinfo=UTC)
JOB = Job(1, "train-validate-tft", "success", CREATED, started_at=STARTED, duration=3000.0, queued_duration=4.0)
WAITING = b"Waiting for pod gitlab-runner/runner-x to be running, status is Pending\n"
UNSCHEDULABLE = b'\tUnschedulable: "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."\n'


def _mark(kind: str, at: int, name: str) -> bytes:
    return f"section_{kind}:{at}:{name}\r\x1b[0K".encode()


def _trace(prepare: int = 600, *, cold: bool = True, tail: bytes = b"") -> bytes:
    return b"".join(
        [
            b"\x1b[0KRunning with gitlab-runner 18.9.0\x1b[0;m\n",
            _mark("start", T0, "prepare_executor"),
            b'\x1b[36;1mPreparing the "kubernetes" executor\x1b[0;m\n',
            _mark("end", T0 + 1, "prepare_executor") + b"\n",
            _mark("start", T0 + 1, "prepare_script") + b"Preparing environment\n",
            WAITING,
            UNSCHEDULABLE if cold else b'\tContainersNotReady: "containers with unready status: [build]"\n',
            _mark("end", T0 + prepare, "prepare_script") + b"\n",
            _mark("start", T0 + prepare, "get_sources") + b"Getting source\n",
            tail,
        ]
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (_trace(600), Prepare(600, True)),
        (_trace(25, cold=False), Prepare(25, False)),
        # A job's own script may print markers and the words: after the prepare, they count for nothing.
        (_trace(25, cold=False, tail=UNSCHEDULABLE + _mark("start", T0 + 9, "prepare_script")), Prepare(25, False)),
        (_trace(25, cold=False).replace(b"Preparing", b"\x00\xff\xfe Preparing"), Prepare(25, False)),  # binary
        (_trace(600).replace(b"prepare_script\r", b"prepare_script[collapsed=true]\r"), Prepare(600, True)),
        (b"no section at all\n" * 20, TraceProblem("no prepare section")),
        (_trace(600).replace(b"prepare_executor", b"prepare_\x1b[31mexecutor"), TraceProblem("no prepare section")),
        (
            _trace(600).replace(b"prepare_script", b"prepare_\x1b[1mscript"),
            TraceProblem("another section before the prepare's end"),
        ),
        (_trace(600) + _trace(600), Prepare(600, True)),  # the second copy is past get_sources
        (_mark("start", T0, "prepare_script") * 2, TraceProblem("prepare_script started or ended twice")),
        (
            _mark("start", T0 + 50, "prepare_script") + _mark("end", T0 + 10, "prepare_script"),
            TraceProblem("a prepare section ends before it starts"),
        ),
        (
            _mark("start", T0, "prepare_executor")
            + _mark("end", T0 + 700, "prepare_executor")
            + _mark("start", T0 + 1, "prepare_script")
            + _mark("end", T0 + 600, "prepare_script"),
            TraceProblem("the prepare sections are out of order"),
        ),
        (
            _mark("start", T0, "prepare_script") + WAITING + UNSCHEDULABLE + b"ERROR: Job failed (system failure)\n",
            TraceProblem("the prepare never ended (the job ended while its pod waited)"),
        ),
        (_trace(3000 + 601 + 10 * 60), TraceProblem("a prepare after the job")),
        (
            _mark("start", int((NOW + timedelta(days=400)).timestamp()), "prepare_script")
            + _mark("end", int((NOW + timedelta(days=401)).timestamp()), "prepare_script"),
            TraceProblem("a prepare time in the future"),
        ),
        (
            _mark("start", int((CREATED - timedelta(days=3)).timestamp()), "prepare_script")
            + _mark("end", T0, "prepare_script"),
            TraceProblem("a prepare before the job was created"),
        ),
        (_mark("start", 10**12 - 1, "prepare_script") + _mark("end", 10**12, "prepare_script"), None),
    ],
    ids=[
        "cold",
        "warm",
        "forged-later",
        "binary",
        "collapsed-option",
        "none",
        "ansi-in-executor",
        "ansi-in-script",
        "twice-later",
        "two-starts",
        "end-before-start",
        "out-of-order",
        "never-ended",
        "after-the-job",
        "future",
        "before-created",
        "thirteen-digits",
    ],
)
def test_a_prepare_comes_only_from_markers_that_can_be_the_runners(
    data: bytes, expected: Prepare | TraceProblem | None
) -> None:
    """A name with an escape in it is no stage of the runner's: what follows it is not read."""
    outcome = prepare_of(data, JOB, NOW)
    if expected is None:
        assert isinstance(outcome, TraceProblem)
        return
    assert outcome == expected


def test_a_part_read_must_hold_the_end_of_the_prepare() -> None:
    cut = _trace(600)[:200]
    assert prepare_of(cut, JOB, NOW, complete=False) == TraceProblem("no end of the prepare in the part read")
    assert prepare_of(_trace(600), JOB, NOW, complete=False) == Prepare(600, True)  # get_sources was reached


PIECES = st.one_of(
    st.builds(
        _mark,
        st.sampled_from(["start", "end"]),
        st.integers(T0 - 10**6, T0 + 10**6),
        st.sampled_from(["prepare_executor", "prepare_script", "get_sources", "resolve_secrets", "step_script"]),
    ),
    st.sampled_from([WAITING, UNSCHEDULABLE, b"TriggeredScaleUp\n", b"\x00\xff", b"\r\x1b[0K", b"\n"]),
    st.binary(max_size=40),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, max_size=14), st.booleans())
def test_any_trace_gives_a_prepare_within_the_job_or_one_reason(pieces: list[bytes], complete: bool) -> None:
    outcome = prepare_of(b"".join(pieces), JOB, NOW, complete=complete)
    if isinstance(outcome, Prepare):
        assert JOB.duration is not None
        assert 0 <= outcome.seconds <= JOB.duration + CLOCK_SKEW.total_seconds()
    else:
        assert isinstance(outcome, TraceProblem) and outcome.reason and "\n" not in outcome.reason
