"""A real Kubernetes control plane on loopback, for the engine tests: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler and kwok (fake nodes and pods), the binaries scripts/engine/build
makes from the pinned Go modules (tools/controlplane).

Why real ones: what the program deploys must be accepted by an API server, admitted by Pod Security,
authorised by RBAC and placed by a scheduler, and only the real components answer that. Only the nodes are
fake: kwok makes every Node it sees Ready (heartbeats, a node lease) and runs the pods the scheduler binds to
them, so a node is any set of labels, taints and capacity (`nvidia.com/gpu` included) a test asks for.

Each process listens on a free loopback port, is started in a process group of its own and is stopped by that
group (`stop()`), whatever the test's outcome; each writes its log to `log_dir`, kept after the run. A
component that fails to start is one line naming it and its log. No certificate or key leaves `workdir`: the
API server makes its own self-signed serving certificate (`--cert-dir`), clients authenticate by bearer
tokens (`--token-auth-file`), and the service-account signing key is made with `openssl`.

What the cluster installs besides itself is staged by the build in `.engine/share/` (each folder with a
SOURCE file naming the module, version and hash it was copied from, checked against a tools module's go.sum):
`kwok/stages.yaml` (kwok's stages, as kwokctl configures them), `gpu-operator/chart/` (the GPU operator's chart,
deployments/gpu-operator: `crds/nvidia.com_clusterpolicies.yaml`, `templates/clusterpolicy.yaml`,
`values.yaml`), `cilium/crds/v2/*.yaml` (Cilium's cilium.io/v2 CRDs, which Kapsule's CNI installs). Pulumi's
Kubernetes provider is built into `.engine/providers/` (see `KUBERNETES_PROVIDER`).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import requests
import yaml

from support.day import SUITE_DAY_ENV
from support.paths import ROOT

ENGINE = ROOT / ".engine"
BIN = ENGINE / "bin"
SHARE = ENGINE / "share"
KWOK_STAGES = SHARE / "kwok" / "stages.yaml"
GPU_OPERATOR_CHART = SHARE / "gpu-operator" / "chart"
CLUSTER_POLICY_CRD = GPU_OPERATOR_CHART / "crds" / "nvidia.com_clusterpolicies.yaml"
CILIUM_CRDS = SHARE / "cilium" / "crds" / "v2"
KUBERNETES_PROVIDER = ENGINE / "providers" / "pulumi-resource-kubernetes"
"""Pulumi's own Kubernetes provider (v4.25.0): on a project's PATH when it deploys to a test cluster."""
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
"""In the order they start; they stop in the reverse one."""

NOT_BUILT = "the test cluster is not built here (scripts/engine/build)"
SKIP_REASON = "the test cluster's tests are not run here: it is not built (scripts/engine/build builds it)"
"""Why a test that needs the cluster skips (with the missing binaries after it)."""
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
SERVICE_CIDR = "10.96.0.0/16"
DEFAULT_CAPACITY = {"cpu": "16", "memory": "64Gi", "pods": "110"}
"""What `add_node` gives a node for each resource the caller leaves out (kwok gives a node nothing it is not
told: a GPU-only capacity would hold no pod)."""
NODE_NOT_READY_TAINT = "node.kubernetes.io/not-ready"
"""The taint the API server puts on a new Node; the controller-manager lifts it once kwok reports the node Ready."""

START_TIMEOUT = 90.0
"""Seconds each component has to become ready (the API server takes 3-7 s on an idle 2-core machine)."""
WAIT_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0
"""Seconds a component has to exit after SIGTERM before its process group is killed."""
POLL = 0.1

T = TypeVar("T")


class ControlPlaneError(RuntimeError):
    """A component that did not start or a wait that ran out: one line, naming the component and its log."""


def missing() -> list[str]:
    """What the fixture needs and does not find: the built binaries, kwok's stages, openssl."""
    needed = [BIN / name for name in COMPONENTS] + [KWOK_STAGES]
    absent = [str(path.relative_to(ROOT)) for path in needed if not path.exists()]
    if shutil.which("openssl") is None:
        absent.append("openssl on PATH")
    return absent


def unavailable() -> str | None:
    """Why the test cluster cannot run here, in one line, or None."""
    if absent := missing():
        return f"{NOT_BUILT}: no {', '.join(absent)}"
    return None


def free_ports(count: int) -> list[int]:
    """`count` distinct loopback ports the kernel had free (held together while chosen, so none repeats)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@dataclass
class ControlPlane:
    """A running control plane (see the module's docstring). `request` asks the API server as the admin, or
    as the bearer of `token`; `add_node` adds a kwok node; `stop` ends every process this object started."""

    workdir: Path
    server: str
    """The API server's https URL."""
    admin_token: str
    """A bearer token of `system:masters` (the kubeconfig's)."""
    ca_path: Path
    """The CA certificate that verifies the API server's (of the pair it made itself, `--cert-dir`)."""
    kubeconfig_path: Path
    """The admin kubeconfig: the server, `ca_path` and `admin_token`."""
    log_dir: Path
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    ready_seconds: float = 0.0
    """From the first process started to the default ServiceAccount's existence."""
    _session: requests.Session = field(default_factory=requests.Session, repr=False)

    @property
    def kubeconfig(self) -> str:
        return self.kubeconfig_path.read_text()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        token: str | None = None,
        *,
        content_type: str | None = None,
        timeout: float = 30.0,
    ) -> requests.Response:
        """The API server's answer to `method path` (a JSON body; a PATCH is a merge patch unless
        `content_type` says otherwise), as the admin or as the bearer of `token`. Any status is returned."""
        headers = {"Authorization": f"Bearer {token or self.admin_token}", "Accept": "application/json"}
        data = None
        if body is not None:
            default = "application/merge-patch+json" if method.upper() == "PATCH" else "application/json"
            headers["Content-Type"] = content_type or default
            data = body if isinstance(body, (str, bytes)) else json.dumps(body)
        return self._session.request(
            method, self.server + path, data=data, headers=headers, verify=str(self.ca_path), timeout=timeout
        )

    def get(self, path: str) -> Any:
        """The object at `path` (as the admin), which must exist."""
        response = self.request("GET", path)
        if response.status_code != 200:
            raise ControlPlaneError(f"GET {path}: {response.status_code} {response.text.strip()[:300]}")
        return response.json()

    def wait_for(
        self, what: str, probe: Callable[[], T | None], timeout: float = WAIT_TIMEOUT, component: str | None = None
    ) -> T:
        """`probe()`'s first answer that is not None, polled while every component runs. A component that
        exits meanwhile, or `timeout` seconds without an answer, is a ControlPlaneError: one line naming `what`,
        the component (`component`, or the one that exited) and the last line of its log."""
        deadline = time.monotonic() + timeout
        while True:
            self.check_running()
            if (found := probe()) is not None:
                return found
            if time.monotonic() > deadline:
                where = f"{self._tail(component)}" if component else f"logs: {self.log_dir}"
                raise ControlPlaneError(f"test cluster: {what}: not after {timeout:.0f} s ({where})")
            time.sleep(POLL)

    def check_running(self) -> None:
        """A ControlPlaneError naming the first component that exited, if any did."""
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise ControlPlaneError(f"test cluster: {name} exited with {process.returncode} ({self._tail(name)})")

    def _tail(self, component: str) -> str:
        """The last line of the component's log, and the log's path."""
        log = self.log_dir / f"{component}.log"
        try:
            lines = log.read_text(errors="replace").strip().splitlines()
        except OSError:
            lines = ["no log"]
        return f"{(lines or ['empty log'])[-1][:300]}; log: {log}"

    def wait_for_service_account(self, namespace: str, name: str = "default") -> dict[str, Any]:
        """The namespace's ServiceAccount once the controller-manager made it (a pod of a namespace without
        its `default` ServiceAccount is refused)."""
        path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}"
        return self.wait_for(f"ServiceAccount {namespace}/{name}", lambda: _found(self.request("GET", path)))

    def add_node(
        self,
        name: str,
        labels: Mapping[str, str] | None = None,
        taints: Sequence[Mapping[str, str]] = (),
        capacity: Mapping[str, str] | None = None,
        allocatable: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """A Node that kwok runs, once Ready and schedulable (the API server's not-ready taint lifted).
        `capacity` adds to DEFAULT_CAPACITY; `allocatable` is the capacity but for the resources it names.
        Taints are `{"key", "value", "effect"}` mappings."""
        full_capacity = {**DEFAULT_CAPACITY, **(capacity or {})}
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": {"taints": [dict(taint) for taint in taints]},
            "status": {
                "capacity": full_capacity,
                "allocatable": {**full_capacity, **(allocatable or {})},
            },
        }
        response = self.request("POST", "/api/v1/nodes", node)
        if response.status_code != 201:
            raise ControlPlaneError(f"Node {name}: {response.status_code} {response.text.strip()[:300]}")
        return self.wait_for(f"Node {name} Ready", lambda: _schedulable(self.request("GET", f"/api/v1/nodes/{name}")))

    def stop(self) -> None:
        """SIGTERM to each process group this object started (the last started first), SIGKILL to any still
        running after STOP_TIMEOUT seconds; then the etcd data is removed. The logs stay in `log_dir`."""
        errors = []
        for name in reversed(list(self.processes)):
            try:
                _terminate(self.processes[name])
            except OSError as error:  # the others are still stopped
                errors.append(f"{name}: {error}")
        self._session.close()
        shutil.rmtree(self.workdir / "etcd", ignore_errors=True)
        if errors:
            raise ControlPlaneError(f"test cluster: stopping {'; '.join(errors)} (logs: {self.log_dir})")

    def __enter__(self) -> ControlPlane:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


def _found(response: requests.Response) -> dict[str, Any] | None:
    return response.json() if response.status_code == 200 else None


def _schedulable(response: requests.Response) -> dict[str, Any] | None:
    if response.status_code != 200:
        return None
    node: dict[str, Any] = response.json()
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", []))
    tainted = any(t["key"] == NODE_NOT_READY_TAINT for t in node["spec"].get("taints") or [])
    return node if ready and not tainted else None


def _terminate(process: subprocess.Popen[bytes]) -> None:
    """Ends the process group `process` leads (a session of its own: nothing else is in it). Only while its
    leader is not yet reaped: its pid, the group's id, is still this process's and no other's."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def start_control_plane(workdir: Path) -> ControlPlane:
    """Starts the five components under `workdir` and returns once the API server is ready and the
    controller-manager has made the `default` namespace's ServiceAccount (also a context manager: `with
    start_control_plane(d) as cp:` stops it at the end). On any failure, everything started is stopped and a
    ControlPlaneError names the component and its log."""
    if reason := unavailable():
        raise ControlPlaneError(reason)
    workdir.mkdir(parents=True, exist_ok=True)
    pki, logs = workdir / "pki", workdir / "logs"
    pki.mkdir(exist_ok=True)
    logs.mkdir(exist_ok=True)
    etcd_port, peer_port, api_port, kcm_port, scheduler_port, kwok_port = free_ports(6)
    tokens = {name: secrets.token_hex(16) for name in ("admin", "controller-manager", "scheduler", "kwok")}
    plane = ControlPlane(
        workdir=workdir,
        server=f"https://127.0.0.1:{api_port}",
        admin_token=tokens["admin"],
        ca_path=pki / "ca.crt",
        kubeconfig_path=workdir / "admin.kubeconfig",
        log_dir=logs,
    )
    started = time.monotonic()
    try:
        _write_credentials(plane, pki, tokens)
        etcd = f"http://127.0.0.1:{etcd_port}"
        _start(plane, "etcd", _etcd_args(workdir, etcd, f"http://127.0.0.1:{peer_port}"))
        _wait_http(plane, "etcd", f"{etcd}/health", lambda r: r.status_code == 200 and r.json().get("health") == "true")
        _start(plane, "kube-apiserver", _apiserver_args(pki, etcd, api_port))
        serving = pki / "apiserver" / "apiserver.crt"
        ca = plane.wait_for(
            f"kube-apiserver's self-signed certificate {serving}",
            lambda: _signing_certificate(serving),
            START_TIMEOUT,
            component="kube-apiserver",
        )
        plane.ca_path.write_text(ca)
        _wait_http(plane, "kube-apiserver", f"{plane.server}/readyz", _ok, plane.ca_path)
        for name, args in (
            ("kube-controller-manager", _controller_manager_args(plane, pki, kcm_port)),
            ("kube-scheduler", _scheduler_args(pki, scheduler_port)),
            ("kwok", _kwok_args(pki, kwok_port)),
        ):
            _start(plane, name, args)
        for name, port in (("kube-controller-manager", kcm_port), ("kube-scheduler", scheduler_port)):
            _wait_http(plane, name, f"https://127.0.0.1:{port}/healthz", _ok, pki / name / f"{name}.crt")
        _wait_http(plane, "kwok", f"http://127.0.0.1:{kwok_port}/healthz", _ok)
        path = "/api/v1/namespaces/default/serviceaccounts/default"
        plane.wait_for(
            "ServiceAccount default/default",
            lambda: _found(plane.request("GET", path)),
            START_TIMEOUT,
            component="kube-controller-manager",
        )
    except BaseException:
        with contextlib.suppress(ControlPlaneError):  # the failure to report is the start's
            plane.stop()
        raise
    plane.ready_seconds = time.monotonic() - started
    return plane


PEM_CERTIFICATE = re.compile(r"-----BEGIN CERTIFICATE-----\n.+?\n-----END CERTIFICATE-----\n", re.DOTALL)


def _signing_certificate(serving: Path) -> str | None:
    """The CA certificate of the API server's self-signed pair, once written: `--cert-dir`'s file holds the
    serving certificate, then the CA that signed it. Only the CA is the cluster's root (the controller-manager
    publishes it as a trust bundle, which refuses a certificate that is not a CA's)."""
    try:
        blocks = PEM_CERTIFICATE.findall(serving.read_text())
    except FileNotFoundError:
        return None
    return blocks[-1] if len(blocks) >= 2 else None


def _ok(response: requests.Response) -> bool:
    return response.status_code == 200 and response.text.strip() == "ok"


def _write_credentials(plane: ControlPlane, pki: Path, tokens: Mapping[str, str]) -> None:
    """The token file (one user per client; the built-in RBAC roles bind the controller-manager's and the
    scheduler's user names), the service-account key pair, and a kubeconfig per client."""
    users = {
        "admin": ("admin", "system:masters"),
        "controller-manager": ("system:kube-controller-manager", ""),
        "scheduler": ("system:kube-scheduler", ""),
        # kwok plays the kubelet of every node (their status, leases and pods): one identity for all of them.
        "kwok": ("kwok", "system:masters"),
    }
    lines = [f'{tokens[key]},{user},{user},"{groups}"' for key, (user, groups) in users.items()]
    (pki / "tokens.csv").write_text("\n".join(lines) + "\n")
    key, public = pki / "service-account.key", pki / "service-account.pub"
    _run(["openssl", "genrsa", "-out", str(key), "2048"])
    _run(["openssl", "rsa", "-in", str(key), "-pubout", "-out", str(public)])
    for client in users:
        path = plane.kubeconfig_path if client == "admin" else pki / f"{client}.kubeconfig"
        path.write_text(yaml.safe_dump(_kubeconfig(plane.server, plane.ca_path, tokens[client]), sort_keys=False))
        path.chmod(0o600)


def _kubeconfig(server: str, ca_path: Path, token: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "test", "cluster": {"server": server, "certificate-authority": str(ca_path)}}],
        "users": [{"name": "test", "user": {"token": token}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
        "current-context": "test",
    }


def _etcd_args(workdir: Path, client: str, peer: str) -> list[str]:
    return [
        "--name=test",
        f"--data-dir={workdir / 'etcd'}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=test={peer}",
        "--unsafe-no-fsync",  # a test cluster's data need not survive a power cut
        "--log-level=warn",
    ]


def _apiserver_args(pki: Path, etcd: str, port: int) -> list[str]:
    return [
        f"--etcd-servers={etcd}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        "--advertise-address=127.0.0.1",
        "--endpoint-reconciler-type=none",  # a loopback address cannot be the `kubernetes` Service's endpoint
        f"--cert-dir={pki / 'apiserver'}",
        f"--token-auth-file={pki / 'tokens.csv'}",
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",  # with the defaults, PodSecurity among them
        "--allow-privileged=true",  # as a real cluster: privileged pods exist (the GPU operator's), PodSecurity decides
        f"--service-account-key-file={pki / 'service-account.pub'}",
        f"--service-account-signing-key-file={pki / 'service-account.key'}",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--profiling=false",
    ]


def _controller_manager_args(plane: ControlPlane, pki: Path, port: int) -> list[str]:
    kubeconfig = pki / "controller-manager.kubeconfig"
    return [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--authentication-skip-lookup=true",  # no client CA to look up: clients authenticate by token only
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={pki / 'kube-controller-manager'}",
        "--leader-elect=false",
        # Every default controller: namespaces (their deletion), ServiceAccounts and their root CA ConfigMap,
        # Deployments and ReplicaSets, Jobs and CronJobs, the garbage collector, the node lifecycle (which
        # lifts a new node's not-ready taint), disruption budgets...
        "--controllers=*",
        f"--service-account-private-key-file={pki / 'service-account.key'}",
        f"--root-ca-file={plane.ca_path}",
        "--use-service-account-credentials=true",  # each controller as its own ServiceAccount, as in a real cluster
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--profiling=false",
    ]


def _scheduler_args(pki: Path, port: int) -> list[str]:
    kubeconfig = pki / "scheduler.kubeconfig"
    return [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--authentication-skip-lookup=true",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={pki / 'kube-scheduler'}",
        "--leader-elect=false",
        "--profiling=false",
    ]


def _kwok_args(pki: Path, port: int) -> list[str]:
    return [
        f"--kubeconfig={pki / 'kwok.kubeconfig'}",
        f"--config={KWOK_STAGES}",
        "--manage-all-nodes=true",  # every Node of this cluster is a fake one
        "--node-lease-duration-seconds=40",  # kwokctl's default: heartbeats by node lease
        f"--server-address=127.0.0.1:{port}",
    ]


def _run(args: list[str]) -> None:
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ControlPlaneError(f"test cluster: {' '.join(args[:2])} failed ({done.returncode}): {last}")


PR_SET_PDEATHSIG = 1
"""prctl(2): the signal a process gets when the thread that started it ends."""
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl
"""libc's prctl, looked up here, in the parent: the child between fork and exec only calls it."""


def _die_with_parent() -> None:
    """In the component, before its exec: SIGKILL when the test process ends, however it ends (a pytest killed by
    a CI timeout or by hand runs no finalizer, so `stop()` never comes)."""
    _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL)


def _start(plane: ControlPlane, name: str, args: list[str]) -> None:
    """`name` started from .engine/bin in a session (and process group) of its own, its output in its log."""
    log = (plane.log_dir / f"{name}.log").open("wb")
    try:
        plane.processes[name] = subprocess.Popen(
            [str(BIN / name), *args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=plane.workdir,
            env={"PATH": "/usr/bin:/bin", "HOME": str(plane.workdir), **SUITE_DAY_ENV},  # the suite's rule
            start_new_session=True,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 - one system call of a function resolved before the fork
        )
    finally:
        log.close()


def _wait_http(
    plane: ControlPlane, name: str, url: str, ready: Callable[[requests.Response], bool], ca: Path | None = None
) -> None:
    """Polls `url` (https verified by `ca`, the component's self-signed certificate) until `ready` says so,
    while every component runs; a component that exits or stays unready for START_TIMEOUT seconds is one line
    naming it and its log."""

    def probe() -> bool | None:
        if ca is not None and not ca.exists():
            return None
        try:
            response = plane._session.get(url, verify=str(ca) if ca else True, timeout=5)
        except requests.RequestException:
            return None
        return True if ready(response) else None

    plane.wait_for(f"{name} ready at {url}", probe, START_TIMEOUT, component=name)
