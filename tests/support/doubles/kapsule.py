"""Kapsule's part of the Scaleway double: what Scaleway itself installs in a cluster, done to the test cluster.

The program relies on a Kapsule cluster holding more than an empty API server, and the engine tests hold that
reliance against a real one (tests/support/cluster.py) instead of assuming it:
- when the cluster is created, its CNI's CRDs: Cilium's `cilium.io/v2` CustomResourceDefinitions (the program's
  CiliumNetworkPolicies need them), from the Cilium module the build staged (.engine/share/cilium);
- when a pool is created, its nodes: one kwok Node per node the pool has at `max_size` (none for a pool of
  `GPU_CI_TEST_COLD_POOLS`, whose nodes a test adds as the autoscaler would), with the labels Kapsule
  sets (`k8s.scaleway.com/pool-name`, the instance type, the zone) and the pool's own labels and taints, and the
  capacity and allocatable of its node type in the catalog (infra/catalog.py); on a GPU pool `nvidia.com/gpu` is
  what the device plugin advertises under the pool's sharing config: its GPUs times its replicas;
- when the first GPU pool is created, the GPU operator as Kapsule installs it: its chart's CRDs and the
  ClusterPolicy its chart renders from its default values (written by the tests beforehand with the Helm inside
  Pulumi's Kubernetes provider, tests/support/helm_template.py), created by the field manager Helm uses.

All of it is configured by the environment the engine hands the plugin (`EngineProject.env`):
`GPU_CI_TEST_KUBECONFIG` (the cluster's admin kubeconfig: what the cluster's `kubeconfigs` output returns, so
any API server can stand in), `GPU_CI_TEST_GPU_OPERATOR` (a JSON list: the operator's CRDs and ClusterPolicy)
and `GPU_CI_TEST_STACK_FILE` (the stack file, whose platform gives each pool's sharing replicas). Without
`GPU_CI_TEST_KUBECONFIG` the double is the offline mocks' and installs nothing. Each install is recorded in the
double's records (`Kapsule` lines) with what existed before it.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import requests
import yaml

if TYPE_CHECKING:
    from infra.model.platform import Platform

ROOT = Path(__file__).resolve().parents[3]
CILIUM_CRDS = ROOT / ".engine" / "share" / "cilium" / "crds" / "v2"
KUBECONFIG_VARIABLE = "GPU_CI_TEST_KUBECONFIG"
GPU_OPERATOR_VARIABLE = "GPU_CI_TEST_GPU_OPERATOR"
STACK_FILE_VARIABLE = "GPU_CI_TEST_STACK_FILE"
COLD_POOLS_VARIABLE = "GPU_CI_TEST_COLD_POOLS"
"""Pools (comma-separated) created without nodes, as a pool at `min_size` 0 is: its nodes come when the autoscaler
adds them (a test adds them with `node_bodies`)."""
KAPSULE_MANAGER = "kapsule"
"""The field manager of what Kapsule applies (its CNI's CRDs, the nodes)."""
HELM_MANAGER = "helm"
"""The field manager Helm 3 creates objects with: the GPU operator's release, as Kapsule installs it."""
POOL_NAME_LABEL = "k8s.scaleway.com/pool-name"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
GPU_RESOURCE = "nvidia.com/gpu"
ESTABLISHED_TIMEOUT = 60.0
_OPERATOR = threading.Lock()
"""The engine creates the GPU pools in parallel (the double serves each call on a thread): one installs the
operator, as Kapsule's one Helm release does."""


def enabled() -> bool:
    return bool(os.environ.get(KUBECONFIG_VARIABLE))


class Cluster:
    """The API server of `$GPU_CI_TEST_KUBECONFIG`, as its admin."""

    def __init__(self) -> None:
        path = Path(os.environ[KUBECONFIG_VARIABLE])
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
        cluster = config["clusters"][0]["cluster"]
        self.server: str = cluster["server"]
        ca = cluster.get("certificate-authority-data")
        self.ca_pem = base64.b64decode(ca).decode() if ca else Path(cluster["certificate-authority"]).read_text()
        self.token: str = config["users"][0]["user"]["token"]
        self.ca_file = path.with_suffix(".kapsule-ca.crt")
        self.ca_file.write_text(self.ca_pem, encoding="utf-8")
        self.session = requests.Session()

    def kubeconfig(self) -> str:
        """The admin kubeconfig as Kapsule hands it out: self-contained, its CA inline."""
        document = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "kapsule",
                    "cluster": {
                        "server": self.server,
                        "certificate-authority-data": base64.b64encode(self.ca_pem.encode()).decode(),
                    },
                }
            ],
            "users": [{"name": "kapsule-admin", "user": {"token": self.token}}],
            "contexts": [{"name": "kapsule", "context": {"cluster": "kapsule", "user": "kapsule-admin"}}],
            "current-context": "kapsule",
        }
        return yaml.safe_dump(document, sort_keys=False)

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        return self.session.request(
            method,
            self.server + path,
            data=None if body is None else json.dumps(body),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": content_type},
            verify=str(self.ca_file),
            timeout=30,
        )

    def apply(self, path: str, body: dict[str, Any], manager: str = KAPSULE_MANAGER) -> None:
        """Server-side apply of `body` at `path` (the object's own URL)."""
        response = self.request(
            "PATCH", f"{path}?fieldManager={manager}&force=true", body, "application/apply-patch+yaml"
        )
        if response.status_code not in (200, 201):
            raise RuntimeError(f"Kapsule double: apply {path}: {response.status_code} {response.text[:300]}")

    def exists(self, path: str) -> bool:
        return bool(self.request("GET", path).status_code == 200)

    def apply_crds(self, crds: list[dict[str, Any]]) -> None:
        """The CRDs, then each one Established (a CRD's kind is served only then)."""
        for crd in crds:
            self.apply(_crd_path(crd["metadata"]["name"]), crd)
        deadline = time.monotonic() + ESTABLISHED_TIMEOUT
        for crd in crds:
            while not _established(self.request("GET", _crd_path(crd["metadata"]["name"]))):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Kapsule double: CRD {crd['metadata']['name']} not Established")
                time.sleep(0.1)


def _crd_path(name: str) -> str:
    return f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"


def _established(response: requests.Response) -> bool:
    if response.status_code != 200:
        return False
    conditions = (response.json().get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def cluster_outputs(outputs: dict[str, Any]) -> dict[str, Any]:
    """The mocks' outputs of a cluster with the test cluster's kubeconfig, host, token and CA in place."""
    cluster = Cluster()
    kubeconfig = dict(outputs["kubeconfigs"][0])
    kubeconfig.update(
        configFile=cluster.kubeconfig(),
        host=cluster.server,
        token=cluster.token,
        clusterCaCertificate=base64.b64encode(cluster.ca_pem.encode()).decode(),
    )
    return {**outputs, "kubeconfigs": [kubeconfig], "apiserverUrl": cluster.server}


def cluster_created(record: Any) -> None:
    """What Kapsule's CNI brings: Cilium's CRDs."""
    cluster = Cluster()
    crds = [yaml.safe_load(path.read_text(encoding="utf-8")) for path in sorted(CILIUM_CRDS.glob("*.yaml"))]
    cluster.apply_crds(crds)
    record("Kapsule", event="cluster", installed=sorted(c["metadata"]["name"] for c in crds))


def pool_created(inputs: dict[str, Any], record: Any) -> None:
    """The pool's nodes at `max_size` (none for a pool of `COLD_POOLS_VARIABLE`); on the first GPU pool, the GPU
    operator's CRDs and ClusterPolicy."""
    from infra.model.platform import load_platform

    cluster = Cluster()
    stack = yaml.safe_load(Path(os.environ[STACK_FILE_VARIABLE]).read_text(encoding="utf-8"))
    platform = load_platform(stack["config"]["gpu-ci:platform"])
    pool = platform.pools[inputs["name"]]
    installed: list[str] = []
    if pool.node.is_gpu:
        with _OPERATOR:
            installed = _gpu_operator(cluster)
    names = []
    cold = os.environ.get(COLD_POOLS_VARIABLE, "").split(",")
    for body in [] if pool.name in cold else node_bodies(platform, inputs):
        response = cluster.request("POST", "/api/v1/nodes", body)
        if response.status_code not in (201, 409):
            name = body["metadata"]["name"]
            raise RuntimeError(f"Kapsule double: Node {name}: {response.status_code} {response.text[:300]}")
        names.append(body["metadata"]["name"])
    record("Kapsule", event="pool", pool=pool.name, nodes=names, installed=installed)


def node_bodies(platform: Platform, inputs: dict[str, Any]) -> list[dict[str, Any]]:
    """The Nodes of the pool the node-pool inputs `inputs` make, at its `maxSize`, as Kapsule labels them."""
    pool = platform.pools[inputs["name"]]
    node = pool.node
    bodies = []
    for index in range(int(inputs["maxSize"])):
        name = f"scw-{platform.spec.cluster.name}-{pool.name}-{index}"
        capacity = {"cpu": str(node.vcpus), "memory": f"{node.memory_gib}Gi", "pods": "110"}
        allocatable = {
            "cpu": f"{node.allocatable_millicores}m",
            "memory": str(node.allocatable_memory_bytes),
            "pods": "110",
        }
        if node.is_gpu:
            capacity[GPU_RESOURCE] = allocatable[GPU_RESOURCE] = str(node.gpus * pool.sharing.replicas_per_gpu)
        labels = {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            POOL_NAME_LABEL: pool.name,
            INSTANCE_TYPE_LABEL: pool.node_type.lower(),
            ZONE_LABEL: inputs.get("zone", pool.zone),
            REGION_LABEL: inputs.get("region", platform.spec.region),
            **(inputs.get("labels") or {}),
        }
        bodies.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "spec": {"taints": [dict(t) for t in inputs.get("taints") or []]},
                "status": {"capacity": capacity, "allocatable": allocatable},
            }
        )
    return bodies


def _gpu_operator(cluster: Cluster) -> list[str]:
    """The operator's chart as Kapsule's Helm release leaves it: its CRDs, then its ClusterPolicy (once)."""
    objects = json.loads(Path(os.environ[GPU_OPERATOR_VARIABLE]).read_text(encoding="utf-8"))
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    policies = [o for o in objects if o["kind"] == "ClusterPolicy"]
    cluster.apply_crds(crds)
    for policy in policies:
        metadata = {k: v for k, v in policy["metadata"].items() if k != "namespace"}  # cluster-scoped
        path = "/apis/nvidia.com/v1/clusterpolicies"
        if cluster.exists(f"{path}/{metadata['name']}"):
            return []
        response = cluster.request("POST", f"{path}?fieldManager={HELM_MANAGER}", {**policy, "metadata": metadata})
        if response.status_code != 201:
            raise RuntimeError(f"Kapsule double: ClusterPolicy: {response.status_code} {response.text[:300]}")
    return sorted(o["metadata"]["name"] for o in crds + policies)
