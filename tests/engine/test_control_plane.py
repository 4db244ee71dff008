"""The test cluster itself (tests/support/cluster.py): the real API server answers, admits by Pod Security,
and the real scheduler places pods on kwok nodes by their capacity; stopping it leaves no process, and a
component that cannot start is one line naming it and its log."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import cluster
from support.cluster import SKIP_REASON, ControlPlane, ControlPlaneError
from support.paths import TESTS

RESTRICTED = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
}


def namespace(plane: ControlPlane, name: str, labels: dict[str, str] | None = None) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}
    response = plane.request("POST", "/api/v1/namespaces", body)
    assert response.status_code == 201, response.text
    plane.wait_for_service_account(name)


def pod(name: str, security: dict[str, Any], pod_security: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "securityContext": pod_security or {},
            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10", "securityContext": security}],
        },
    }


def test_the_api_server_is_ready_at_its_release_and_the_kubeconfig_reaches_it(control_plane: ControlPlane) -> None:
    ready = control_plane.request("GET", "/readyz")
    assert (ready.status_code, ready.text) == (200, "ok")
    assert control_plane.get("/version")["gitVersion"] == "v1.37.2"
    config = yaml.safe_load(control_plane.kubeconfig)
    assert config["clusters"][0]["cluster"] == {
        "server": control_plane.server,
        "certificate-authority": str(control_plane.ca_path),
    }
    assert config["users"][0]["user"] == {"token": control_plane.admin_token}
    assert control_plane.server.startswith("https://127.0.0.1:")
    # The controller-manager made the default namespace's ServiceAccount (the fixture waits for it) and its root
    # CA ConfigMap (another of its controllers, which may publish it a moment later).
    control_plane.get("/api/v1/namespaces/default/serviceaccounts/default")
    path = "/api/v1/namespaces/default/configmaps/kube-root-ca.crt"
    root_ca = control_plane.wait_for("kube-root-ca.crt", lambda: _found(control_plane.request("GET", path)))
    assert root_ca["data"]["ca.crt"] == control_plane.ca_path.read_text()
    assert control_plane.ready_seconds > 0


def test_an_unknown_token_is_refused(control_plane: ControlPlane) -> None:
    assert control_plane.request("GET", "/api/v1/namespaces", token="not-a-token").status_code == 401


def test_pod_security_refuses_a_privileged_pod_in_a_restricted_namespace(control_plane: ControlPlane) -> None:
    namespace(control_plane, "smoke-restricted", RESTRICTED)
    path = "/api/v1/namespaces/smoke-restricted/pods"
    refused = control_plane.request("POST", path, pod("privileged", {"privileged": True}))
    assert refused.status_code == 403, refused.text
    assert 'violates PodSecurity "restricted:latest"' in refused.json()["message"]
    assert "privileged" in refused.json()["message"]
    # A pod that meets the profile is admitted in the same namespace: the refusal was Pod Security's.
    restricted = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
        "runAsUser": 65532,
    }
    admitted = control_plane.request(
        "POST", path, pod("restricted", restricted, {"seccompProfile": {"type": "RuntimeDefault"}})
    )
    assert admitted.status_code == 201, admitted.text


def test_the_scheduler_places_gpu_pods_on_the_kwok_node_with_gpus_up_to_its_capacity(
    control_plane: ControlPlane,
) -> None:
    control_plane.add_node("smoke-cpu", labels={"pool": "cpu"})
    gpu = control_plane.add_node("smoke-gpu", labels={"pool": "gpu"}, capacity={"nvidia.com/gpu": "2"})
    assert gpu["status"]["allocatable"]["nvidia.com/gpu"] == "2"
    namespace(control_plane, "smoke-gpu")
    container = {
        "name": "main",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": "100m"}, "limits": {"nvidia.com/gpu": "1"}},
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "gpu"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "gpu"}},
            "template": {"metadata": {"labels": {"app": "gpu"}}, "spec": {"containers": [container]}},
        },
    }
    created = control_plane.request("POST", "/apis/apps/v1/namespaces/smoke-gpu/deployments", deployment)
    assert created.status_code == 201, created.text

    def placed() -> list[dict[str, Any]] | None:
        pods = control_plane.get("/api/v1/namespaces/smoke-gpu/pods?labelSelector=app%3Dgpu")["items"]
        running = [p for p in pods if p["status"].get("phase") == "Running"]
        unschedulable = [p for p in pods if _condition(p, "PodScheduled").get("reason") == "Unschedulable"]
        return pods if (len(pods), len(running), len(unschedulable)) == (3, 2, 1) else None

    pods = control_plane.wait_for("two GPU pods Running and one unschedulable", placed)
    running = [p for p in pods if p["status"]["phase"] == "Running"]
    assert {p["spec"]["nodeName"] for p in running} == {"smoke-gpu"}
    assert all(_condition(p, "Ready")["status"] == "True" for p in running)
    (pending,) = (p for p in pods if p["status"]["phase"] == "Pending")
    assert "Insufficient nvidia.com/gpu" in _condition(pending, "PodScheduled")["message"]


def _found(response: Any) -> dict[str, Any] | None:
    return response.json() if response.status_code == 200 else None


def _condition(pod: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in pod["status"].get("conditions", []) if c["type"] == kind), {})


def test_stop_ends_every_process_it_started(tmp_path: Path) -> None:
    if absent := cluster.missing():
        pytest.skip(f"{SKIP_REASON}; missing: {', '.join(absent)}")
    plane = cluster.start_control_plane(tmp_path)
    groups = {process.pid for process in plane.processes.values()}
    assert list(plane.processes) == list(cluster.COMPONENTS)
    plane.stop()
    assert all(process.returncode is not None for process in plane.processes.values())
    assert not [pid for pid in _pids() if os.getpgid(pid) in groups], "a process of the test cluster outlived stop()"
    assert sorted(path.name for path in plane.log_dir.iterdir()) == sorted(f"{c}.log" for c in cluster.COMPONENTS)
    assert not (tmp_path / "etcd").exists()


STARTER = """
import sys
sys.path[:0] = [{tests!r}, {root!r}]
from pathlib import Path
from support import cluster
plane = cluster.start_control_plane(Path({folder!r}))
print(" ".join(str(process.pid) for process in plane.processes.values()), flush=True)
sys.stdin.read()
"""
"""A process that starts a control plane, prints its components' pids and waits: killed, it runs no `stop()`."""


def test_a_test_process_killed_outright_leaves_no_component_behind(tmp_path: Path) -> None:
    """pytest killed by a CI timeout or by hand runs no finalizer: each component dies with the process that
    started it (PR_SET_PDEATHSIG), not left holding its ports and memory."""
    if absent := cluster.missing():
        pytest.skip(f"{SKIP_REASON}; missing: {', '.join(absent)}")
    code = STARTER.format(tests=str(TESTS), root=str(TESTS.parent), folder=str(tmp_path / "plane"))
    starter = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert starter.stdout is not None
        pids = [int(pid) for pid in starter.stdout.readline().split()]
        assert len(pids) == len(cluster.COMPONENTS) and all(pid in _pids() for pid in pids)
    finally:
        starter.kill()
        starter.wait(timeout=30)
    deadline = time.monotonic() + 30
    while (left := [pid for pid in pids if pid in _pids() and not _zombie(pid)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in left:  # not left running after a failure either
        os.kill(pid, signal.SIGKILL)
    assert left == [], "components outlived the process that started them"


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except (FileNotFoundError, IndexError):
        return True


def _pids() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                os.getpgid(int(entry.name))
            except ProcessLookupError:
                continue
            pids.append(int(entry.name))
    return pids


def test_a_component_that_cannot_start_is_one_line_naming_it_and_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if absent := cluster.missing():
        pytest.skip(f"{SKIP_REASON}; missing: {', '.join(absent)}")
    apiserver_args = cluster._apiserver_args
    monkeypatch.setattr(cluster, "_apiserver_args", lambda *args: [*apiserver_args(*args), "--no-such-flag"])
    started: list[cluster.ControlPlane] = []
    monkeypatch.setattr(cluster, "ControlPlane", _recording(started))
    with pytest.raises(ControlPlaneError) as raised:
        cluster.start_control_plane(tmp_path)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("test cluster: kube-apiserver exited with 1 (")
    assert "unknown flag: --no-such-flag" in message
    assert f"log: {tmp_path / 'logs' / 'kube-apiserver.log'}" in message
    (plane,) = started
    assert list(plane.processes) == ["etcd", "kube-apiserver"]
    assert all(process.returncode is not None for process in plane.processes.values()), "etcd outlived the failure"


def _recording(started: list[cluster.ControlPlane]) -> Any:
    """ControlPlane, each instance made also kept in `started`."""

    def make(**fields: Any) -> cluster.ControlPlane:
        plane = ControlPlane(**fields)
        started.append(plane)
        return plane

    return make
