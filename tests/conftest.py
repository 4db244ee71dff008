"""Shared fixtures: a fresh event loop per test, Pulumi mocks that reset, and the dev stack's config."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi.runtime import mocks as runtime_mocks
from pulumi.runtime import settings

from infra.offline.harness import ProgramRun, run_program
from infra.offline.mocks import RecordingMocks, RecordingMonitor
from infra.offline.stack_config import PROJECT_ROOT, StackConfig, load_stack_config

# A test that forgets the `pulumi_mocks` fixture must not inherit another test's monitor.
settings.reset_options()


@pytest.fixture(autouse=True)
def _event_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """A new event loop per test: Pulumi binds futures to the current loop, and a loop shared between
    tests leaks pending registrations from one test into the next (and fails outright on Python 3.14)."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield loop
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    asyncio.set_event_loop(None)
    loop.close()


@pytest.fixture
def pulumi_mocks() -> Iterator[RecordingMonitor]:
    """Mocks for component tests; set_mocks is process-global and Pulumi has no unset, hence the reset."""
    monitor = RecordingMonitor(RecordingMocks())
    runtime_mocks.set_mocks(monitor.mocks, project="gpu-ci", stack="test", preview=False, monitor=monitor)
    yield monitor
    settings.reset_options()


@pytest.fixture(scope="session")
def dev_stack() -> StackConfig:
    """The committed Pulumi.dev.yaml: the dev stack's config is what the whole-program tests run."""
    return load_stack_config("dev")


@pytest.fixture(scope="session")
def dev_run(dev_stack: StackConfig) -> ProgramRun:
    """One run of the whole program on the dev stack, shared by the tests that only read what it registered
    (each test that edits the config runs its own)."""
    loop = asyncio.new_event_loop()
    try:
        return run_program(dev_stack)
    finally:
        loop.close()


@pytest.fixture
def dev_platform(dev_stack: StackConfig) -> dict[str, Any]:
    """A private copy of the dev `platform` object, for tests that break or extend it."""
    return copy.deepcopy(dev_stack.get("platform"))


@pytest.fixture
def stack_file(tmp_path: Path) -> Callable[[dict[str, Any]], Path]:
    """Writes a copy of Pulumi.dev.yaml (its secure values included) with another `platform`; returns its path."""

    def write(platform: dict[str, Any], name: str = "Pulumi.edited.yaml") -> Path:
        document = yaml.safe_load((PROJECT_ROOT / "Pulumi.dev.yaml").read_text(encoding="utf-8"))
        document["config"]["gpu-ci:platform"] = platform
        path = tmp_path / name
        path.write_text(yaml.safe_dump(document), encoding="utf-8")
        return path

    return write
