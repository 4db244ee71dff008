"""Real one-key changes of the committed Pulumi.dev.yaml, through `plan --json`, `plan-diff` and `mr-note` as CI's
plan-diff job runs them: the diff leads with the resources, fits a screen, and the note's visible part too.

Each variant is the committed stack file with one key edited (`infra.offline.stack_edit`, as `recommend --write`
edits it), planned once for the module (the program, its simulated weeks, the policy pack); the base is the
session's `plan --json` of the dev stack.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.paths import ROOT
from support.plans import full_plan_json, run_command

from infra.offline.stack_config import load_stack_config
from infra.offline.stack_edit import Change, set_keys
from infra.review.note import GITLAB_NOTE_LIMIT, SCREEN_LINES, NoteInput, render_note, visible_lines

MAX_DIFF_LINES = 43
"""About one screen: the longest of these five (the replicas: three resources, two texts, a replacement) is 43."""
MAX_COLUMNS = 120

CHANGES: dict[str, tuple[list[Change], str]] = {
    "pool-max-size": ([(("pools", "ci-compile", "max_size"), 2)], "~    maxSize: 1 => 2"),
    "profile-memory": (
        [(("profiles", "supervised", "memory_limit"), "32Gi")],
        "+            KUBERNETES_MEMORY_LIMIT: 32Gi",
    ),
    "sharing-replicas": (
        [(("pools", "ci-training", "gpu_sharing", "replicas"), 3)],
        "+- kubernetes:core/v1:ConfigMap  gpu-sharing-config  (replace, because of data)",
    ),
    "new-pool": (
        [(("pools", "ci-extra"), {"node_type": "PRO2-XXS", "zone": "fr-par-2", "min_size": 0, "max_size": 2})],
        "+ scaleway:kubernetes/pool:Pool  kapsule-ci-extra  (create)",
    ),
    "runner-upgrade": ([(("runner", "chart_version"), "0.87.0")], '~    version: "0.86.0" => "0.87.0"'),
}


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory, dev_plan_json_text: tuple[int, str]) -> dict[str, Path]:
    """`plan --json` of the base (the session's) and of each variant, as files, as CI's job writes them."""
    folder = tmp_path_factory.mktemp("one-key")
    code, base = dev_plan_json_text
    assert code == 0
    files = {"base": folder / "plan-base.json"}
    files["base"].write_text(base, encoding="utf-8")
    committed = (ROOT / "Pulumi.dev.yaml").read_text(encoding="utf-8")
    for name, (settings, _) in CHANGES.items():
        stack = folder / f"Pulumi.{name}.yaml"
        stack.write_text(set_keys(committed, "dev", "gpu-ci", settings), encoding="utf-8")
        files[name] = folder / f"plan-{name}.json"
        files[name].write_text(json.dumps(full_plan_json(load_stack_config("dev", path=stack))), encoding="utf-8")
    return files


def _plan_diff(plans: dict[str, Path], name: str, *flags: str) -> str:
    run = run_command("plan-diff", str(plans["base"]), str(plans[name]), "--base-label", "main@1a2b3c4d", *flags)
    assert run.code == 0, run.err
    return run.out


@pytest.mark.parametrize("name", CHANGES)
def test_a_one_key_change_leads_with_its_resources_and_fits_a_screen(plans: dict[str, Path], name: str) -> None:
    text = _plan_diff(plans, name)
    lines = text.splitlines()
    assert len(lines) <= MAX_DIFF_LINES, text
    assert all(len(line) <= MAX_COLUMNS for line in lines), [line for line in lines if len(line) > MAX_COLUMNS]
    assert CHANGES[name][1] in lines  # the change itself
    order = [lines.index(title) for title in ("Resources:", "Outputs:") if title in lines]
    cost = next(i for i, line in enumerate(lines) if line.startswith("Cost and waits"))
    policy = next(i for i, line in enumerate(lines) if line.startswith("Policy pack"))
    first_resource = next(i for i, line in enumerate(lines) if re.match(r"[-+~]+ \S+:\S+  ", line))
    assert first_resource < order[0] < cost < policy < (order[1:] or [len(lines)])[0]
    assert lines[policy].endswith(": no violation")
    # the simulation's own figures are a line per group, never job by job
    assert "cost.burst.jobs[" not in text
    assert sum(line.startswith("~  cost.burst:") for line in lines) <= 1
    shown = "\n".join(lines[cost:policy])
    assert not re.search(r"\d\.\d{3}", shown), shown  # EUR to cents, minutes to 0.01, as the note rounds them


def test_full_lists_each_figure_that_moved(plans: dict[str, Path]) -> None:
    short, full = _plan_diff(plans, "pool-max-size"), _plan_diff(plans, "pool-max-size", "--full")
    (burst,) = [line for line in short.splitlines() if line.startswith("~  cost.burst:")]
    moved = int(re.match(r"~  cost\.burst: (\d+) of \d+ jobs' figures moved", burst)[1])  # type: ignore[index]
    assert len(set(re.findall(r"cost\.burst\.jobs\[(\d+)\]", full))) == moved > 0
    assert "[urn=urn:pulumi:dev::gpu-ci::" in full and "[urn=" not in short
    assert re.search(r"EUR/week \(mean of 20 weeks\): [\d.]+ -> [\d.]+ \(\+", short)  # a second node costs


def test_a_change_that_moves_no_figure_says_so_in_one_line(plans: dict[str, Path]) -> None:
    lines = _plan_diff(plans, "runner-upgrade").splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith("Cost and waits"))
    assert lines[index].endswith(": unchanged")
    assert "target 15 min: MISSED, met in 0 of 20 weeks" in lines[index + 1]
    assert "Outputs:" not in lines


@pytest.mark.parametrize("name", CHANGES)
def test_the_note_s_visible_part_fits_a_screen(plans: dict[str, Path], name: str, tmp_path: Path) -> None:
    diff = tmp_path / "plan-diff.txt"
    diff.write_text(_plan_diff(plans, name), encoding="utf-8")
    run = run_command(
        "mr-note", "--plan-diff", str(diff), "--plan", str(plans[name]), "--base-plan", str(plans["base"]),
        "--stack", "dev", "--dry-run",
    )  # fmt: skip
    assert run.code == 0, run.err
    note = run.out[run.out.index("<!-- gpu-ci:mr-note") :]
    seen = visible_lines(note)
    assert len(seen) <= SCREEN_LINES, "\n".join(seen)
    assert any(line.startswith("**Offline plan diff**: ") for line in seen)  # the counts, folded or not
    assert "<summary>Capacity and cost at this commit</summary>" in seen  # folded: one line
    assert len(note) <= GITLAB_NOTE_LIMIT


def _huge(lines: int) -> tuple[str, ...]:
    return tuple(f"- ci-pool-{i} slots 1 -> 2 (+1)" for i in range(lines))


@pytest.mark.parametrize("limit", [GITLAB_NOTE_LIMIT, 20_000])
def test_the_note_stays_within_gitlab_s_size_whatever_the_change(limit: int) -> None:
    """A delta, warnings and a report each far beyond the limit: sections are left out, each saying so."""
    note = NoteInput(
        "dev",
        "Resources:\n    ~ 1 to update\n",
        offline=True,
        report="x" * 50 + "\n" * 1,
        warnings=tuple("w" * 200 for _ in range(2_000)),
        delta=_huge(40_000),
    )
    body = render_note(note, limit=limit)
    assert len(body) <= limit
    assert "Left out here: the note would exceed GitLab's limit of 1,000,000 characters" in body
    assert body.rstrip("\n").endswith("</sub>")  # the footer, after what was cut
    small = render_note(NoteInput("dev", "Resources:\n    ~ 1 to update\n", delta=_huge(3)))
    assert "Left out" not in small
