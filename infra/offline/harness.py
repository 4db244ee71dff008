"""Run the real `__main__.py` once, in-process, under the recording mocks, and collect what it did.

This is what `pulumi preview` would execute, minus the engine and the providers: the same program,
the same stack config, every registration recorded with its inputs and options, every stack output
resolved (and whether it is secret). Each run gets a fresh event loop and fresh Pulumi settings.

One deliberate difference: a stack secret still at its committed placeholder (`infra.config.registry`), which
`pulumi preview` and `up` refuse, is handed to the program as a secret it cannot read, as a `secure:` value is
(neither can be decrypted offline), and the run warns that the engine will stop on it, where the program needs it.

The cyclic GC is paused while the program runs: the event loop makes thousands of short-lived handles, and each
full collection they trigger would rescan the SDKs' ~300,000 long-lived objects (a tenth of `plan`'s time). The
run makes little cyclic garbage; what it makes is collected when the GC resumes.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import runpy
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import settings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from infra.config.registry import committed_placeholder
from infra.config.stack_keys import shown_as
from infra.offline.mocks import RecordedResource, RecordingMocks, RecordingMonitor
from infra.offline.stack_config import PROJECT_ROOT, StackConfig


@dataclass(frozen=True)
class StackOutput:
    value: Any
    secret: bool


@dataclass
class ProgramRun:
    """Everything one run registered, exported and logged."""

    resources: list[RecordedResource]
    outputs: dict[str, StackOutput]
    logs: list[tuple[str, str]] = field(default_factory=list)
    """(level, message) pairs the program logged through pulumi.log."""
    error: BaseException | None = None
    """What the program raised (e.g. pulumi.RunError for an invalid spec), when run with check=False."""
    namespace: dict[str, Any] = field(default_factory=dict)
    """The program's module globals after it ran (`platform`, the derived model, for the offline report)."""

    def by_type(self, type_token: str) -> list[RecordedResource]:
        return [r for r in self.resources if r.type == type_token]

    def one(self, type_token: str, name: str) -> RecordedResource:
        found = [r for r in self.resources if r.type == type_token and r.name == name]
        if len(found) != 1:
            names = sorted(r.name for r in self.by_type(type_token))
            raise LookupError(f"{len(found)} {type_token} named {name!r}; registered: {names}")
        return found[0]


class _ListHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record.levelname.lower(), record.getMessage()))


def run_program(
    config: StackConfig,
    program: Path = PROJECT_ROOT / "__main__.py",
    *,
    check: bool = True,
    stack_file: str | None = None,
) -> ProgramRun:
    """Run `program` with `config`. What the program raises is re-raised, or kept in `error` if not `check`;
    `stack_file` the file its config errors name (`plan --config FILE`'s), `Pulumi.<stack>.yaml` if None."""
    with shown_as(stack_file):
        return _run(config, program, check=check)


def _run(config: StackConfig, program: Path, *, check: bool) -> ProgramRun:
    config, placeholders = _without_placeholders(config)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    handler = _ListHandler()
    logger = logging.getLogger(f"gpu-ci.offline.{id(handler)}")
    logger.propagate = False
    logger.addHandler(handler)
    mocks = RecordingMocks()
    monitor = RecordingMonitor(mocks)
    namespace: dict[str, Any] = {}
    collecting = gc.isenabled()
    gc.disable()
    try:
        pulumi_mocks.set_mocks(
            mocks, project=config.project, stack=config.stack, preview=False, logger=logger, monitor=monitor
        )
        pulumi.runtime.set_all_config(config.as_pulumi_config(), list(config.secret_keys))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # pulumiverse_scaleway's legacy modules
            try:
                _sync_await(
                    run_pulumi_func(lambda: namespace.update(runpy.run_path(str(program), run_name="__main__")))
                )
            except Exception as err:
                if check:
                    raise
                return ProgramRun(list(monitor.recorded), {}, handler.records, err)
            outputs = loop.run_until_complete(_resolve_outputs())
        platform = namespace.get("platform")
        needed = {config.namespaced(key) for key in platform.spec.secret_config_keys()} if platform else set()
        logs = [*handler.records, *(("warning", why) for key, why in placeholders.items() if key in needed)]
        return ProgramRun(list(monitor.recorded), outputs, logs, namespace=namespace)
    finally:
        settings.reset_options()
        pulumi.runtime.set_all_config({})
        logger.removeHandler(handler)
        asyncio.set_event_loop(None)
        loop.close()
        if collecting:
            gc.enable()


def _without_placeholders(config: StackConfig) -> tuple[StackConfig, dict[str, str]]:
    """`config` with each committed placeholder made a secret the program cannot read, and why each stops the
    engine (by full key)."""
    placeholders = {
        key: why for key, value in config.values.items() if (why := committed_placeholder(key, value)) is not None
    }
    if not placeholders:
        return config, {}
    unreadable = {key: f"[secret {key} - the stack file's placeholder, not a key]" for key in placeholders}
    return config.with_values(unreadable, secret_keys=tuple(placeholders)), placeholders


async def _resolve_outputs() -> dict[str, StackOutput]:
    root = settings.get_root_resource()
    resolved = {}
    for name, value in (getattr(root, "outputs", None) or {}).items():
        output = pulumi.Output.from_input(value)
        resolved[name] = StackOutput(await output.future(), await output.is_secret())
    return resolved
