"""The warm variant of the dev stack on a test cluster of its own, for the engine tests that need placeholders,
their CronJobs and the priority classes (the dev stack deploys none): both GPU pools at NODES nodes, warm all
week, deployed by `pulumi up` with Pulumi's Kubernetes provider, and what the tests read of it.

`Deployed` is the deployment as `deploy` left it: the control plane, the engine project (its stack file and
CLI), the offline plan of that stack file (the objects the checks name, `support.kube_apply`), the platform,
and the kwok nodes the Scaleway double made for each pool. Job pods are built from a pool's rendered runner
config.toml and its CI template's variables, as the Kubernetes executor builds them (`support.job_pod`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from infra.config.pools import POOL_NAME_LABEL
from infra.model.platform import Platform
from infra.offline.harness import run_program
from infra.offline.stack_config import StackConfig, load_stack_config
from support.cluster import ControlPlane
from support.deployed import DEV_SECRETS, fresh_test_cluster
from support.doubles.kapsule import COLD_POOLS_VARIABLE, node_bodies
from support.engine import EngineProject, Result
from support.job_pod import job_pod
from support.kube_apply import Applier, Release, objects, of_kind, releases
from support.kube_scenario import RealPool, label_selector
from support.plans import plan_json

GPU_POOLS = ("ci-compile", "ci-training")
NODES = 2
POOL = "scaleway:kubernetes/pool:Pool"
IMAGE_TAG = "0123abcd"
"""The commit a job pod's image is tagged with (`${CI_COMMIT_SHA}`)."""


def warm_platform(platform: dict[str, Any]) -> dict[str, Any]:
    """`platform` (the dev stack's) with each GPU pool at NODES nodes, all of them warm all week."""
    platform = copy.deepcopy(platform)
    for pool in GPU_POOLS:
        platform["pools"][pool]["max_size"] = NODES
        platform["pools"][pool]["warm"] = [{"days": "Mon-Sun", "from": "00:00", "to": "23:59", "nodes": NODES}]
    return platform


@dataclass
class Deployed:
    plane: ControlPlane
    project: EngineProject
    up: Result
    plan: dict[str, Any]
    """`plan --json`'s document for the stack file the engine deployed (`replan` after a change)."""
    platform: Platform
    nodes: dict[str, list[str]]
    """The kwok nodes the Scaleway double made for each pool, by pool, sorted."""

    @property
    def applier(self) -> Applier:
        return Applier(self.plane)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return objects(self.plan)

    def served(self, body: dict[str, Any]) -> dict[str, Any]:
        """The object `body` names as the API server holds it (what `pulumi up` made of it)."""
        return dict(self.plane.get(self.applier.object_path(body)))

    def placeholders(self, pool: str) -> dict[str, Any]:
        """The pool's placeholder Deployment, as the plan describes it."""
        (found,) = (d for d in of_kind(self.plan, "Deployment") if d["metadata"]["name"].endswith(pool))
        return found

    def add_nodes(self, pool: str) -> list[str]:
        """The pool's nodes at `max_size`, added as Kapsule adds them when the autoscaler scales the pool up (a
        cold pool's: `deploy(cold=...)`); their names."""
        (inputs,) = (r["inputs"] for r in self.plan["resources"] if r["type"] == POOL and r["inputs"]["name"] == pool)
        names = []
        for body in node_bodies(self.platform, inputs):
            answer = self.plane.request("POST", "/api/v1/nodes", body)
            assert answer.status_code == 201, answer.text
            names.append(body["metadata"]["name"])
        self.nodes = pool_nodes(self.plane)
        return names

    def placeholder_pool(self, pool: str) -> RealPool:
        """The pool's nodes and its placeholders' pods, as `support.kube_scenario` drives them."""
        deployment = self.placeholders(pool)
        selector = label_selector(deployment["spec"]["selector"]["matchLabels"])
        return RealPool(self.plane, self.nodes.get(pool, []), deployment["metadata"]["namespace"], selector)

    def release(self, pool: str) -> Release:
        (found,) = (r for r in releases(self.plan) if r.values["podLabels"]["gpu-ci/pool"] == pool)
        return found

    def job_pods(self, pool: str, count: int, prefix: str) -> list[dict[str, Any]]:
        """`count` job pods of the profile on `pool`, from its runner's config.toml and its CI template."""
        (profile,) = (p for p in self.platform.spec.profiles.values() if p.pool == pool)
        template = ci_templates(self.plan)[profile.template]
        image = template["image"].replace("${REGISTRY}", self.platform.registry_endpoint)
        image = image.replace("${CI_COMMIT_SHA}", IMAGE_TAG)
        config = self.release(pool).runner_config()
        return [job_pod(config, f"{prefix}-{i}", image, template["variables"]) for i in range(count)]

    def stack_platform(self) -> dict[str, Any]:
        """The platform object of the deployed stack file."""
        return dict(load_stack_config("dev", path=self.project.stack_file()).get("platform"))

    def replan(self) -> None:
        """`plan` and `platform` read again from the stack file (after `project.set_platform`)."""
        self.plan, self.platform = planned(self.project)


def planned(project: EngineProject) -> tuple[dict[str, Any], Platform]:
    """The offline plan of the project's stack file, with the engine's secrets in place, and its platform."""
    config = load_stack_config("dev", path=project.stack_file())
    config = config.with_values(DEV_SECRETS, secret_keys=tuple(DEV_SECRETS))
    run = run_program(config)
    return plan_json(config, run), run.namespace["platform"]


def ci_templates(plan: dict[str, Any]) -> dict[str, Any]:
    (file,) = (r for r in plan["resources"] if r["type"] == "gitlab:index/repositoryFile:RepositoryFile")
    return dict(yaml.safe_load(file["inputs"]["content"]))


def pool_nodes(plane: ControlPlane) -> dict[str, list[str]]:
    """The cluster's nodes by the pool Kapsule's label names, sorted."""
    found: dict[str, list[str]] = {}
    for node in plane.get("/api/v1/nodes")["items"]:
        found.setdefault(node["metadata"]["labels"][POOL_NAME_LABEL], []).append(node["metadata"]["name"])
    return {pool: sorted(names) for pool, names in found.items()}


@contextmanager
def deploy(folder: Path, dev_stack: StackConfig, *, cold: tuple[str, ...] = ()) -> Iterator[Deployed]:
    """The warm variant deployed by one `pulumi up` to a new test cluster in `folder` (stopped at the end of the
    block), its offline plan made from the same stack file with the engine's secrets in place. The pools of
    `cold` are created without nodes, as a pool at `min_size` 0 is (`Deployed.add_nodes` adds them)."""
    with fresh_test_cluster(folder / "cluster") as cluster:
        project = EngineProject(folder / "engine", cluster=cluster)
        project.set_platform(warm_platform(dev_stack.get("platform")))
        project.init_stack(DEV_SECRETS)
        up = project.pulumi("up", "--yes", "--skip-preview", env={COLD_POOLS_VARIABLE: ",".join(cold)})
        yield Deployed(cluster.plane, project, up, *planned(project), pool_nodes(cluster.plane))
