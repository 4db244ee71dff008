"""A job's kind, class, days and hours (infra/workload/kinds.py) by table, and the week's exposure per weekday."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infra.config.schedule import WindowSpec, weekdays
from infra.config.workload import ProfileLoadSpec
from infra.workload.kinds import arrival_window, days_text, job_class, kind_of, weekday_exposure

RL = ("dqn", "ppo")
SUPERVISED = ("tft", "mamba2", "x_lstm")
PARIS = ZoneInfo("Europe/Paris")


@pytest.mark.parametrize(
    ("name", "families", "stage", "kind"),
    [
        ("train-validate-dqn", RL, "train", "train-validate"),
        ("hyperopt-ppo: [3]", RL, "train", "hyperopt"),  # parallel: matrix
        ("hyperopt_ppo", RL, "train", "hyperopt"),  # the family as an `_` part of a word
        ("train: [mamba2, 3]", SUPERVISED, "train", "train"),  # the family only in the matrix values
        ("train-x_lstm 2/4", SUPERVISED, "train", "train"),  # parallel: N
        ("Train-Validate-PPO", RL, "", "train-validate"),
        ("nightly dqn run", RL, "", "nightly"),  # the part before the family, as a kind is spelt
        ("dqn-smoke", RL, "train", "smoke"),  # nothing before the family: the part after it
        ("dqn", RL, "Train", "train"),  # nothing but the family: the stage
        ("dqn", RL, "", "train-validate"),  # nor a stage
        ("benchmark", RL, "train", "benchmark"),  # no family (a job known by its runner): its whole name
        ("réseau-dqn", RL, "", "r-seau"),
        ("--__dqn", RL, "", "train-validate"),
        ("a" * 200 + "-dqn", RL, "", "a" * 63),
    ],
)
def test_kind_of(name: str, families: tuple[str, ...], stage: str, kind: str) -> None:
    assert kind_of(name, families, stage) == kind


@given(st.text(max_size=80), st.text(max_size=20))
@settings(max_examples=60, derandomize=True, deadline=None)
def test_any_name_gives_a_kind_the_spec_takes(name: str, stage: str) -> None:
    kind = {"class": "batch", "jobs_per_day": 1, "minutes_per_job": 1}
    ProfileLoadSpec.model_validate({"kinds": {kind_of(name, RL, stage): kind}})


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("merge_request_event", "merge_request"),
        ("external_pull_request_event", "merge_request"),
        *((source, "batch") for source in ("push", "schedule", "web", "api", "trigger", "pipeline", "parent_pipeline")),
        ("security_orchestration_policy", "batch"),  # any other source GitLab has or will add
        ("unknown", None),  # GitLab's own word for a source it lost
        (None, None),
    ],
)
def test_job_class(source: str | None, expected: str | None) -> None:
    assert job_class(source) == expected


@pytest.mark.parametrize(
    ("days", "text"),
    [
        ({0, 1, 2, 3, 4}, "Mon-Fri"),
        ({0, 2, 4}, "Mon,Wed,Fri"),
        ({5, 6}, "Sat,Sun"),
        (set(range(7)), "Mon-Sun"),
        ({0, 1, 3, 4, 5}, "Mon,Tue,Thu-Sat"),
        ({6}, "Sun"),
    ],
)
def test_days_text(days: set[int], text: str) -> None:
    assert days_text(days) == text
    assert weekdays(text) == days  # as the spec reads it


@pytest.mark.parametrize(
    ("minutes", "window"),
    [
        ([540 + 10, 800, 1060], ("09:00", "17:45")),
        ([1320] * 8, ("22:00", "22:15")),  # on the quarter: a quarter long
        ([1439], ("23:45", "24:00")),
        ([0], ("00:00", "00:15")),
        # 40 arrivals from 09:00 to 12:15, one at 03:00 and one at 23:50: the stray two are outside the 5-95 %
        ([180, *(540 + 5 * i for i in range(40)), 1430], ("09:00", "12:15")),
        ([], None),
    ],
)
def test_arrival_window(minutes: list[int], window: tuple[str, str] | None) -> None:
    assert arrival_window(minutes) == window


@given(st.lists(st.integers(min_value=0, max_value=24 * 60 - 1), min_size=1, max_size=50))
@settings(max_examples=60, derandomize=True, deadline=None)
def test_an_arrival_window_is_one_the_spec_takes(minutes: list[int]) -> None:
    start, end = arrival_window(minutes) or ("", "")
    WindowSpec.model_validate({"from": start, "to": end})


def test_two_weeks_from_monday_hold_two_of_each_weekday_in_any_zone() -> None:
    since = datetime(2026, 11, 16, tzinfo=UTC)
    for zone in (UTC, PARIS, ZoneInfo("Pacific/Kiritimati"), ZoneInfo("America/Los_Angeles")):
        assert weekday_exposure(since, since + timedelta(days=14), zone) == pytest.approx((2.0,) * 7)


def test_a_part_day_counts_its_share_and_a_daylight_saving_day_its_hours() -> None:
    # Monday 12:00 to Wednesday 00:00 in Paris: half a Monday, a Tuesday.
    start = datetime(2026, 11, 16, 12, tzinfo=PARIS)
    assert weekday_exposure(start, start + timedelta(hours=36), PARIS) == pytest.approx((0.5, 1, 0, 0, 0, 0, 0))
    # Sunday 25 October 2026 has 25 hours in Paris: midnight to midnight is one Sunday.
    sunday = datetime(2026, 10, 25, tzinfo=PARIS).astimezone(UTC)
    assert weekday_exposure(sunday, sunday + timedelta(hours=25), PARIS) == pytest.approx((0, 0, 0, 0, 0, 0, 1))
