"""The real Pulumi engine, run on a fresh copy of the project: the CLI that scripts/engine/build builds, a
local file backend with a passphrase, the provider doubles on PATH, and the SDK's inline language runtime
(tests/support/doubles/language_host.py) serving each `preview` and `up`.

Nothing here reaches a network: automatic plugin downloads are off, the update check is off, and the
environment the CLI gets is built from scratch (a HOME and PULUMI_HOME of its own, nothing inherited but
the locale), so no token or backend of the machine running the tests leaks in.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from support.day import SUITE_DAY_ENV
from support.paths import ROOT

if TYPE_CHECKING:
    from support.cluster import ControlPlane

ENGINE_BIN = ROOT / ".engine" / "bin"
PULUMI = ENGINE_BIN / "pulumi"
DOUBLES = ROOT / "tests" / "support" / "doubles"
PROVIDERS = ("scaleway", "kubernetes", "gitlab")
"""The packages the program uses: each served by a double (tests/support/doubles/provider.py), but for
kubernetes on a test cluster, which Pulumi's own provider serves (`EngineProject(cluster=...)`)."""
KUBERNETES_PROVIDER = ROOT / ".engine" / "providers" / "pulumi-resource-kubernetes"
"""Pulumi's Kubernetes provider (v4.25.0, scripts/engine/build; support.cluster.KUBERNETES_PROVIDER), on a
project's PATH when it has a cluster."""

NOT_BUILT = "the real Pulumi engine is not built here (scripts/engine/build, needs Go): tests/engine skipped"
PASSPHRASE = "engine-tests-passphrase"
PROGRAM_FILES = ("__main__.py", "Pulumi.yaml", "Pulumi.dev.yaml", "infra", "policy")
"""What `pulumi up` needs of the project: the program, its project and stack files, the policy pack."""
COMMAND_TIMEOUT = 600
STREAM_EVENTS = "PULUMI_ENABLE_STREAMING_JSON_PREVIEW"
"""With `--json`, `preview` prints the engine's events as they come instead of one document at the end."""
ANALYZER_LAUNCHER = ".engine-analyzer"
POLICY_PACK = f"policy/{ANALYZER_LAUNCHER}"
"""What `--policy-pack` names in the engine tests (see `EngineProject._write_analyzer_launcher`)."""


UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
"""How the engine prints a value not known before `up` (the cluster's id, in a preview)."""


def preview_steps(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The steps of a `preview --json` document, but for the stack's own."""
    return [s for s in document["steps"] if s["newState"]["type"] != "pulumi:pulumi:Stack"]


def known_differences(engine: Any, offline: Any, path: str = "") -> list[str]:
    """Where the preview's inputs differ from the plan's, other than a value the preview cannot know yet."""
    if engine == UNKNOWN:
        return []
    if isinstance(engine, dict) and isinstance(offline, dict):
        return [d for k in {*engine, *offline} for d in known_differences(engine.get(k), offline.get(k), f"{path}.{k}")]
    if isinstance(engine, list) and isinstance(offline, list) and len(engine) == len(offline):
        return [
            d
            for i, (e, o) in enumerate(zip(engine, offline, strict=True))
            for d in known_differences(e, o, f"{path}[{i}]")
        ]
    return [] if engine == offline else [f"{path}: engine {engine!r}, plan {offline!r}"]


def engine_built() -> bool:
    return PULUMI.is_file() and os.access(PULUMI, os.X_OK)


@dataclass(frozen=True)
class Result:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def __str__(self) -> str:
        return (
            f"pulumi {' '.join(self.args)} -> {self.returncode}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"
        )


class EngineError(AssertionError):
    pass


def copy_program(source: Path, dest: Path, files: Iterable[str] = PROGRAM_FILES) -> None:
    """The files `pulumi up` reads, copied (no virtualenvs, caches or state)."""
    ignore = shutil.ignore_patterns("venv", ".venv", "__pycache__", "*.pyc")
    for name in files:
        path = source / name
        if path.is_dir():
            shutil.copytree(path, dest / name, ignore=ignore)
        elif path.exists():
            shutil.copy2(path, dest / name)


@dataclass(frozen=True)
class TestCluster:
    """What a project deploys its Kubernetes half to: the control plane (its admin kubeconfig is what the
    Scaleway double's cluster returns), the chart repository the runner chart is installed from, and the GPU
    operator's objects as its chart renders them (the Kapsule double installs them with the first GPU pool)."""

    plane: ControlPlane
    chart_repository: str
    gpu_operator: Path


class EngineProject:
    """A project copy in `workdir/project` with its own backend, Pulumi home and doubles' records.

    With `cluster`, the Kubernetes half is real: Pulumi's Kubernetes provider (not the double) is on PATH, the
    Scaleway double's cluster is `cluster.plane` (its kubeconfig, through `GPU_CI_TEST_KUBECONFIG`) and does
    Kapsule's part there (tests/support/doubles/kapsule.py), and every platform the project's stack file gets
    installs the runner chart from `cluster.chart_repository` (`platform.runner.chart_repository`)."""

    def __init__(
        self, workdir: Path, source: Path = ROOT, *, stack: str = "dev", cluster: TestCluster | None = None
    ) -> None:
        self.workdir = workdir
        self.cluster = cluster
        self.project = workdir / "project"
        self.state = workdir / "state"
        self.records_dir = workdir / "records"
        self.stack = stack
        self.transcript: list[Result] = []
        """Every command run, with what it printed (the secrets test reads all of it)."""
        for folder in (self.project, self.state, self.records_dir, workdir / "home", workdir / "bin"):
            folder.mkdir(parents=True, exist_ok=True)
        copy_program(source, self.project)
        # The policy pack's venv (PulumiPolicy.yaml: `virtualenv: venv`) is the one running the tests: it has
        # pulumi-policy (requirements-dev.txt), as policy/requirements.txt asks.
        (self.project / "policy" / "venv").symlink_to(Path(sys.prefix), target_is_directory=True)
        self._write_doubles()
        self._write_analyzer_launcher()
        if cluster is not None:
            self.set_platform(
                yaml.safe_load(self.stack_file().read_text(encoding="utf-8"))["config"]["gpu-ci:platform"]
            )

    def _write_doubles(self) -> None:
        """`pulumi-resource-<package>` on PATH: a launcher of the double with this interpreter."""
        for package in PROVIDERS:
            launcher = self.workdir / "bin" / f"pulumi-resource-{package}"
            if package == "kubernetes" and self.cluster is not None:
                launcher.symlink_to(KUBERNETES_PROVIDER)
                continue
            launcher.write_text(
                f'#!/bin/sh\nexec "{sys.executable}" "{DOUBLES / "provider.py"}" {package} "$@"\n', encoding="utf-8"
            )
            launcher.chmod(0o755)

    def _write_analyzer_launcher(self) -> None:
        """`.engine-analyzer` in the copy's policy/: the pack as a binary analyzer (`--policy-pack POLICY_PACK`).

        The pinned engine runs a Python pack directory through the Python language host only (its RunPlugin:
        `python -u -m pulumi.policy <engine> <pack dir>` in the pack's venv, from the pack's directory), and
        that host cannot be built here. An executable given as `--policy-pack` the engine starts itself, with
        the engine's address, and it reads `PulumiPolicy.yaml` beside it. This launcher hands that call to
        Pulumi's own analyzer shim (`pulumi-analyzer-policy-python`, built into .engine/bin/) exactly as
        engines before the language host called it: the engine's arguments, the pack directory, then each
        runtime option of PulumiPolicy.yaml as `-name=value`, from the pack's directory."""
        policy = self.project / "policy"
        runtime = yaml.safe_load((policy / "PulumiPolicy.yaml").read_text(encoding="utf-8"))["runtime"]
        options = " ".join(f"-{k}={v}" for k, v in sorted((runtime.get("options") or {}).items()))
        launcher = policy / ANALYZER_LAUNCHER
        launcher.write_text(
            f'#!/bin/sh\ncd "$(dirname "$0")" && exec pulumi-analyzer-policy-python "$@" . {options}\n',
            encoding="utf-8",
        )
        launcher.chmod(0o755)

    @property
    def env(self) -> dict[str, str]:
        return {
            "PATH": os.pathsep.join([str(ENGINE_BIN), str(self.workdir / "bin"), "/usr/local/bin", "/usr/bin", "/bin"]),
            "HOME": str(self.workdir / "home"),
            "LANG": "C.UTF-8",
            "PULUMI_HOME": str(self.workdir / "home" / ".pulumi"),
            "PULUMI_BACKEND_URL": f"file://{self.state}",
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_DIY_BACKEND_NO_LEGACY_WARNING": "true",
            "GPU_CI_DOUBLES_RECORDS": str(self.records_dir),
            "GPU_CI_HOST_RECORDS": str(self.records_dir),
            "PYTHONDONTWRITEBYTECODE": "1",
            **SUITE_DAY_ENV,  # the program checks versions against the suite's day (support/day.py)
            **self._cluster_env(),
        }

    def _cluster_env(self) -> dict[str, str]:
        """What the Scaleway double's Kapsule part reads (tests/support/doubles/kapsule.py)."""
        if self.cluster is None:
            return {}
        return {
            "GPU_CI_TEST_KUBECONFIG": str(self.cluster.plane.kubeconfig_path),
            "GPU_CI_TEST_GPU_OPERATOR": str(self.cluster.gpu_operator),
            "GPU_CI_TEST_STACK_FILE": str(self.stack_file()),
        }

    def pulumi(
        self,
        *args: str,
        check: bool = True,
        stdin: str | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> Result:
        """Run the CLI in the project (or `cwd`); `preview` and `up` get a fresh language host (`--client`)."""
        command = [str(PULUMI), *args, "--non-interactive"]
        with self._host(args[0] in {"preview", "up"}) as client:
            if client:
                command += ["--client", client]
            done = subprocess.run(
                command,
                cwd=cwd or self.project,
                env={**self.env, **(env or {})},
                input=stdin,
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT,
                check=False,
            )
        result = Result(tuple(args), done.returncode, done.stdout, done.stderr)
        self.transcript.append(result)
        if check and result.returncode != 0:
            raise EngineError(str(result))
        return result

    @contextmanager
    def _host(self, needed: bool) -> Iterator[str | None]:
        if not needed:
            yield None
            return
        host = subprocess.Popen(
            [sys.executable, str(DOUBLES / "language_host.py"), str(self.project)],
            cwd=self.project,
            env={**self.env, "PYTHONPATH": ""},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert host.stdout is not None
            port = host.stdout.readline().strip()
            if not port.isdigit():
                host.kill()
                _, err = host.communicate(timeout=30)
                raise EngineError(f"the language host did not start: {port!r}\n{err}")
            yield f"127.0.0.1:{port}"
        finally:
            host.terminate()
            try:
                out, err = host.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                host.kill()
                out, err = host.communicate()
            self.transcript.append(Result(("(language host)",), host.returncode or 0, out, err))

    def set_platform(self, platform: dict[str, Any]) -> None:
        """The stack file with another `gpu-ci:platform` (its other keys kept; its comments are not)."""
        document = yaml.safe_load(self.stack_file().read_text(encoding="utf-8"))
        if self.cluster is not None:
            runner = {**platform.get("runner", {}), "chart_repository": self.cluster.chart_repository}
            platform = {**platform, "runner": runner}
        document["config"]["gpu-ci:platform"] = platform
        self.stack_file().write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")

    def preview_events(self, *args: str) -> tuple[Result, list[dict[str, Any]]]:
        """`pulumi preview --json` with the engine's events streamed (one JSON object a line: `policyEvent`,
        `resourcePreEvent`, `summaryEvent`, ...), and those events."""
        result = self.pulumi("preview", "--json", *args, check=False, env={STREAM_EVENTS: "true"})
        return result, [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]

    def init_stack(self, secrets: dict[str, str] | None = None) -> None:
        """`pulumi stack init` with the passphrase provider, then each secret set with `config set --secret`."""
        self.pulumi("stack", "init", self.stack, "--secrets-provider", "passphrase")
        for key, value in (secrets or {}).items():
            self.pulumi("config", "set", "--secret", key, "--stack", self.stack, stdin=value)

    def program_runs(self) -> list[dict[str, Any]]:
        """What the language host was asked to run: each Run's config (secrets as `[secret]`)."""
        return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(self.records_dir.glob("run-*.json"))]

    def records(self, method: str | None = None, provider: str | None = None) -> list[dict[str, Any]]:
        """What the doubles received, in the order each process got it."""
        found = []
        for path in sorted(self.records_dir.glob("*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                record = json.loads(line)
                if (method is None or record["method"] == method) and (
                    provider is None or record["provider"] == provider
                ):
                    found.append(record)
        return found

    def clear_records(self) -> None:
        for path in [*self.records_dir.glob("*.jsonl"), *self.records_dir.glob("run-*.json")]:
            path.unlink()

    def stack_file(self) -> Path:
        return self.project / f"Pulumi.{self.stack}.yaml"
