"""Job -> profile (infra/workload/mapping.py) by table, and the measurement's arithmetic (measure.py)."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from infra.model.platform import load_platform
from infra.offline.stack_config import PROJECT_ROOT, StackConfig
from infra.workload.mapping import JobFacts, ProfileKey, Routing, RunnerKey, name_tokens, profile_of, routing_of
from infra.workload.measure import Job, measure, observed_days, percentile

SUPERVISED = ("tft", "mamba2", "tggn", "x_lstm")
# Per-pool runners as the derived model describes them (dev stack), plus a pool holding two profiles.
ROUTING = Routing(
    profiles=(
        ProfileKey("rl", "ci-compile", ("dqn", "ppo"), ("kapsule", "gpu")),
        ProfileKey("supervised", "ci-training", SUPERVISED, ("kapsule", "ci-training")),
        ProfileKey("bench", "ci-shared", ("bench",), ("kapsule", "ci-shared", "bench")),
        ProfileKey("probe", "ci-shared", ("probe",), ("kapsule", "ci-shared", "probe")),
    ),
    runners=(
        RunnerKey("ci-compile", "gpu-ci runner for pool ci-compile", ("kapsule", "gpu", "ci-compile")),
        RunnerKey("ci-training", "gpu-ci runner for pool ci-training", ("kapsule", "ci-training")),
        RunnerKey("ci-shared", "gpu-ci runner for pool ci-shared", ("kapsule", "ci-shared")),
    ),
    pools=("system", "ci-compile", "ci-training", "ci-shared"),
)


@pytest.mark.parametrize(
    ("job", "profile"),
    [
        # 1. The runner decides when its pool has one profile, whatever the name or tags say.
        (JobFacts("train-validate-tft", ("kapsule", "gpu"), "gpu-ci runner for pool ci-compile"), "rl"),
        (JobFacts("nightly", (), "gpu-ci runner for pool ci-training"), "supervised"),
        # ... a runner described otherwise, whose description names the pool,
        (JobFacts("nightly", (), "old ci-training runner (manual)"), "supervised"),
        # ... or whose tags hold the pool's name.
        (JobFacts("nightly", (), "renamed", ("kapsule", "ci-training")), "supervised"),
        # A pool of two profiles falls through to the tags, then to the name, among that pool's profiles.
        (JobFacts("run", ("kapsule", "ci-shared", "probe"), "gpu-ci runner for pool ci-shared"), "probe"),
        (JobFacts("bench-dqn", ("kapsule", "ci-shared"), "gpu-ci runner for pool ci-shared"), "bench"),
        (JobFacts("train-dqn", ("kapsule", "ci-shared"), "gpu-ci runner for pool ci-shared"), None),
        # 2. No runner of ours (a job never picked up, the old setup's runner): the template's tags.
        (JobFacts("nightly", ("kapsule", "ci-training")), "supervised"),
        (JobFacts("nightly", ("gpu", "kapsule"), "old-l40s-box"), "rl"),
        (JobFacts("nightly", ("kapsule", "gpu", "cuda12")), "rl"),  # the only profile whose tags it carries
        # 3. The name's tokens: a family of exactly one profile.
        (JobFacts("train-validate-dqn", (), "shared-runners-manager-3"), "rl"),
        (JobFacts("hyperopt-tft"), "supervised"),
        (JobFacts("train: [mamba2, 3]"), "supervised"),
        (JobFacts("train-x_lstm"), "supervised"),
        (JobFacts("Train-Validate-PPO"), "rl"),
        # Not a training job: no family, or families of two profiles, or a family inside a longer word.
        (JobFacts("lint", (), "shared-runners-manager-3"), None),
        (JobFacts("compare-dqn-tft"), None),
        (JobFacts("train-dqnx"), None),
        (JobFacts("build-image", ("kapsule",)), None),
    ],
)
def test_profile_of(job: JobFacts, profile: str | None) -> None:
    assert profile_of(job, ROUTING) == profile


def test_name_tokens_keep_words_and_their_underscore_parts() -> None:
    assert name_tokens("hyperopt_ppo: [1]") == {"hyperopt_ppo", "hyperopt", "ppo", "1"}


def test_the_dev_stack_routes_by_runner_then_by_template_tags_then_by_family(dev_stack: StackConfig) -> None:
    routing = routing_of(load_platform(dev_stack.get("platform")))
    assert [(p.name, p.tags) for p in routing.profiles] == [
        ("rl", ("kapsule", "gpu")),
        ("supervised", ("kapsule", "ci-training")),
    ]
    runner = "gpu-ci: Kapsule GPU runner (managed by Pulumi) - pool ci-training"
    assert profile_of(JobFacts("train-validate-dqn", ("kapsule", "ci-training"), runner), routing) == "supervised"
    assert profile_of(JobFacts("nightly", ("kapsule", "gpu"), "old-l40s-box"), routing) == "rl"
    assert profile_of(JobFacts("hyperopt-tft", (), "old-l40s-box"), routing) == "supervised"
    assert profile_of(JobFacts("lint", (), "shared-runners-manager-3"), routing) is None


def test_percentile_is_nearest_rank() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0], 90) == 3.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.0
    assert percentile(range(1, 11), 90) == 9
    assert percentile(range(1, 12), 90) == 10


UNTIL = datetime(2026, 11, 30, tzinfo=UTC)


def _job(job_id: int, name: str, days_ago: float, **fields: object) -> dict[str, object]:
    created = UNTIL - timedelta(days=days_ago)
    return {
        "id": job_id,
        "name": name,
        "status": "success",
        "created_at": created.isoformat().replace("+00:00", "Z"),
        "started_at": (created + timedelta(seconds=10)).isoformat(),
        "duration": 600.0,
        "queued_duration": 10.0,
        "pipeline": {"id": job_id // 10},
        "tag_list": [],
        "runner": None,
        **fields,
    }


def test_measure_counts_the_window_only_and_what_ran() -> None:
    jobs = [
        _job(10, "train-dqn", 0.5),
        _job(11, "train-dqn", 1.5, status="failed", failure_reason="runner_system_failure", duration=900.0),
        _job(12, "train-dqn", 1.5, status="failed", failure_reason="stuck_or_timeout_failure", started_at=None),
        _job(13, "train-dqn", 1.5, status="manual", started_at=None),
        _job(20, "train-dqn", 2.5),  # before the window
        _job(21, "lint", 0.1),
    ]
    result = measure(jobs, ROUTING, UNTIL - timedelta(days=2), UNTIL, 2)
    rl = result.profiles["rl"]
    assert rl.jobs == 2  # the success and the runner_system_failure; not the stuck one, nor the manual one
    assert rl.per_day(result.days) == 1.0
    assert rl.durations == [600.0]  # failed jobs stop early: only successes say how long a job runs
    assert dict(rl.failures) == {"runner_system_failure": 1, "stuck_or_timeout_failure": 1}
    assert result.other.jobs == 1
    assert result.training_pipelines == {1}
    assert result.seen == 5


def test_a_project_younger_than_the_window_is_observed_since_its_creation() -> None:
    since = UNTIL - timedelta(days=14)
    assert observed_days(since, UNTIL, UNTIL - timedelta(days=3, hours=12)) == 3.5
    assert observed_days(since, UNTIL, UNTIL - timedelta(days=300)) == 14
    assert observed_days(since, UNTIL, None) == 14


def test_a_project_is_no_younger_than_its_first_job() -> None:
    """GitLab saying the project was created after jobs of the window ran: the first job's time counts."""
    since = UNTIL - timedelta(days=14)
    assert observed_days(since, UNTIL, UNTIL - timedelta(days=1), UNTIL - timedelta(days=3)) == 3
    assert observed_days(since, UNTIL, UNTIL - timedelta(days=5), UNTIL - timedelta(days=3)) == 5
    assert observed_days(since, UNTIL, None, UNTIL - timedelta(days=3)) == 14


def test_gitlab_timestamps_parse_with_z_or_an_offset() -> None:
    job = Job.from_api(_job(1, "x", 1, created_at="2026-11-29T01:00:00.000+01:00"))
    assert job.created_at == datetime(2026, 11, 29, tzinfo=UTC)


def test_the_command_module_imports_neither_python_gitlab_nor_ruamel() -> None:
    """`python -m infra` registers every command; only `workload --from-gitlab` may pay for these imports."""
    code = (
        "import sys, infra.cli.workload, infra.workload.measure; "
        "print(sorted(m for m in ('gitlab', 'requests', 'ruamel.yaml') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=PROJECT_ROOT)
    assert result.stdout.strip() == "[]"
