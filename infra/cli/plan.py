"""`python -m infra plan`: the whole program under recording mocks, printed for a reader.

No cloud account, credentials or Pulumi CLI: the stack's config is read from `Pulumi.<stack>.yaml`, the
real `__main__.py` runs in-process, and every registered resource is listed with its key inputs, followed
by the capacity report and the stack outputs. Secrets are shown as `[secret]`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pulumi

from infra.cli import fail, real_folder, shown_path, stack_file_shown, write_file
from infra.cli.background import in_background
from infra.config.errors import SpecError
from infra.model.platform import Platform, load_platform
from infra.offline.harness import ProgramRun, run_program
from infra.offline.mocks import RESOURCE_TYPES, RecordedResource, mask_secrets
from infra.offline.policy_check import Violation, policy_report
from infra.offline.stack_config import StackConfig, StackFileError, load_stack_config, stack_file
from infra.offline.stacks import stack_collisions
from infra.render.artifacts import render_artifacts
from infra.render.plan_summary import plan_summary
from infra.render.report import capacity_rows, render_report
from infra.render.text import WIDTH, render_table, wrap_text
from infra.sim.week import CostReport
from infra.sim.weeks import WeeksReport, simulate_weeks
from infra.untrusted import printable

MAX_CELL = 110
KEY_INDENT = "  "
"""The key inputs sit under their resource's type, this much deeper."""
PROGRAM_COMPONENTS = "infra.cloud.platform"
"""The module whose import (the provider SDKs') the weeks overlap, run in a child (`infra.cli.background`)."""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("plan", help="run the program offline under mocks and show what it would create")
    parser.add_argument("--stack", default="dev", help="stack whose Pulumi.<stack>.yaml to use (default: dev)")
    parser.add_argument("--config", type=Path, help="use this stack file instead of Pulumi.<stack>.yaml")
    parser.add_argument("--out", type=Path, help="write the rendered artifacts to this directory")
    parser.add_argument("--json", action="store_true", help="print a machine-readable plan (for diffs)")
    parser.set_defaults(handler=main)


def _out_problem(out: Path | None) -> str | None:
    """Why `--out` cannot take the artifacts, said before the program runs; None when it can (or is not given)."""
    if out is None:
        return None
    try:
        if out.is_symlink():
            return "it is a symlink, not followed (--out writes into real folders only)"
        if out.exists() and not out.is_dir():
            return "it is not a directory (--out names where the artifacts go)"
    except OSError as err:
        return str(err.strerror or err)
    return None


def main(args: argparse.Namespace) -> int:
    if why := _out_problem(args.out):
        return fail(f"--out {shown_path(args.out)}: cannot be written: {why}")
    try:
        config = load_stack_config(args.stack, path=args.config)
    except (FileNotFoundError, StackFileError) as err:
        return fail(str(err))
    # the target over slo.weeks weeks (the program simulates only the first): on the other core while the program
    # imports its components and the provider SDKs
    pending = in_background(lambda: _weeks(config), while_importing=PROGRAM_COMPONENTS)
    run = run_program(config, check=False, stack_file=stack_file_shown(args.stack, args.config))
    weeks = pending.result()
    if run.error is not None:
        if not isinstance(run.error, pulumi.RunError):
            raise run.error
        return fail("\n".join(config.located(line) for line in str(run.error).splitlines()))
    platform: Platform = run.namespace["platform"]  # derived once, by the program itself
    day: CostReport | None = run.namespace["day"]  # and its week simulated once
    path = stack_file(args.stack, path=args.config)
    if collisions := stack_collisions(platform, path):  # what it shares with the project's other stacks
        for problem in collisions:
            print(f"error: {printable(str(problem), None)}", file=sys.stderr)
        return 2
    verdict = policy_report(run)
    artifacts = render_artifacts(platform, day, weeks)
    if args.out:
        try:
            write_artifacts(args.out, artifacts)
        except OSError as err:  # a file, a device, a name too long, a directory that cannot be written
            where = f" ({shown_path(err.filename)})" if err.filename and str(err.filename) != str(args.out) else ""
            return fail(f"--out {shown_path(args.out)}: cannot be written{where}: {err.strerror or err}")
    if args.json:  # JSON escapes every control character itself
        document = plan_document(config, platform, day, run, verdict, weeks=weeks)
        json.dump(document, sys.stdout, indent=2, sort_keys=True, default=str)
        sys.stdout.write("\n")
    else:
        shown = render_plan(config, platform, day, run, out=args.out, artifacts=artifacts, verdict=verdict, weeks=weeks)
        sys.stdout.write(shown)
    blocking = [v for v in verdict if v.level == "mandatory"]
    for violation in blocking:
        print(f"error: {printable(str(violation), None)}", file=sys.stderr)
    return 1 if blocking else 0


def _weeks(config: StackConfig) -> WeeksReport | None:
    """The stack's simulated weeks (`infra.sim.weeks`); None without a workload or with a spec the program
    refuses (it says why)."""
    try:
        return simulate_weeks(load_platform(config.get("platform")))
    except SpecError:
        return None


def write_artifacts(out: Path, artifacts: dict[str, str]) -> None:
    """Each artifact under the directory `out` (created); OSError where one cannot be written, or where `out` or
    a folder in it is a symlink (an MR could commit `plan-out -> elsewhere`)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    for name, text in artifacts.items():
        folder = out
        real_folder(folder, "--out")
        for part in Path(name).parent.parts:
            folder = folder / part
            real_folder(folder, "--out")
        write_file(out / name, text)


def ordered(run: ProgramRun) -> list[RecordedResource]:
    """Registration order depends on the event loop; URN order is stable and groups children."""
    return sorted(run.resources, key=lambda r: r.urn)


def plan_document(
    config: StackConfig,
    platform: Platform,
    day: CostReport | None,
    run: ProgramRun,
    verdict: list[Violation] | None = None,
    *,
    weeks: WeeksReport | None = None,
) -> dict[str, Any]:
    """The plan as data, secrets masked: what `--json` prints and what MR diffs compare; `weeks` the target
    over the simulated weeks (`infra.sim.weeks`)."""
    return {
        "project": config.project,
        "stack": config.stack,
        "resources": [
            {
                "type": r.type,
                "name": r.name,
                "urn": r.urn,
                "custom": r.custom,
                "inputs": displayable(r.inputs),
                "options": {k: v for k, v in r.options.items() if k != "dependencies"},
            }
            for r in ordered(run)
        ],
        "outputs": {
            name: "[secret]" if out.secret else displayable(out.value) for name, out in sorted(run.outputs.items())
        },
        "capacity": capacity_rows(platform),
        "gpu_quota": {
            "nodes_by_type": platform.gpu_nodes_at_once,
            "nodes": sum(platform.gpu_nodes_at_once.values()),
            "gpus": platform.gpus_at_once,
        },
        "report": render_report(platform, day, weeks),
        "weeks": None if weeks is None else weeks.as_json(),
        "warnings": [*_warnings(run, weeks), *(str(v) for v in verdict or [])],
        "policy": [v.__dict__ for v in verdict or []],
    }


def render_plan(
    config: StackConfig,
    platform: Platform,
    day: CostReport | None,
    run: ProgramRun,
    *,
    out: Path | None,
    artifacts: dict[str, str],
    verdict: list[Violation] | None = None,
    weeks: WeeksReport | None = None,
) -> str:
    resources = ordered(run)
    warnings = _warnings(run, weeks)
    names = [r.name + _flags(r) for r in resources]
    cell = WIDTH - max(map(len, names)) - 2 - len(KEY_INDENT)  # the key inputs under the type, within WIDTH
    rows = []
    for r, name in zip(resources, names, strict=True):
        rows.append((name, r.type))
        rows.extend(("", KEY_INDENT + line) for line in _pack(_key_inputs(r, cell), cell))
    parts = [
        f"gpu-ci plan - stack {config.stack!r}, offline (Pulumi mocks: no cloud, no credentials, no CLI)\n",
        *(f"{line}\n" for line in plan_summary(resources, day, weeks, verdict, warnings)),
        "\n",
        f"Resources ({sum(1 for r in resources if r.custom)} resources, "
        f"{sum(1 for r in resources if not r.custom)} components):\n",
        render_table(("name", "type, then its key inputs"), rows, WIDTH),
        "\n",
        render_report(platform, day, weeks),
    ]
    if warnings:
        parts.append("\nWarnings:\n" + "".join(f"  - {printable(w, None)}\n" for w in warnings))
    if verdict is not None:
        shown = "".join(f"  - {printable(str(v), None)}\n" for v in verdict) or "  no violation\n"
        parts.append("\nPolicy pack (policy/, over these resources):\n" + shown)
    parts.append("\nStack outputs:\n")
    for name, output in sorted(run.outputs.items()):
        shown = "[secret]" if output.secret else _compact(displayable(output.value))
        parts.append(f"  {name} = {_clip(shown, WIDTH - len(name) - 5)}\n")
    if out:
        parts.append(f"\nArtifacts written to {shown_path(out, 1_000)}: {', '.join(sorted(artifacts))}\n")
    else:
        parts.append(f"\nArtifacts (write them with --out DIR): {', '.join(sorted(artifacts))}\n")
    # the last gate: a value of the spec is shown, never obeyed; then every line within WIDTH
    return wrap_text(printable("".join(parts), None, keep="\n"))


def _warnings(run: ProgramRun, weeks: WeeksReport | None) -> list[str]:
    """The program's warnings (the spec's), then the target missed over the weeks."""
    return [
        *(message for level, message in run.logs if level == "warning"),
        *(str(w) for w in (weeks.warnings() if weeks is not None else [])),
    ]


def _flags(resource: RecordedResource) -> str:
    flags = []
    if resource.options.get("read"):
        flags.append("read")
    if resource.options.get("protect"):
        flags.append("protected")
    if resource.options.get("ignore_changes"):
        flags.append("ignores " + ",".join(resource.options["ignore_changes"]))
    return f" [{'; '.join(flags)}]" if flags else ""


def _key_inputs(resource: RecordedResource, width: int = MAX_CELL) -> list[str]:
    """One `key=value` cell per key input that is set (each within `width`), for continuation rows of the table."""
    kind = RESOURCE_TYPES.get(resource.type)
    if kind is None:
        return []
    shown = displayable(resource.inputs)
    return [
        _clip(f"{key}={_compact(shown[key])}", width)
        for key in kind.key_inputs
        if shown.get(key) not in (None, "", [], {})
    ]


def _pack(cells: list[str], width: int = MAX_CELL) -> list[str]:
    """Greedy-wrap cells into lines of at most `width` characters."""
    lines: list[str] = []
    for cell in cells:
        if lines and len(lines[-1]) + 2 + len(cell) <= width:
            lines[-1] += "  " + cell
        else:
            lines.append(cell)
    return lines


def displayable(value: Any) -> Any:
    """Secrets masked, and whole numbers as ints (the wire carries every number as a double)."""
    value = mask_secrets(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: displayable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [displayable(v) for v in value]
    return value


def _compact(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _clip(text: str, width: int = MAX_CELL) -> str:
    """A cell: escaped before the table measures it (a value's ESC or newline would break its columns)."""
    return printable(text, max(width, 8) - 1)
