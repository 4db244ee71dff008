"""Offline plans of the real program, for the tests that read them: the JSON document as `plan --json`
writes it, and the `plan` command's output run once per session."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.__main__ import main
from infra.cli.plan import plan_document
from infra.model.platform import load_platform
from infra.offline.harness import ProgramRun, run_program
from infra.offline.policy_check import policy_report
from infra.offline.stack_config import StackConfig
from infra.sim.weeks import simulate_weeks


def plan_json(config: StackConfig, run: ProgramRun) -> dict[str, Any]:
    """The plan document of `run`, through JSON as `plan --json` writes it."""
    document = plan_document(config, run.namespace["platform"], run.namespace["day"], run)
    return json.loads(json.dumps(document, sort_keys=True, default=str))


def plan_json_with(config: StackConfig, platform: dict[str, Any]) -> dict[str, Any]:
    """The plan document of the real program run on `config` with another `platform`."""
    config = config.with_values({"platform": platform})
    return plan_json(config, run_program(config))


def full_plan_json(config: StackConfig) -> dict[str, Any]:
    """The plan document `plan --json` prints for `config`: the program's run, its simulated weeks and the policy
    pack's verdict (what CI's plan-diff job compares), in-process."""
    run = run_program(config)
    weeks = simulate_weeks(load_platform(config.get("platform")))
    verdict = policy_report(run)
    document = plan_document(config, run.namespace["platform"], run.namespace["day"], run, verdict, weeks=weeks)
    return json.loads(json.dumps(document, sort_keys=True, default=str))


@dataclass(frozen=True)
class CommandRun:
    """What one `python -m infra ...` call returned and printed."""

    code: int
    out: str
    err: str


def run_command(*args: str) -> CommandRun:
    """Run the command line in-process, as `python -m infra ARGS` does, and keep what it printed."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return CommandRun(code, out.getvalue(), err.getvalue())


@dataclass(frozen=True)
class PlanRun(CommandRun):
    artifacts: Path
    """The directory `plan --out` wrote its artifacts to."""
