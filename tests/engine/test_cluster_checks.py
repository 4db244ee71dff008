"""What the real cluster says of the platform's Kubernetes objects (issue 38, points 5 and 6): Pod Security
admits every pod the platform creates and refuses a privileged one; RBAC, asked by SubjectAccessReview, gives
each service account the program creates what it needs and nothing else, and the warm scaler's own request
works with its token; the real scheduler places placeholders and job pods on kwok nodes of their pools,
preempting as the design says; and the simulation's placement model agrees with it on one small scenario.

The stack: the dev stack with both GPU pools at two nodes and warm all week (two placeholders each), so that
placeholders, their CronJobs and the jobs' priority class exist. It is deployed by the real engine and Pulumi's
Kubernetes provider (`pulumi up`, as the shared dev deployment is) to a test cluster of its own, where the
Scaleway double does Kapsule's part: the pools' kwok nodes, the CNI's CRDs, the GPU operator's objects. Job pods
are built from the rendered runner config.toml as the Kubernetes executor builds them (`support.job_pod`); the
offline plan of the same stack file names the objects the checks read, and each is the API server's.
"""

from __future__ import annotations

import copy
import functools
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.cluster import ControlPlane
from support.day import SUITE_DAY_ENV
from support.job_pod import OverwriteRefusedError, job_pod
from support.kube_apply import of_kind, releases
from support.kube_scenario import Step, condition, pods, simulated
from support.warm_variant import GPU_POOLS, NODES, Deployed, deploy

from infra.config.pools import POOL_NAME_LABEL
from infra.model.pools import Pool
from infra.offline.stack_config import StackConfig
from infra.sim.platform_scenario import sim_pools

SA_GROUPS = ["system:serviceaccounts", "system:authenticated"]


def gpu_replicas(pool: Pool) -> int:
    """`nvidia.com/gpu` a node of the pool advertises: its GPUs times the sharing replicas."""
    return pool.node.gpus * max(1, pool.sharing.replicas_per_gpu)


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory, dev_stack: StackConfig) -> Iterator[Deployed]:
    """The warm variant deployed by `pulumi up` to a test cluster of its own (the shared one holds the dev stack)."""
    with deploy(tmp_path_factory.mktemp("cluster-checks"), dev_stack) as found:
        yield found


def test_the_warm_variant_converges_in_one_up_and_every_planned_object_is_the_api_servers(deployed: Deployed) -> None:
    """Placeholders, their CronJobs, the scaler's RBAC and both PriorityClasses, through Pulumi's provider: one
    `up`, no perpetual diff after it, and each object the offline plan describes served by the API server."""
    again = deployed.project.pulumi("preview", "--diff", "--expect-no-changes", check=False)
    assert again.returncode == 0, again.output
    kinds = {body["kind"] for body in deployed.bodies}
    assert {"Deployment", "CronJob", "PriorityClass", "Role", "RoleBinding", "ServiceAccount"} <= kinds
    missing = []
    for body in deployed.bodies:
        answer = deployed.plane.request("GET", deployed.applier.object_path(body))
        if answer.status_code != 200:
            missing.append(f"{body['kind']} {body['metadata'].get('namespace', '')}/{body['metadata']['name']}")
    assert missing == []


def pod_templates(deployed: Deployed) -> list[dict[str, Any]]:
    """A pod of each pod template the platform's objects hold (Deployments, Jobs, CronJobs) as the API server
    holds them, named after it."""
    found = []
    for planned in deployed.bodies:
        if planned["kind"] not in {"Deployment", "Job", "CronJob"}:
            continue
        body = deployed.served(planned)
        spec = body.get("spec", {})
        template = spec.get("template") or spec.get("jobTemplate", {}).get("spec", {}).get("template")
        if template:
            meta = {**template.get("metadata", {}), "name": f"admitted-{body['metadata']['name']}"}
            meta["namespace"] = body["metadata"]["namespace"]
            found.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"]})
    return found


def test_pod_security_admits_every_pod_the_platform_creates(deployed: Deployed) -> None:
    templates = pod_templates(deployed)
    assert {p["metadata"]["namespace"] for p in templates} == {"gitlab-runner", "gpu-ci-warm"}
    assert len(templates) == 2 + 2 + 1  # placeholders and scalers per GPU pool, the operator wait
    jobs = [pod for pool in GPU_POOLS for pod in deployed.job_pods(pool, 1, f"admitted-job-{pool}")]
    for pod in [*templates, *jobs]:
        answer = deployed.applier.create(pod, dry_run=True)
        assert answer.status_code == 201, f"{pod['metadata']['name']}: {answer.text}"
    # The CronJobs' Job pods, made by the Job controller (a refusal would leave the Job without a pod).
    plane = deployed.plane
    for cronjob in map(deployed.served, of_kind(deployed.plan, "CronJob")):
        namespace, name = cronjob["metadata"]["namespace"], f"manual-{cronjob['metadata']['name']}"
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": namespace}}
        job["spec"] = cronjob["spec"]["jobTemplate"]["spec"]
        assert deployed.applier.create(job).status_code == 201
        plane.wait_for(f"a pod of Job {name}", functools.partial(job_pods, plane, namespace, name))


def job_pods(plane: ControlPlane, namespace: str, job: str) -> list[dict[str, Any]] | None:
    """The Job's pods, if it has any."""
    return pods(plane, namespace, f"batch.kubernetes.io/job-name%3D{job}") or None


@pytest.mark.parametrize("namespace", ["gitlab-runner", "gpu-ci-warm"])
def test_pod_security_refuses_a_privileged_pod_in_the_platforms_namespaces(deployed: Deployed, namespace: str) -> None:
    pod = copy.deepcopy(next(p for p in pod_templates(deployed) if p["metadata"]["namespace"] == namespace))
    pod["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    refused = deployed.applier.create(pod, dry_run=True)
    assert refused.status_code == 403, refused.text
    profile = "baseline" if namespace == "gitlab-runner" else "restricted"
    assert f'violates PodSecurity "{profile}:latest": privileged' in refused.json()["message"]


def test_a_job_pod_the_runner_config_does_not_allow_is_never_built(deployed: Deployed) -> None:
    """The executor refuses a job's overwrite beyond the config's bounds: no pod lands on another pool."""
    config = deployed.release("ci-compile").runner_config()
    with pytest.raises(OverwriteRefusedError, match="KUBERNETES_NODE_SELECTOR_POOL"):
        job_pod(config, "rl", "x", {"KUBERNETES_NODE_SELECTOR_POOL": f"{POOL_NAME_LABEL}=ci-training"})
    with pytest.raises(OverwriteRefusedError, match="KUBERNETES_CPU_REQUEST"):
        job_pod(config, "rl", "x", {"KUBERNETES_CPU_REQUEST": "64"})


# RBAC


def allowed(
    plane: ControlPlane, account: str, verb: str, resource: str, namespace: str, *, group: str = "", name: str = ""
) -> bool:
    """The API server's SubjectAccessReview answer for the ServiceAccount `account` (`namespace/name`) doing
    `verb` on `resource` (`kind` or `kind/subresource`) of `group` in `namespace` ("": cluster-wide)."""
    home, account_name = account.split("/")
    kind, _, subresource = resource.partition("/")
    attributes = {"verb": verb, "resource": kind, "subresource": subresource, "group": group}
    attributes |= {"namespace": namespace, "name": name}
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": f"system:serviceaccount:{home}:{account_name}",
            "groups": [*SA_GROUPS, f"system:serviceaccounts:{home}"],
            "resourceAttributes": {key: value for key, value in attributes.items() if value},
        },
    }
    answer = plane.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
    assert answer.status_code == 201, answer.text
    return bool(answer.json()["status"].get("allowed"))


OTHER_NAMESPACES = ("default", "kube-system", "gpu-ci-warm", "")
"""Where a namespaced account may do nothing ("": cluster-wide)."""
EXECUTOR_NEEDS = {
    ("pods", "create"), ("pods", "delete"), ("pods", "get"), ("pods", "list"), ("pods", "watch"),
    ("pods/exec", "create"), ("pods/attach", "create"), ("pods/log", "get"),
    ("secrets", "create"), ("secrets", "delete"), ("secrets", "get"), ("secrets", "update"),
    ("serviceaccounts", "get"), ("services", "create"), ("services", "get"),
    ("events", "list"), ("events", "watch"),
}  # fmt: skip
"""What gitlab-runner's Kubernetes executor does in the job namespace with the rendered config ("Configure runner
API permissions": pods and their exec/attach for the build, pods/log and events for FF_PRINT_POD_EVENTS, list and
watch for its pod informer, a Secret per job for the registry credentials, services for services:)."""


def test_each_runner_may_do_what_the_kubernetes_executor_needs_in_its_namespace_and_nothing_elsewhere(
    deployed: Deployed,
) -> None:
    plane = deployed.plane
    for release in releases(deployed.plan):
        account = f"{release.namespace}/{release.service_account}"
        granted = {
            (resource, verb, group)
            for rule in release.rules
            for group in rule["apiGroups"]
            for resource in rule["resources"]
            for verb in rule["verbs"]
        }
        assert {(resource, verb) for resource, verb, group in granted if not group} >= EXECUTOR_NEEDS
        for resource, verb, group in granted:
            for namespace in (release.namespace, *OTHER_NAMESPACES):
                expected = namespace == release.namespace
                assert allowed(plane, account, verb, resource, namespace, group=group) == expected, (
                    account, verb, resource, namespace or "cluster-wide"
                )  # fmt: skip
        for resource, verb, group in (
            ("secrets", "list", ""),
            ("configmaps", "update", ""),
            ("pods/eviction", "create", ""),
            ("nodes", "get", ""),
            ("deployments", "delete", "apps"),
            ("roles", "create", "rbac.authorization.k8s.io"),
            ("rolebindings", "create", "rbac.authorization.k8s.io"),
        ):
            refused = not allowed(plane, account, verb, resource, release.namespace, group=group)
            assert refused, (account, verb, resource)


def test_the_warm_scaler_may_patch_the_scale_of_its_own_deployments_only(deployed: Deployed) -> None:
    plane = deployed.plane
    (role,) = (r for r in of_kind(deployed.plan, "Role") if r["metadata"]["name"] == "warm-scaler")
    namespace = role["metadata"]["namespace"]
    account = f"{namespace}/warm-scaler"
    own = sorted(d["metadata"]["name"] for d in of_kind(deployed.plan, "Deployment"))
    assert len(own) == len(GPU_POOLS)
    for name in own:
        for verb in ("get", "patch"):
            assert allowed(plane, account, verb, "deployments/scale", namespace, group="apps", name=name)
        for verb, resource in (("update", "deployments/scale"), ("patch", "deployments"), ("delete", "deployments")):
            refused = not allowed(plane, account, verb, resource, namespace, group="apps", name=name)
            assert refused, (verb, resource, name)
        for elsewhere in (*OTHER_NAMESPACES[:2], "gitlab-runner", ""):
            refused = not allowed(plane, account, "patch", "deployments/scale", elsewhere, group="apps", name=name)
            assert refused, elsewhere
    assert not allowed(plane, account, "patch", "deployments/scale", namespace, group="apps", name="another")
    assert not allowed(plane, account, "patch", "deployments/scale", namespace, group="apps")  # any name
    assert not allowed(plane, account, "create", "pods", namespace)


def test_the_operator_wait_may_read_its_cluster_policy_only(deployed: Deployed) -> None:
    plane = deployed.plane
    (job,) = of_kind(deployed.plan, "Job")
    account = f"{job['metadata']['namespace']}/{job['spec']['template']['spec']['serviceAccountName']}"
    policy = deployed.platform.spec.gpu_operator.cluster_policy
    assert allowed(plane, account, "get", "clusterpolicies", "", group="nvidia.com", name=policy)
    assert not allowed(plane, account, "get", "clusterpolicies", "", group="nvidia.com", name="another")
    assert not allowed(plane, account, "list", "clusterpolicies", "", group="nvidia.com")
    assert not allowed(plane, account, "patch", "clusterpolicies", "", group="nvidia.com", name=policy)
    assert not allowed(plane, account, "get", "secrets", job["metadata"]["namespace"])


def scaler_command(
    deployed: Deployed, token: str, tmp: Path, cronjob: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    """The CronJob's container command, run here with `token` where its pod would find its ServiceAccount's
    (`$SA`: `token` and `ca.crt`), and `kubernetes.default.svc` reaching the test API server (a `connect-to`
    in curl's own config file, `$HOME/.curlrc`: the command's text is not touched)."""
    (container,) = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    account = tmp / "serviceaccount"
    account.mkdir(exist_ok=True)
    (account / "token").write_text(token)
    (account / "ca.crt").write_text(deployed.plane.ca_path.read_text())
    port = deployed.plane.server.rsplit(":", 1)[1]
    (tmp / ".curlrc").write_text(f'connect-to = "kubernetes.default.svc:443:127.0.0.1:{port}"\n')
    env = {item["name"]: item["value"] for item in container["env"]}
    env |= {"SA": str(account), "PATH": "/usr/bin:/bin", "HOME": str(tmp), **SUITE_DAY_ENV}
    return subprocess.run(container["command"], env=env, capture_output=True, text=True, timeout=60, check=False)


def token_of(plane: ControlPlane, namespace: str, account: str) -> str:
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 600}}
    answer = plane.request("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token", request)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["status"]["token"])


def test_the_scalers_own_request_with_its_token_scales_its_deployment(deployed: Deployed, tmp_path: Path) -> None:
    plane = deployed.plane
    cronjob = of_kind(deployed.plan, "CronJob")[0]
    (container,) = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    env = {item["name"]: item["value"] for item in container["env"]}
    namespace, scale_path = env["NAMESPACE"], f"/apis/apps/v1/namespaces/{env['NAMESPACE']}/deployments"
    scale_path += f"/{env['DEPLOYMENT']}/scale"
    account = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["serviceAccountName"]
    wanted = int(env["REPLICAS"])
    assert plane.request("PATCH", scale_path, {"spec": {"replicas": wanted + 1}}).status_code == 200
    try:
        refused = scaler_command(deployed, token_of(plane, namespace, "default"), tmp_path, cronjob)
        assert refused.returncode == 22, refused.stderr  # curl --fail: the API server's 403
        assert plane.get(scale_path)["spec"]["replicas"] == wanted + 1
        done = scaler_command(deployed, token_of(plane, namespace, account), tmp_path, cronjob)
        assert done.returncode == 0, done.stderr
        assert plane.get(scale_path)["spec"]["replicas"] == wanted
    finally:
        plane.request("PATCH", scale_path, {"spec": {"replicas": wanted}})


# The scheduler, and the simulation's model of it


@dataclass(frozen=True)
class PoolRun:
    """The scenario of `support.kube_scenario` on one pool: each side's steps, and every job pod as it settled."""

    pool: str
    real: list[Step]
    simulated: list[Step]
    jobs: list[dict[str, Any]]
    nodes: dict[str, str]
    """Every node's pool, by name."""


@pytest.fixture(scope="module")
def scenario(deployed: Deployed) -> dict[str, PoolRun]:
    """Per GPU pool (the RL pool first, while the L40S pool has free replicas): its placeholders bound, then one
    job pod more than its nodes hold, through the real scheduler and through the model."""
    pools = {pool.name: pool for pool in sim_pools(deployed.platform)}
    by_node = {node: pool for pool, names in deployed.nodes.items() for node in names}
    runs = {}
    for name in GPU_POOLS:
        spec = pools[name]
        jobs = spec.slots_per_node * spec.max_nodes + 1
        real = deployed.placeholder_pool(name)
        settled_jobs: list[dict[str, Any]] = []
        steps = real.run(deployed.job_pods(name, jobs, f"job-{name}"), NODES, settled_jobs.append)
        runs[name] = PoolRun(name, steps, simulated(spec, NODES, jobs), settled_jobs, by_node)
    return runs


def test_the_nodes_are_the_pools_as_the_catalog_and_the_pool_spec_give_them(deployed: Deployed) -> None:
    for name in GPU_POOLS:
        pool = deployed.platform.pools[name]
        assert len(deployed.nodes[name]) == pool.max_size == NODES
        for node_name in deployed.nodes[name]:
            node = deployed.plane.get(f"/api/v1/nodes/{node_name}")
            assert node["metadata"]["labels"][POOL_NAME_LABEL] == name
            assert node["status"]["allocatable"]["nvidia.com/gpu"] == str(gpu_replicas(pool))
            assert {(t["key"], t["effect"]) for t in node["spec"]["taints"]} == {("nvidia.com/gpu", "NoSchedule")}


def test_each_pools_placeholders_run_one_per_node_on_that_pool(deployed: Deployed) -> None:
    for deployment in of_kind(deployed.plan, "Deployment"):
        pool = deployment["spec"]["template"]["spec"]["nodeSelector"][POOL_NAME_LABEL]
        placed = deployed.placeholder_pool(pool).wait_placeholders(deployment["spec"]["replicas"], bound=True)
        assert sorted(p["spec"]["nodeName"] for p in placed) == deployed.nodes[pool], pool


def test_a_job_pod_of_each_pool_runs_only_on_its_pool(scenario: dict[str, PoolRun]) -> None:
    for run in scenario.values():
        running = [p for p in run.jobs if p["status"]["phase"] == "Running"]
        assert len(running) == len(run.jobs) - 1  # the last one finds no replica free
        assert {run.nodes[p["spec"]["nodeName"]] for p in running} == {run.pool}
        assert all(p["spec"]["priorityClassName"] == "gpu-ci-job-1000" for p in run.jobs)


def test_with_its_replicas_full_a_job_preempts_exactly_one_placeholder_and_starts(scenario: dict[str, PoolRun]) -> None:
    for run in scenario.values():
        preempting = [step for step in run.real if step.preempted]
        assert len(preempting) == NODES, run.pool  # one per placeholder, and no more
        assert all(step.preempted == 1 and step.node is not None for step in preempting), run.pool
        # Before the first preemption every job found a free replica beside the placeholders.
        first = run.real.index(preempting[0])
        assert all(step.nodes == tuple((n, True) for n in _spread(i + 1)) for i, step in enumerate(run.real[:first]))


def _spread(jobs: int) -> list[int]:
    """`jobs` spread over NODES nodes, as LeastAllocated spreads pods of one size, sorted."""
    return sorted(jobs // NODES + (1 if i < jobs % NODES else 0) for i in range(NODES))


def test_a_placeholder_never_preempts_a_job(deployed: Deployed, scenario: dict[str, PoolRun]) -> None:
    for run in scenario.values():
        placeholders = deployed.placeholder_pool(run.pool).placeholders()
        assert len(placeholders) == NODES
        # The recreated placeholders stay Pending: they may not preempt (preemptionPolicy Never, lower priority).
        assert all(not p["spec"].get("nodeName") for p in placeholders), run.pool
        assert all(condition(p, "PodScheduled").get("reason") == "Unschedulable" for p in placeholders)
        assert all(not p["status"].get("nominatedNodeName") for p in placeholders)
        jobs = [deployed.plane.get(f"/api/v1/namespaces/{p['metadata']['namespace']}/pods/{p['metadata']['name']}")
                for p in run.jobs]  # fmt: skip
        assert sum(1 for p in jobs if p["status"]["phase"] == "Running") == len(jobs) - 1, run.pool


def test_an_rl_job_never_lands_on_an_l40s_node(deployed: Deployed, scenario: dict[str, PoolRun]) -> None:
    (rl,) = (p for p in deployed.platform.spec.profiles.values() if p.families and "ppo" in p.families)
    run = scenario[rl.pool]
    l40s = {n for pool, names in deployed.nodes.items() for n in names
            if deployed.platform.pools[pool].node_type.startswith("L40S")}  # fmt: skip
    assert l40s, "the scenario has L40S nodes"
    assert not {p["spec"].get("nodeName") for p in run.jobs} & l40s
    # The last RL job waits although the L40S nodes had free replicas then: its node selector keeps it off them.
    waiting = run.jobs[-1]
    assert not waiting["spec"].get("nodeName")
    message = condition(waiting, "PodScheduled")["message"]
    assert "didn't match Pod's node affinity/selector" in message, message


def test_the_simulation_places_preempts_and_fills_nodes_as_the_real_scheduler(scenario: dict[str, PoolRun]) -> None:
    """Issue 38, point 6: the model's placement (`infra.sim.cluster.Cluster.bind`) against kube-scheduler's, step
    by step: whether the job runs, each node's jobs and placeholder, and how many placeholders it preempted."""
    for run in scenario.values():
        real = [(step.node is not None, step.nodes, step.preempted) for step in run.real]
        model = [(step.node is not None, step.nodes, step.preempted) for step in run.simulated]
        assert real == model, run.pool
        assert len(real) > NODES * 2  # the scenario reached the preemptions and the wait
