"""From tallies to the kinds written (infra/workload/figures.py): the cases the synthetic history does not hold."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from test_workload_mapping import ROUTING, _job

from infra.config.workload import MAX_KINDS
from infra.workload.figures import comparison, resolve, workload_edit
from infra.workload.measure import measure

UNTIL = datetime(2026, 11, 30, tzinfo=UTC)  # a Monday
DAYS = 14


def _measure(jobs: list[dict[str, Any]]) -> Any:
    return measure(jobs, ROUTING, UNTIL - timedelta(days=DAYS), UNTIL, DAYS)


def _sourced(job_id: int, name: str, days_ago: float, source: str = "push", **fields: Any) -> dict[str, Any]:
    return _job(job_id, name, days_ago, pipeline={"id": job_id, "source": source}, **fields)


def test_a_kind_without_a_successful_job_keeps_the_stack_durations_or_is_not_written() -> None:
    failed: dict[str, Any] = {"status": "failed", "failure_reason": "script_failure", "duration": 30.0}
    jobs = [_sourced(i, "smoke-dqn", 1 + i, **failed) for i in range(1, 4)]
    jobs += [_sourced(10 + i, "canary-dqn", 1 + i, **failed) for i in range(1, 4)]
    stack = {"profiles": {"rl": {"kinds": {"smoke": {"class": "batch", "jobs_per_day": 9, "minutes_per_job": 12}}}}}
    resolution = resolve(_measure(jobs), stack)
    kinds = {kind.name: kind for kind in resolution.kinds}
    assert kinds["smoke"].written is not None
    assert kinds["smoke"].written["minutes_per_job"] == 12
    assert "minutes_p90" not in kinds["smoke"].written
    assert kinds["smoke"].note == "no successful job: durations kept from the stack file"
    assert kinds["canary"].written is None
    assert kinds["canary"].note == "no successful job, and no kind of that name in the stack file: not written"


def test_a_kind_that_ran_is_at_least_one_job_a_day_on_its_days() -> None:
    """One job on one Tuesday of two weeks: half a job a Tuesday, written as one."""
    resolution = resolve(_measure([_sourced(1, "weekly-dqn", 6)]), None)
    [kind] = resolution.kinds
    assert (kind.per_day, kind.days) == (0.5, "Tue")
    assert kind.written is not None and kind.written["jobs_per_day"] == 1


def test_a_profile_holds_at_most_the_spec_kinds_the_busiest_written() -> None:
    jobs = [
        _sourced(100 * k + n + 1, f"kind{k:02d}-dqn", 1 + n / 10)
        for k in range(MAX_KINDS + 2)
        for n in range(k + 1)  # kind k has k + 1 jobs: kinds 00 and 01 are the least busy
    ]
    resolution = resolve(_measure(jobs), None)
    written = resolution.written()["rl"]
    assert len(written) == MAX_KINDS
    assert "kind00" not in written and "kind01" not in written
    assert resolution.notes == [
        f"2 kinds of rl (3 jobs) are not written: the spec holds {MAX_KINDS} kinds a profile, the busiest are"
    ]


def test_a_profile_level_stack_profile_is_replaced_and_bursts_go_once_no_profile_keeps_that_form() -> None:
    jobs = [_sourced(1, "train-dqn", 1, "merge_request_event")]
    stack: dict[str, Any] = {
        "batches_per_day": 3,
        "profiles": {
            "rl": {"jobs_per_day": 12, "minutes_per_job": 30},
            "bench": {"jobs_per_day": 1, "minutes_per_job": 5},
        },
    }
    measurement = _measure(jobs)
    resolution = resolve(measurement, stack)
    edit = workload_edit(measurement, resolution, stack)
    assert set(edit.kinds) == {"rl"}
    assert edit.batches_per_day == 1  # `bench` keeps the profile-level form: its bursts stay measured
    rows = {row.key: row for row in comparison(measurement, resolution, edit, stack)}
    assert rows["profiles.rl.jobs_per_day"].written == "(removed)"
    assert rows["profiles.bench"].written == "(kept)"
    del stack["profiles"]["bench"]
    edit = workload_edit(measurement, resolution, stack)
    assert edit.batches_per_day is None
    assert comparison(measurement, resolution, edit, stack)[0].written == "(removed)"
