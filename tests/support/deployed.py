"""What the engine tests deploy to: a test cluster (a control plane, the runner chart's repository, the GPU
operator's objects), and the shared deployment's interface (`deployed_dev`, tests/conftest.py) for the
modules that read it, with the secrets it is deployed with."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support import cluster
from support.chart_repository import serve_charts
from support.cluster import ControlPlane
from support.engine import EngineProject, Result, TestCluster
from support.helm_template import render_chart

DEV_SECRETS = {
    "gitlab:token": "glpat-engine-test-gitlab-token-4e1f",
    "registry_pull_secret_key": "engine-test-registry-pull-key-9b2c",
}
"""The dev stack's secrets in `deployed_dev`: none may appear in plain text anywhere the engine writes or prints."""
GPU_OPERATOR_RELEASE = ("gpu-operator", "kube-system")
"""The release name and namespace Kapsule installs the GPU operator's chart under (the dev stack's
`gpu_operator.namespace`)."""


@dataclass
class DeployedStack:
    """The dev stack as `deployed_dev` left it. Stable interface (other modules read it):

    - `project`: the EngineProject (its `pulumi(...)` runs the CLI on this stack; `stack_file()`, `workdir`);
    - `plane`: the ControlPlane it is deployed to (`plane.request`/`plane.get` as the admin, `plane.add_node`);
    - `kubeconfig`: the path of the cluster's admin kubeconfig (the one the Scaleway double's cluster returns);
    - `stack_dir`: the project's directory (the program, Pulumi.yaml, Pulumi.dev.yaml);
    - `outputs`: the stack's outputs (`pulumi stack output --json --show-secrets`), by name;
    - `preview`, `up`, `preview_again`, `refresh`: the commands that deployed and checked it, in that order;
    - `up_records`: what the doubles (Scaleway, GitLab, Kapsule's part) received during `up`;
    - `program_run`: the config the engine handed the program in the first preview (secrets masked).

    Tests must not change what it deployed (other modules read it after them): a test that needs a change
    previews it, or deploys a stack of its own."""

    project: EngineProject
    plane: ControlPlane
    kubeconfig: Path
    stack_dir: Path
    outputs: dict[str, Any]
    preview: Result
    up: Result
    up_records: list[dict[str, Any]]
    preview_again: Result
    refresh: Result
    program_run: dict[str, Any]


@contextmanager
def serve_test_cluster(plane: ControlPlane, folder: Path) -> Iterator[TestCluster]:
    """`plane`, a chart repository serving the runner chart, and the GPU operator's objects as its chart renders
    them with its default values: the CRDs and the ClusterPolicy that Kapsule's Helm release makes (the Kapsule
    double installs them with the first GPU pool). The repository stops at the end of the block."""
    folder.mkdir(parents=True, exist_ok=True)
    release, namespace = GPU_OPERATOR_RELEASE
    rendered = render_chart(
        cluster.KUBERNETES_PROVIDER, cluster.GPU_OPERATOR_CHART, plane.kubeconfig, namespace=namespace, release=release
    )
    operator = folder / "gpu-operator.json"
    kept = [o for o in rendered if o["kind"] in {"CustomResourceDefinition", "ClusterPolicy"}]
    operator.write_text(json.dumps(kept), encoding="utf-8")
    with serve_charts(folder / "charts") as url:
        yield TestCluster(plane, url, operator)


@contextmanager
def fresh_test_cluster(folder: Path) -> Iterator[TestCluster]:
    """A test cluster of its own (a new control plane), for a test that changes what it deploys (a destroy, an
    update) or deploys what the shared stack does not: stopped at the end of the block."""
    with cluster.start_control_plane(folder / "control-plane") as plane, serve_test_cluster(plane, folder) as test:
        yield test
