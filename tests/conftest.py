"""Shared fixtures: a fresh event loop per test, Pulumi mocks that reset, the dev stack's config, and its runs.

The Pulumi SDK and the program are imported inside the fixtures and hooks, not here: the xdist controller
imports this file before it starts the workers, and it runs no test.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import gc
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

# Where the environment says not to write bytecode (PYTHONDONTWRITEBYTECODE), each worker would compile the
# project's modules and rewrite the asserts of its 100 test modules again at every run (about 1.5 s a worker): the
# suite writes them where Python does by default, in `__pycache__` beside each source (git ignores them). Not under
# a `sys.pycache_prefix`: that moves every module's bytecode, the standard library's and the installed packages'
# too, and a fresh clone's first run would compile all of them (some 5 s more).
if sys.dont_write_bytecode:
    sys.dont_write_bytecode = False

import yaml  # after the bytecode's place is set
from support.day import SUITE_DAY, TODAY_VARIABLE
from support.paths import ROOT, TESTS

ENGINE_TESTS = TESTS / "engine"

if TYPE_CHECKING:
    from support.cluster import ControlPlane
    from support.deployed import DeployedStack
    from support.engine import TestCluster
    from support.plans import PlanRun

    from infra.offline.harness import ProgramRun
    from infra.offline.mocks import RecordingMonitor
    from infra.offline.stack_config import StackConfig


# Importing the SDKs and collecting the tests make some 300,000 long-lived objects. The cyclic GC would scan
# them again in every full collection until the worker exits: it stays off until collection is done, and
# then they are frozen out of its sight (`gc.freeze`). Objects the tests make are collected as usual. (The
# xdist controller, which collects nothing, keeps it off: it makes few objects.)
gc.disable()
GC_THRESHOLDS = (50_000, 20, 20)
"""Allocations before a young collection, and young collections before an older one (CPython's: 700, 10, 10).
The tests make millions of short-lived objects (a recommendation's search, a workload's requests) that their
reference counts free, and every full collection rescans what the session keeps (its shared runs and plans):
with the defaults, collections took some 10 % of the suite's time."""

# The program checks the cluster's Kubernetes version against Scaleway's withdrawal dates on the day it runs:
# every run under test (and every `plan` it starts in a subprocess) runs on this day, never the calendar's
# (tests/support/day.py).
os.environ[TODAY_VARIABLE] = SUITE_DAY


def pytest_collection_finish(session: pytest.Session) -> None:
    """The end of the import-heavy phase: see `gc.disable()` above."""
    from pulumi.runtime import settings

    # A test that forgets the `pulumi_mocks` fixture must not inherit what a test module set on import.
    settings.reset_options()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    gc.enable()


ENGINE_TIMEOUT = 900
"""Seconds a test of tests/engine may take, setup included (the stack-file corpus: some 200 CLI runs)."""


LONGEST_FIRST = (
    "tests/sim/test_recommend.py",
    "tests/repo/test_repo_plan_diff_job.py",
    "tests/config/test_hostile_config.py",
    "tests/offline/test_plan.py",
    "tests/policy/test_pack.py",
    "tests/repo/test_pytest_timeout.py",
    "tests/sim/test_feedback_time.py",
    "tests/workload/test_workload_traces.py",
)
"""The modules that take a second or more (`scripts/measure_suite.py`), longest first: they go to the workers
first, so that no long module starts last on one worker while the other has finished (the wall time is the
busier worker's). The other modules follow, those with more tests first (xdist's own order, which
pyproject's `--no-loadscope-reorder` hands over to this one); tests/engine's, when the engine is built, before
all: minutes each."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The modules in the order above. tests/engine: each module runs in one worker (pyproject's
    `--dist loadfile`), so a module's shared deployment (one `up` read by several tests) runs once, while two
    modules may run side by side; and all of them skipped, for one reason, where the real engine is not built.
    Their budget is their own (ENGINE_TIMEOUT, not the suite's minute): a module's first test pays for its shared
    deployments, many CLI runs."""
    from support.engine import NOT_BUILT, engine_built

    built = engine_built()
    items[:] = _longest_first(items, built)
    for item in items:
        if ENGINE_TESTS not in item.path.parents:
            continue
        item.add_marker(pytest.mark.timeout(ENGINE_TIMEOUT))
        if not built:
            item.add_marker(pytest.mark.skip(reason=NOT_BUILT))


def _longest_first(items: list[pytest.Item], engine: bool) -> list[pytest.Item]:
    """`items` by module in `LONGEST_FIRST`'s order (a module's own order kept); a name there that names no
    module is an error, not a silent no-op."""
    modules: dict[Path, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.path, []).append(item)
    listed = {ROOT / name: rank for rank, name in enumerate(LONGEST_FIRST)}
    if missing := [str(path.relative_to(ROOT)) for path in listed if not path.is_file()]:
        raise pytest.UsageError(f"tests/conftest.py LONGEST_FIRST names no module: {', '.join(missing)}")

    def rank(path: Path) -> tuple[int, int]:
        if engine and ENGINE_TESTS in path.parents:
            return -1, -len(modules[path])
        return listed.get(path, len(listed)), -len(modules[path])

    return [item for path in sorted(modules, key=rank) for item in modules[path]]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line, where the real engine is not built, saying why tests/engine was skipped (see the hook above)."""
    from support.engine import NOT_BUILT

    skipped = [r for r in terminalreporter.stats.get("skipped", []) if NOT_BUILT in str(r.longrepr)]
    if skipped:
        terminalreporter.write_line(f"{len(skipped)} skipped: {NOT_BUILT}")


@pytest.fixture(autouse=True)
def _event_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """A new event loop per test: Pulumi binds futures to the current loop, and a loop shared between
    tests leaks pending registrations from one test into the next (and fails outright on Python 3.14)."""
    loop = asyncio.new_event_loop()
    created: list[asyncio.Task[Any]] = []
    loop.set_task_factory(functools.partial(_recorded_task, created))
    asyncio.set_event_loop(loop)
    yield loop
    pending = [task for task in created if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    asyncio.set_event_loop(None)
    loop.close()


def _recorded_task(
    created: list[asyncio.Task[Any]], loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any
) -> asyncio.Task[Any]:
    """The loop's tasks, as asyncio makes them, kept for the test's end (`asyncio.all_tasks` would walk every task
    the worker still holds, hundreds, at every test)."""
    task = asyncio.Task(coro, loop=loop, **kwargs)
    created.append(task)
    return task


@pytest.fixture
def pulumi_mocks() -> Iterator[RecordingMonitor]:
    """Mocks for component tests; set_mocks is process-global and Pulumi has no unset, hence the reset."""
    from pulumi.runtime import mocks as runtime_mocks
    from pulumi.runtime import settings

    from infra.offline.mocks import RecordingMocks, RecordingMonitor

    monitor = RecordingMonitor(RecordingMocks())
    runtime_mocks.set_mocks(monitor.mocks, project="gpu-ci", stack="test", preview=False, monitor=monitor)
    yield monitor
    settings.reset_options()


@pytest.fixture(scope="session")
def dev_stack() -> StackConfig:
    """The committed Pulumi.dev.yaml: the dev stack's config is what the whole-program tests run."""
    from infra.offline.stack_config import load_stack_config

    return load_stack_config("dev")


@pytest.fixture(scope="session")
def dev_run(dev_stack: StackConfig) -> ProgramRun:
    """One run of the whole program on the dev stack, shared by the tests that only read what it registered
    (each test that edits the config runs its own)."""
    from infra.offline.harness import run_program

    return run_program(dev_stack)


@pytest.fixture
def dev_platform(dev_stack: StackConfig) -> dict[str, Any]:
    """A private copy of the dev `platform` object, for tests that break or extend it."""
    return copy.deepcopy(dev_stack.get("platform"))


@pytest.fixture
def stack_file(tmp_path: Path) -> Callable[[dict[str, Any]], Path]:
    """Writes a copy of Pulumi.dev.yaml (its secure values included) with another `platform`; returns its path."""

    def write(platform: dict[str, Any], name: str = "Pulumi.edited.yaml") -> Path:
        document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text(encoding="utf-8"))
        document["config"]["gpu-ci:platform"] = platform
        path = tmp_path / name
        path.write_text(json.dumps(document, indent=2), encoding="utf-8")  # JSON is YAML, every string quoted
        return path

    return write


@pytest.fixture(scope="session")
def dev_plan(tmp_path_factory: pytest.TempPathFactory) -> PlanRun:
    """`python -m infra plan --out DIR` on the dev stack, run once for the tests that read its text and files."""
    from support.plans import PlanRun, run_command

    artifacts = tmp_path_factory.mktemp("plan-out")
    run = run_command("plan", "--stack", "dev", "--out", str(artifacts))
    return PlanRun(run.code, run.out, run.err, artifacts)


@pytest.fixture(scope="session")
def dev_plan_json_text() -> tuple[int, str]:
    """`python -m infra plan --json` on the dev stack, run once: its exit code and what it printed."""
    from support.plans import run_command

    run = run_command("plan", "--json")
    return run.code, run.out


@pytest.fixture(scope="session")
def dev_plan_json(dev_plan_json_text: tuple[int, str]) -> tuple[int, dict[str, Any]]:
    """The same run: its exit code and the document it printed."""
    code, text = dev_plan_json_text
    return code, json.loads(text)


@pytest.fixture(scope="session")
def dev_plan_document(dev_stack: StackConfig, dev_run: ProgramRun) -> dict[str, Any]:
    """The plan document of the shared dev run, as `plan --json` writes it (the base side of plan diffs)."""
    from support.plans import plan_json

    return plan_json(dev_stack, dev_run)


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """The test cluster of tests/engine (tests/support/cluster.py): one per worker that asks for it, started at
    its first use and stopped at the session's end whatever the outcome; skipped, in one line, where it is not
    built."""
    from support import cluster
    from support.cluster import SKIP_REASON

    if absent := cluster.missing():
        pytest.skip(f"{SKIP_REASON}; missing: {', '.join(absent)}")
    with cluster.start_control_plane(tmp_path_factory.mktemp("control-plane")) as plane:
        yield plane


@pytest.fixture(scope="session")
def test_cluster(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestCluster]:
    """The session's control plane as a test cluster (support.deployed.serve_test_cluster): the runner chart's
    repository on loopback and the GPU operator's objects for the Kapsule double."""
    from support.deployed import serve_test_cluster

    with serve_test_cluster(control_plane, tmp_path_factory.mktemp("test-cluster")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def deployed_dev(test_cluster: TestCluster, tmp_path_factory: pytest.TempPathFactory) -> DeployedStack:
    """The engine tests' shared deployment: the dev stack deployed once per worker, by the real engine and
    Pulumi's own Kubernetes provider, to the test cluster; Scaleway and GitLab are the doubles (the Scaleway
    double's cluster is the test cluster, where it does Kapsule's part: tests/support/doubles/kapsule.py).
    `preview --policy-pack`, `up`, then `preview --expect-no-changes` and `refresh --expect-no-changes`, each
    result kept for the tests and none asserted here. Its interface: support.deployed.DeployedStack."""
    from support.deployed import DEV_SECRETS, DeployedStack
    from support.engine import POLICY_PACK, EngineProject

    project = EngineProject(tmp_path_factory.mktemp("engine-dev"), cluster=test_cluster)
    project.init_stack(DEV_SECRETS)
    preview = project.pulumi("preview", "--json", "--policy-pack", POLICY_PACK, check=False)
    (program_run,) = project.program_runs()
    project.clear_records()
    up = project.pulumi("up", "--yes", "--skip-preview", "--policy-pack", POLICY_PACK, check=False)
    up_records = project.records()
    preview_again = project.pulumi("preview", "--expect-no-changes", "--diff", check=False)
    refresh = project.pulumi("refresh", "--yes", "--expect-no-changes", "--skip-preview", check=False)
    shown = project.pulumi("stack", "output", "--json", "--show-secrets", check=False)
    project.transcript.pop()  # the secrets it shows are not the transcript's (the secrets audit reads it)
    outputs = json.loads(shown.stdout) if shown.returncode == 0 else {}
    return DeployedStack(
        project=project,
        plane=test_cluster.plane,
        kubeconfig=test_cluster.plane.kubeconfig_path,
        stack_dir=project.project,
        outputs=outputs,
        preview=preview,
        up=up,
        up_records=up_records,
        preview_again=preview_again,
        refresh=refresh,
        program_run=program_run,
    )
