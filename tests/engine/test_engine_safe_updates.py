"""An ordinary `pulumi up` on a platform at work, on the real control plane (the design's safe updates): it does not
scale back what the warm scaler set, it stops no running job, it waits for no placeholder (a Pending placeholder is
the warm capacity asking for a node), and a priority that Kubernetes cannot change in place is a replacement in
`preview` and in the offline plan-diff alike, which that one `up` carries out (a new class, named with its value,
created before the old one goes).

The stack: the warm variant (`support.warm_variant`: both GPU pools at two nodes, warm all week) on a test cluster
of its own. Before the change, as a working day leaves it: ci-training's placeholders scaled to one by a PATCH of
their `scale` (what its CronJob sends at a window's step down), and ci-compile's nodes full, a job pod beside each
placeholder (two GPU replicas a node), so that no placeholder can be added beside the old ones. The change: the
placeholders' image (their pod template), and both priorities (the PriorityClasses' `value`, immutable). Last,
the warm windows switched off by another `up`, the same jobs still running.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from support.engine import Result
from support.kube_apply import of_kind, releases
from support.kube_scenario import condition, settled
from support.warm_variant import NODES, Deployed, deploy

from infra.offline.stack_config import StackConfig
from infra.review.diff import diff_plans

SCALED = "ci-training"
"""The pool whose placeholders the scaler has scaled down to one."""
FULL = "ci-compile"
"""The pool whose nodes jobs fill beside its placeholders."""
PAUSE_IMAGE = "registry.k8s.io/pause:3.9"
PLACEHOLDER_PRIORITY = 5
JOB_PRIORITY = 1100
CHANGE = {"pause_image": PAUSE_IMAGE, "placeholder_priority": PLACEHOLDER_PRIORITY, "job_priority": JOB_PRIORITY}
"""`platform.warm_capacity` keys changed by the `up`."""
SETTLE_TIMEOUT = 60.0


@dataclass(frozen=True)
class Update:
    deployed: Deployed
    before: dict[str, Any]
    """The plan of the stack as it was deployed."""
    cold: list[dict[str, Any]]
    """ci-training's placeholders once the first `up` returned, its pool created cold (no node yet)."""
    warmed: list[dict[str, Any]]
    """The same once its nodes came."""
    jobs: list[dict[str, Any]]
    """The job pods running before the `up`, as the API server held them."""
    preview: Result
    up: Result
    again: Result
    """`preview --expect-no-changes` after the `up`."""


def _scale_path(deployment: dict[str, Any]) -> str:
    meta = deployment["metadata"]
    return f"/apis/apps/v1/namespaces/{meta['namespace']}/deployments/{meta['name']}/scale"


def _settled(deployed: Deployed, pool: str, running: bool = False) -> list[dict[str, Any]] | None:
    """The pool's NODES placeholders once each is Running (`running`) or settled: Running, or Pending with
    nowhere to go."""
    found = deployed.placeholder_pool(pool).placeholders()
    done = all(p["status"].get("phase") == "Running" if running else settled(p) for p in found)
    return found if len(found) == NODES and done else None


def _running(deployed: Deployed, pod: dict[str, Any]) -> dict[str, Any] | None:
    meta = pod["metadata"]
    found: dict[str, Any] = deployed.plane.get(f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}")
    return found if found["status"].get("phase") == "Running" else None


@pytest.fixture(scope="module")
def update(tmp_path_factory: pytest.TempPathFactory, dev_stack: StackConfig) -> Iterator[Update]:
    with deploy(tmp_path_factory.mktemp("safe-updates"), dev_stack, cold=(SCALED,)) as deployed:
        plane = deployed.plane
        cold = plane.wait_for(f"{SCALED}'s placeholders settled", functools.partial(_settled, deployed, SCALED))
        deployed.add_nodes(SCALED)  # as the autoscaler scales the pool up for them
        warmed = plane.wait_for(f"{SCALED}'s placeholders running", functools.partial(_settled, deployed, SCALED, True))
        scaled = plane.request("PATCH", _scale_path(deployed.placeholders(SCALED)), {"spec": {"replicas": 1}})
        assert scaled.status_code == 200, scaled.text
        jobs = []
        for pod in deployed.job_pods(FULL, NODES, "working"):
            created = plane.request("POST", f"/api/v1/namespaces/{pod['metadata']['namespace']}/pods", pod)
            assert created.status_code == 201, created.text
            running = functools.partial(_running, deployed, pod)
            jobs.append(plane.wait_for(f"job pod {pod['metadata']['name']} running", running))
        before = deployed.plan
        platform = deployed.stack_platform()
        platform["warm_capacity"] = {**platform.get("warm_capacity", {}), **CHANGE}
        deployed.project.set_platform(platform)
        deployed.replan()
        preview = deployed.project.pulumi("preview", "--diff", "--json", check=False)
        up = deployed.project.pulumi("up", "--yes", "--skip-preview", "--json", check=False)
        again = deployed.project.pulumi("preview", "--diff", "--expect-no-changes", check=False)
        yield Update(deployed, before, cold, warmed, jobs, preview, up, again)


def test_the_first_up_on_a_cold_pool_waits_for_no_node_and_its_placeholders_take_the_nodes_that_come(
    update: Update,
) -> None:
    """A pool at `min_size` 0 in a window: the `up` returns while its placeholders are Pending (a boot is longer
    than the provider's wait), and they run one per node once the nodes come."""
    assert [p["status"]["phase"] for p in update.cold] == ["Pending"] * NODES
    assert all(condition(p, "PodScheduled").get("reason") == "Unschedulable" for p in update.cold)
    assert sorted(p["spec"]["nodeName"] for p in update.warmed) == update.deployed.nodes[SCALED]


def test_the_up_converges_without_waiting_for_a_placeholder_and_leaves_nothing_to_change(update: Update) -> None:
    assert update.up.returncode == 0, update.up.output
    assert update.again.returncode == 0, update.again.output


def test_a_priority_change_is_a_replacement_in_preview_and_plan_diff_alike(update: Update) -> None:
    """Each class is named with its value: the new one is created, then the old one deleted, and the preview's
    dry run creates a new name instead of updating a value the API server may not change."""
    assert update.preview.returncode == 0, update.preview.output
    steps = {step["urn"].rsplit("::", 1)[-1]: step for step in update.preview.json()["steps"]}
    replaced = {name: tuple(sorted(step.get("replaceReasons") or ())) for name, step in steps.items()
                if step["op"] == "replace"}  # fmt: skip
    offline = diff_plans(update.before, update.deployed.plan)
    assert replaced == {r.name: tuple(sorted(r.replace_reasons)) for r in offline.resources if r.op == "replace"}
    kinds = {r.name: r.type for r in offline.resources if r.op == "replace"}
    assert set(kinds.values()) == {"kubernetes:scheduling.k8s.io/v1:PriorityClass"} and len(kinds) == 2, kinds
    path = "/apis/scheduling.k8s.io/v1/priorityclasses/"
    plane = update.deployed.plane
    new = {body["metadata"]["name"]: body["value"] for body in of_kind(update.deployed.plan, "PriorityClass")}
    assert sorted(new.values()) == sorted([PLACEHOLDER_PRIORITY, JOB_PRIORITY])
    assert {name: plane.get(path + name)["value"] for name in new} == new
    for old in of_kind(update.before, "PriorityClass"):
        assert plane.request("GET", path + old["metadata"]["name"]).status_code == 404, old["metadata"]["name"]


def _events(result: Result) -> list[dict[str, Any]]:
    """The engine's events `up --json` printed, one JSON object a line, in their order."""
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def test_a_runner_that_names_the_new_job_class_is_updated_once_that_class_exists(update: Update) -> None:
    """Its job pods name the class: one made while the class is not there would be refused by the API server. As
    the engine ran it: each runner's update starts after the new class is created (the release depends on it, which
    the offline plan records: tests/sim/test_feedback_time.py)."""
    events = _events(update.up)
    first: dict[tuple[str, str, str], int] = {}  # (event, urn, op) -> its first index
    for index, event in enumerate(events):
        for kind in ("resourcePreEvent", "resOutputsEvent"):
            if kind in event:
                metadata = event[kind]["metadata"]
                first.setdefault((kind, metadata["urn"], metadata["op"]), index)
    (created,) = (
        i
        for (kind, urn, op), i in first.items()
        if (kind, op) == ("resOutputsEvent", "create-replacement") and urn.endswith("PriorityClass::warm-gpu-ci-job")
    )
    releases = {
        urn: i
        for (kind, urn, op), i in first.items()
        if kind == "resourcePreEvent" and "helm.sh/v3:Release" in urn and op == "update"
    }
    assert len(releases) == 2, releases  # both GPU pools' runners name the new class
    assert all(created < started for started in releases.values()), (created, releases)


def test_the_up_keeps_the_count_the_scaler_set(update: Update) -> None:
    deployed = update.deployed
    for pool, replicas in ((SCALED, 1), (FULL, NODES)):
        served = deployed.served(deployed.placeholders(pool))
        assert served["spec"]["replicas"] == replicas, pool
        (container,) = served["spec"]["template"]["spec"]["containers"]
        assert container["image"] == PAUSE_IMAGE, pool


def test_no_running_job_is_stopped_and_the_placeholders_roll_into_the_slots_they_held(update: Update) -> None:
    """The jobs keep running, the same pods; ci-compile's placeholders are replaced one by one, each new one in the
    slot the old one left (none asks for a replica beside them: no surge a full pool would leave Pending, nor a node
    the autoscaler would add for it)."""
    deployed = update.deployed
    for job in update.jobs:
        now = _running(deployed, job)
        assert now is not None and now["metadata"]["uid"] == job["metadata"]["uid"], job["metadata"]["name"]

    def rolled() -> list[dict[str, Any]] | None:
        found = deployed.placeholder_pool(FULL).placeholders()
        new = [p for p in found if p["spec"]["containers"][0]["image"] == PAUSE_IMAGE]
        done = len(found) == NODES and len(new) == NODES and all(p["status"].get("phase") == "Running" for p in new)
        return new if done else None

    placed = deployed.plane.wait_for("ci-compile's placeholders rolled", rolled, SETTLE_TIMEOUT)
    assert sorted(p["spec"]["nodeName"] for p in placed) == deployed.nodes[FULL]


# Then the warm windows switched off, the same jobs still running (the module's last step: it changes the stack).


@dataclass(frozen=True)
class SwitchedOff:
    update: Update
    classes: list[str]
    """The PriorityClasses before."""
    up: Result
    again: Result


@pytest.fixture(scope="module")
def switched_off(update: Update) -> SwitchedOff:
    deployed = update.deployed
    classes = [body["metadata"]["name"] for body in of_kind(deployed.plan, "PriorityClass")]
    platform = deployed.stack_platform()
    for pool in platform["pools"].values():
        pool.pop("warm", None)
    deployed.project.set_platform(platform)
    deployed.replan()
    up = deployed.project.pulumi("up", "--yes", "--skip-preview", check=False)
    again = deployed.project.pulumi("preview", "--diff", "--expect-no-changes", check=False)
    return SwitchedOff(update, classes, up, again)


def test_switching_the_warm_windows_off_removes_what_they_made_and_stops_no_job(switched_off: SwitchedOff) -> None:
    """One `up`: the placeholders' namespace (its Deployments, CronJobs, scaler) and both classes go, the runners no
    longer name a class, the running jobs keep running, and nothing is left to change."""
    assert switched_off.up.returncode == 0, switched_off.up.output
    assert switched_off.again.returncode == 0, switched_off.again.output
    deployed = switched_off.update.deployed
    assert of_kind(deployed.plan, "PriorityClass") == [] and of_kind(deployed.plan, "Deployment") == []
    plane = deployed.plane
    assert plane.request("GET", "/api/v1/namespaces/gpu-ci-warm").status_code == 404
    for name in switched_off.classes:
        assert plane.request("GET", f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}").status_code == 404, name
    assert all("priority_class_name" not in release.values["runners"]["config"] for release in releases(deployed.plan))
    for job in switched_off.update.jobs:
        now = _running(deployed, job)
        assert now is not None and now["metadata"]["uid"] == job["metadata"]["uid"], job["metadata"]["name"]
