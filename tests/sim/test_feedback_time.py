"""Feedback time: merge-request jobs measured, simulated and routed apart (held slots), warm capacity deployed
on a schedule, and the target judged on the simulated week."""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

import pytest
import yaml
from support.specs import LEGACY_WORKLOAD

from infra.cloud.names import T
from infra.config.errors import SpecError
from infra.model.platform import Platform, load_platform
from infra.model.routes import PIPELINE_SOURCES, expand
from infra.offline.harness import run_program
from infra.offline.stack_config import StackConfig
from infra.render.ci_templates import ci_templates
from infra.render.runner import runner_config
from infra.sim.arrivals import week_jobs
from infra.sim.engine import simulate
from infra.sim.platform_scenario import PlannedJob, scenario
from infra.sim.scenario import Scenario, SimJob, SimPool, SimRunner
from infra.sim.week import percentile, simulate_week
from infra.sim.what_if import Knobs, scenario_rows

WORKING_HOURS = [{"days": "Mon-Fri", "from": "09:00", "to": "18:00", "nodes": 1}]


def levers(platform: dict[str, Any]) -> dict[str, Any]:
    """The change docs/feedback-time.md recommends for the dev stack's week (what `recommend` prints)."""
    pools = platform["pools"]
    pools["ci-compile"].update(max_size=3)
    pools["ci-training"].update(max_size=3)
    pools["ci-training"]["gpu_sharing"]["replicas"] = 5
    return platform


def every_lever(platform: dict[str, Any]) -> dict[str, Any]:
    """Held slots and warm windows on both GPU pools at once: what the components must deploy together."""
    pools = platform["pools"]
    pools["ci-compile"].update(max_size=2, merge_request_slots=2, warm=copy.deepcopy(WORKING_HOURS))
    pools["ci-training"].update(max_size=4, warm=copy.deepcopy(WORKING_HOURS))
    return platform


def warm_levers(platform: dict[str, Any]) -> dict[str, Any]:
    """The docs' margin against a late node: as many warm nodes as a merge request's pipeline fills."""
    pools = platform["pools"]
    pools["ci-compile"].update(max_size=2, warm=[{**WORKING_HOURS[0], "nodes": 2}])
    pools["ci-training"].update(max_size=3, warm=[{**WORKING_HOURS[0], "nodes": 3}])
    pools["ci-training"]["gpu_sharing"]["replicas"] = 5
    return platform


# --- the week and its classes ------------------------------------------------------------------------------


def test_the_dev_week_models_the_design(dev_platform: dict[str, Any]) -> None:
    platform = load_platform(dev_platform)
    jobs = week_jobs(platform)
    hyperopt = [job for job in jobs if job.kind == "hyperopt" and job.profile == "rl"]
    assert {job.job_class for job in hyperopt} == {"batch"} and len(hyperopt) == 2 * 5  # two trials a working day
    assert all(Fraction(140) < job.minutes < Fraction(160) for job in hyperopt)  # 8 epochs of ~1100 s
    merge_requests = [job for job in jobs if job.job_class == "merge_request"]
    assert {int(job.created_minute // (24 * 60)) for job in merge_requests} == set(range(5))  # working days
    assert all(9 * 60 <= job.created_minute % (24 * 60) <= 18 * 60 for job in merge_requests)
    # One merge request's pipeline trains every family at once: the two profiles' draws are the same.
    first = merge_requests[0].created_minute
    assert {job.profile for job in merge_requests if job.created_minute == first} == {"rl", "supervised"}
    assert week_jobs(platform) == jobs  # seeded from the spec's names: the same week every time


def test_profile_level_keys_stay_one_merge_request_kind(dev_platform: dict[str, Any]) -> None:
    dev_platform["workload"] = copy.deepcopy(LEGACY_WORKLOAD)
    jobs = week_jobs(load_platform(dev_platform))
    assert {job.job_class for job in jobs} == {"merge_request"} and {job.kind for job in jobs} == {"train-validate"}


def test_the_week_reports_each_class_and_the_target(dev_platform: dict[str, Any]) -> None:
    cost = simulate_week(load_platform(dev_platform))
    assert cost is not None
    merge_request, batch = cost.waits("merge_request"), cost.waits("batch")
    assert (merge_request.jobs, batch.jobs, cost.failed_jobs) == (150, 50, 0)
    assert merge_request.p95 is not None and merge_request.p95 > 15  # two RL trials take both L4 slots
    assert merge_request.slot_p95 is not None and merge_request.node_p95 == 15  # the 15-min cold start
    assert cost.target_met is False
    [warning] = cost.warnings()
    assert str(warning).startswith("platform.slo.merge_request_wait_minutes=15: missed on the simulated week")
    document = cost.as_json()
    assert document["merge_request_wait_p95_minutes"] == round(float(merge_request.p95), 2)
    assert document["slo"] == {"merge_request_wait_minutes": 15, "met": False}
    assert document["eur_per_week"] == pytest.approx(float(cost.eur_per_day) * 7, abs=1e-4)


def test_plan_warns_of_the_missed_target_at_its_key(dev_plan_json: tuple[int, dict[str, Any]]) -> None:
    """A miss over the weeks is a warning, not a refusal: `plan` exits 0 and lists it with the spec's warnings."""
    code, plan = dev_plan_json
    missed = [w for w in plan["warnings"] if w.startswith("platform.slo.merge_request_wait_minutes=15: met in 0 of 20")]
    assert code == 0 and len(missed) == 1 and "below slo.confidence=0.9 (18 weeks)" in missed[0]
    weeks = plan["weeks"]
    assert (weeks["weeks"], weeks["met_weeks"], weeks["required_weeks"], weeks["met"]) == (20, 0, 18, False)
    assert weeks["classes"]["merge_request"]["jobs"] == 20 * 150  # every week draws the same kinds anew
    assert "MISSED: in 0 of 20 weeks" in plan["report"]


def test_the_levers_meet_the_target_and_cost_what_the_docs_say(dev_platform: dict[str, Any]) -> None:
    """The former recommendation meets the target on the first week with nodes on time, and costs what the
    autoscaler really boots: 139.42, not the 116.96 of a template node that held the 5 replicas (a pipeline's 8
    Pending L40S pods ask for 3 nodes, one per GPU, where 2 would do)."""
    before = simulate_week(load_platform(copy.deepcopy(dev_platform)))
    after = simulate_week(load_platform(levers(dev_platform)))
    assert before is not None and after is not None
    assert after.merge_request_p95 is not None and after.merge_request_p95 <= 15 and after.target_met
    assert after.failed_jobs == 0
    assert (round(float(before.eur_per_week), 2), round(float(after.eur_per_week), 2)) == (101.01, 139.42)


def test_warm_capacity_is_the_margin_against_a_late_node(dev_platform: dict[str, Any]) -> None:
    """The recommended change meets the target at the cold start exactly; warm nodes meet it with nodes late."""
    late = Knobs(cold_start=Fraction(20), orders=1)
    rows = []
    for spec in (levers(copy.deepcopy(dev_platform)), warm_levers(copy.deepcopy(dev_platform))):
        platform = load_platform(spec)
        (row,) = scenario_rows(platform, week_jobs(platform), late, single_runner=False)
        rows.append(row)
    assert [row.failed for row in rows] == [0, 0]
    assert rows[0].merge_request_p95 == 20  # missed: the jobs over the median wait for the late node
    assert rows[1].merge_request_p95 is not None and rows[1].merge_request_p95 < 10  # met, even the stricter target
    warm = simulate_week(load_platform(warm_levers(dev_platform)))
    assert warm is not None and round(float(warm.eur_per_week), 2) == 322.64  # preempted placeholders get nodes


def test_no_job_fails_in_the_week_with_jobs_10_percent_slower_in_20_orders_of_each_burst(
    dev_platform: dict[str, Any],
) -> None:
    for spec in (copy.deepcopy(dev_platform), levers(copy.deepcopy(dev_platform)), warm_levers(dev_platform)):
        platform = load_platform(spec)
        (row,) = scenario_rows(
            platform, week_jobs(platform), Knobs(slower=Fraction(11, 10), orders=20), single_runner=False
        )
        assert row.failed == 0


def test_percentiles_are_nearest_rank() -> None:
    values = [Fraction(n) for n in range(1, 21)]
    assert (percentile(values, 50), percentile(values, 95), percentile(values, 100)) == (10, 19, 20)
    assert percentile([], 95) is None


# --- held slots ---------------------------------------------------------------------------------------------


def test_held_slots_are_a_second_runner_routed_by_the_pipeline_source(dev_platform: dict[str, Any]) -> None:
    dev_platform["pools"]["ci-compile"].update(max_size=2, merge_request_slots=1)
    platform = load_platform(dev_platform)
    shared, held = platform.runners["ci-compile"], platform.runners["ci-compile-mr"]
    assert (shared.concurrent, held.concurrent) == (3, 1)  # they add up to the pool's 4 slots
    assert held.tags == ("kapsule", "ci-compile-merge_request_event") and held.merge_requests_only
    template = platform.profiles["rl"].tags
    assert template == ("kapsule", "ci-compile-${CI_PIPELINE_SOURCE}")
    assert ci_templates(platform)[".train-rl-base"]["tags"] == list(template)
    for source in PIPELINE_SOURCES:
        takers = {runner.name for runner in platform.runners_taking(expand(template, source))}
        assert takers == ({"ci-compile", "ci-compile-mr"} if source == "merge_request_event" else {"ci-compile"})
    # A job that extends no template (the default tags) never reaches the held slots.
    assert [r.name for r in platform.runners_taking(dev_platform["runner"]["tags"])] == ["ci-compile"]
    # Both runners send their pods to the same pool, with the same limits.
    assert runner_config(platform, held)["runners"][0]["kubernetes"]["node_selector"] == shared.node_selector


def test_held_slots_let_a_merge_request_pass_the_batch_jobs() -> None:
    """Two trials take the shared slot and the queue; the merge-request job takes the held slot at once."""
    pool = SimPool("p", 2, 1, 1, 1, 0, Fraction(1), 5, 5)

    def runner(name: str, tags: set[str], concurrent: int) -> SimRunner:
        return SimRunner(name, frozenset(tags), frozenset({"p"}), concurrent, 60, 600, "recreate")

    trials = [SimJob(i, f"hyperopt-{i}", frozenset({"p-schedule"}), "p", 147) for i in (1, 2)]
    merge_request = SimJob(3, "train-validate", frozenset({"p-merge_request_event"}), "p", 30, created_minute=1)
    shared = runner("p", {"p-schedule", "p-merge_request_event"}, 2)
    split = (runner("p-mr", {"p-merge_request_event"}, 1), runner("p", {"p-schedule", "p-merge_request_event"}, 1))
    alone = simulate(Scenario((pool,), (shared,), (*trials, merge_request))).job(3)
    held = simulate(Scenario((pool,), split, (*trials, merge_request))).job(3)
    assert alone.started is not None and alone.started - alone.created == 146  # behind a trial
    assert held.started is not None and held.started - held.created == 0


@pytest.mark.parametrize(
    ("edit", "line"),
    [
        (
            lambda p: p["pools"]["ci-compile"].update(merge_request_slots=2),
            "platform.pools.ci-compile.merge_request_slots=2: holds every one of the pool's 2 slots: batch jobs would "
            "find none (hold fewer, or raise max_size or the GPU sharing replicas)",
        ),
        (
            lambda p: p["pools"]["ci-compile"].update(warm=[*WORKING_HOURS, {"days": "Fri", "from": "17:00"}]),
            "platform.pools.ci-compile.warm.1='Fri 17:00-24:00': overlaps warm window 0 of the pool: give each hour "
            "once",
        ),
        (
            lambda p: p["pools"]["ci-compile"].update(warm=[{"days": ""}]),
            "platform.pools.ci-compile.warm.0.days='': '' is not a day or a range of days like Mon-Fri (Mon ... Sun)",
        ),
        (
            lambda p: p["pools"]["ci-compile"].update(warm=[{"from": "19:00", "to": "08:00"}]),
            "platform.pools.ci-compile.warm.0={from: '19:00', to: '08:00'}: to=08:00 is not after from=19:00 (a window "
            "ends the day it starts)",
        ),
        (
            lambda p: p["workload"].update(time_zone="Mars/Olympus"),
            "platform.workload.time_zone='Mars/Olympus': not an IANA time zone like Europe/Paris or UTC",
        ),
        (
            lambda p: p["workload"]["profiles"]["rl"]["kinds"]["hyperopt"].pop("class"),
            "platform.workload.profiles.rl.kinds.hyperopt.class=<missing>: required key is missing",
        ),
        (
            lambda p: (
                p["pools"]["ci-compile"].update(warm=WORKING_HOURS)
                or p["cluster"]["autoscaler"].update(expendable_pods_priority_cutoff=10)
            ),
            "platform.warm_capacity.placeholder_priority=0: is below the autoscaler's "
            "expendable_pods_priority_cutoff=10: the autoscaler would ignore the placeholders (no warm node); raise it "
            "to the cutoff or above",
        ),
        (
            lambda p: (
                p["pools"]["ci-compile"].update(warm=WORKING_HOURS) or p.update(warm_capacity={"job_priority": 0})
            ),
            "platform.warm_capacity.job_priority=0: is not above placeholder_priority=0: a job could not preempt a "
            "placeholder, and would wait Pending beside it",
        ),
        (
            lambda p: p["pools"]["system"].update(warm=WORKING_HOURS),
            "platform.pools.system.warm=1: warm capacity is for GPU pools: this pool's nodes run no CI job",
        ),
    ],
    ids=[
        "held-every-slot",
        "warm-overlaps",
        "warm-no-day",
        "warm-backwards",
        "unknown-time-zone",
        "kind-without-class",
        "placeholder-below-cutoff",
        "job-not-above-placeholder",
        "warm-cpu-pool",
    ],
)
def test_bad_levers_are_one_line_at_their_key(dev_platform: dict[str, Any], edit: Any, line: str) -> None:
    edit(dev_platform)
    with pytest.raises(SpecError) as caught:
        load_platform(dev_platform)
    assert str(caught.value) == line


# --- warm capacity ------------------------------------------------------------------------------------------


def test_warm_windows_are_cronjobs_a_cold_start_early_and_held_nodes_in_the_simulation(
    dev_platform: dict[str, Any],
) -> None:
    dev_platform["pools"]["ci-training"]["warm"] = WORKING_HOURS
    platform = load_platform(dev_platform)
    (warm,) = platform.warm
    assert [(s.schedule, s.replicas) for s in warm.scales] == [("45 8 * * 1,2,3,4,5", 1), ("0 18 * * 1,2,3,4,5", 0)]
    assert warm.time_zone == "Europe/Paris" and warm.spans[0] == (8 * 60 + 45, 18 * 60, 1)
    job = PlannedJob("train-validate-tft", "supervised", Fraction(40), created_minute=Fraction(9 * 60))
    result = simulate(scenario(platform, [job]))
    assert result.jobs[0].started == 9 * 60  # no cold start: the node is up since 08:45
    pool = result.pool("ci-training")  # one node a working day, from 08:45 to 18:00 and the 5 min to scale down
    assert pool.nodes_created == 5 and pool.scaled_node_minutes == 5 * ((18 * 60 - (8 * 60 + 45)) + 5)


def _warm_run(dev_stack: StackConfig, platform: dict[str, Any]) -> Any:
    return run_program(dev_stack.with_values({"platform": platform}))


def test_the_warm_capacity_component_keeps_to_its_namespace_and_its_verbs(
    dev_stack: StackConfig, dev_platform: dict[str, Any]
) -> None:
    run = _warm_run(dev_stack, every_lever(dev_platform))
    namespace = run.one(T.NAMESPACE, "warm-namespace").inputs["metadata"]
    assert namespace["name"] == "gpu-ci-warm"
    assert namespace["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    classes = {r.inputs["metadata"]["name"]: r.inputs for r in run.by_type(T.PRIORITY_CLASS)}
    # Each named with its value: a new value is a new class, made before the old one goes (no delete first).
    assert classes["gpu-ci-placeholder-0"]["value"] == 0
    assert classes["gpu-ci-placeholder-0"]["preemptionPolicy"] == "Never"
    assert classes["gpu-ci-job-1000"]["value"] == 1000
    assert all(not r.options.get("delete_before_replace") for r in run.by_type(T.PRIORITY_CLASS))
    deployment = run.one(T.DEPLOYMENT, "warm-placeholders-ci-training")
    assert deployment.options["ignore_changes"] == ["spec.replicas"]
    assert deployment.inputs["spec"]["replicas"] in (0, 1)  # the window open at the run's clock (tests/model)
    pod = deployment.inputs["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "gpu-ci-placeholder-0"
    assert pod["nodeSelector"] == {"k8s.scaleway.com/pool-name": "ci-training"}
    assert pod["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "1"
    assert pod["automountServiceAccountToken"] is False
    # It gets a GPU: a writable root, or toolkit 1.20.0's CDI hook fails its creation; `restricted` otherwise.
    placeholder = pod["containers"][0]["securityContext"]
    assert placeholder["readOnlyRootFilesystem"] is False
    assert (placeholder["runAsNonRoot"], placeholder["allowPrivilegeEscalation"]) == (True, False)
    assert (
        placeholder["capabilities"] == {"drop": ["ALL"]} and placeholder["seccompProfile"]["type"] == "RuntimeDefault"
    )
    scaler = next(iter(run.by_type(T.CRON_JOB))).inputs["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert scaler["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True  # no GPU: read-only
    (role,) = run.by_type(T.ROLE)
    assert role.inputs["rules"] == [
        {
            "apiGroups": ["apps"],
            "resources": ["deployments/scale"],
            "resourceNames": ["placeholder-ci-compile", "placeholder-ci-training"],
            "verbs": ["get", "patch"],
        }
    ]
    crons = {r.name: r.inputs["spec"] for r in run.by_type(T.CRON_JOB)}
    assert {spec["schedule"] for spec in crons.values()} == {"45 8 * * 1,2,3,4,5", "0 18 * * 1,2,3,4,5"}
    assert {spec["timeZone"] for spec in crons.values()} == {"Europe/Paris"}
    # The job pods of warm pools outrank the placeholders, and their runner is deployed once their class exists
    # (a job pod naming a class the API server does not have is refused).
    job_class = next(r.urn for r in run.by_type(T.PRIORITY_CLASS) if r.inputs["metadata"]["name"] == "gpu-ci-job-1000")
    for release in run.by_type(T.HELM_RELEASE):
        config = yaml.safe_load(yaml.safe_dump(release.inputs["values"]))["runners"]["config"]
        assert 'priority_class_name = "gpu-ci-job-1000"' in config
        assert job_class in release.options["dependencies"], release.name


def test_without_warm_windows_nothing_of_it_is_created(dev_run: Any) -> None:
    assert not [r for r in dev_run.resources if r.name.startswith("warm")]
    for release in dev_run.by_type(T.HELM_RELEASE):
        assert "priority_class_name" not in release.inputs["values"]["runners"]["config"]


def test_the_policy_pack_accepts_the_levers(dev_stack: StackConfig, dev_platform: dict[str, Any]) -> None:
    from infra.offline.policy_check import policy_report

    run = _warm_run(dev_stack, every_lever(dev_platform))
    assert [str(v) for v in policy_report(run)] == []


def test_a_platform_with_the_levers_is_still_derived_once(dev_platform: dict[str, Any]) -> None:
    platform: Platform = load_platform(every_lever(dev_platform))
    assert sorted(platform.runners) == ["ci-compile", "ci-compile-mr", "ci-training"]
    assert [w.pool for w in platform.warm] == ["ci-compile", "ci-training"]
