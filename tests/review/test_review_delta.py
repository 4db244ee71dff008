"""The MR note's cost delta: base plan against head plan, from documents written by hand and from the real
program (the dev stack, then ci-training's max_size 1 -> 2), whose figures must be the simulation's."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.day import SUITE_DAY_ENV
from support.paths import ROOT
from support.plans import plan_json_with
from support.repos import git, venv_python

from infra.__main__ import main
from infra.model.platform import load_platform
from infra.offline.stack_config import StackConfig
from infra.review.delta import cost_figures, render_delta
from infra.review.note import NoteInput, marker, render_note
from infra.sim.week import simulate_week


def _plan(cost: dict[str, Any] | None = None, slots: dict[str, int] | None = None) -> dict[str, Any]:
    """A plan document shaped like `plan --json`: `outputs.cost`, and capacity rows."""
    slots = {"ci-compile": 2, "ci-training": 4, "system": 0} if slots is None else slots
    capacity = [{"pool": pool, "max_concurrent_jobs": n} for pool, n in slots.items()]
    outputs: dict[str, Any] = {"capacity": capacity}
    if cost is not None:
        outputs["cost"] = cost
    return {"stack": "dev", "resources": [], "outputs": outputs, "capacity": capacity}


COST = {"eur_per_day": 13.977358, "makespan_minutes": 123.8, "failed_jobs": 0, "longest_wait_minutes": 69.4}


def test_nothing_moved_is_one_line_with_the_figures() -> None:
    lines = render_delta(_plan(COST), _plan(dict(COST)))
    assert lines == [
        "**Cost and capacity**: no cost change (13.98 EUR/day, makespan 2.1 h (123.8 min), 0 failed jobs in the "
        "simulation; slots ci-compile 2, ci-training 4)."
    ]


def test_each_figure_with_its_change() -> None:
    head = {**COST, "eur_per_day": 14.397358, "makespan_minutes": 192, "failed_jobs": 3}
    lines = render_delta(_plan(COST), _plan(head, {"ci-compile": 2, "ci-training": 8, "ci-h100": 1}))
    assert lines[0].startswith("**Cost and capacity**, base -> this commit")
    assert lines[2:] == [
        "- EUR/day 13.98 -> 14.40 (+0.42 EUR/day)",
        "- makespan 2.1 h -> 3.2 h (+68.2 min; largest burst 123.8 -> 192 min)",
        "- **failed jobs (simulated) 0 -> 3 (+3)**",  # bold: the head's simulation loses jobs
        "- pool ci-h100 added: 1 slot",
        "- ci-training slots 4 -> 8 (+4)",
        "- pool system removed (it had 0 slots)",
    ]


def test_a_change_below_a_cent_is_not_rounded_away() -> None:
    lines = render_delta(_plan(COST), _plan({**COST, "eur_per_day": 13.979358}))
    assert "- EUR/day 13.98 -> 13.98 (+0.0020 EUR/day)" in lines
    assert "- makespan: 2.1 h (unchanged; largest burst 123.8 min)" in lines
    assert "- failed jobs (simulated): 0 (unchanged)" in lines


def test_a_base_from_before_the_cost_simulation_has_no_cost_figures() -> None:
    """The earlier cost model's `cost` had `drain_minutes` and no failures: its figures do not compare."""
    old = {"eur_per_day": 11.2, "drain_minutes": 140.0, "batches_per_day": 3}
    assert cost_figures(_plan(old)) is None
    lines = render_delta(_plan(old), _plan(COST))
    assert lines[2].startswith("- base has no cost figures (no workload, or a plan from before the cost simulation)")
    assert lines[2].endswith("this commit: 13.98 EUR/day, makespan 2.1 h (123.8 min), 0 failed jobs in the simulation")
    assert not any("11.2" in line for line in lines)  # the other model's EUR/day is not compared
    # A base from before capacity rows: no slot line either, and nothing fails.
    assert render_delta({"stack": "dev", "resources": []}, _plan(COST))[2].startswith("- base has no cost figures")


def test_plans_without_a_workload() -> None:
    assert render_delta(_plan(), _plan()) == [
        "**Cost and capacity**: no cost figures (no `platform.workload` in the spec); no job slot changed."
    ]
    added = render_delta(_plan(), _plan(slots={"ci-compile": 4}))
    assert added[0] == "**Cost and capacity**, base -> this commit:"
    assert added[2:] == [
        "- no cost figures: no `platform.workload` in the spec",
        "- ci-compile slots 2 -> 4 (+2)",
        "- pool ci-training removed (it had 4 slots)",
        "- pool system removed (it had 0 slots)",
    ]
    removed = render_delta(_plan(COST), _plan())
    assert removed[2] == (
        "- no cost figures at this commit (no `platform.workload`); base: 13.98 EUR/day, makespan 2.1 h (123.8 min), "
        "0 failed jobs in the simulation"
    )


def test_a_figure_that_is_not_a_number_is_shown_as_such() -> None:
    lines = render_delta(_plan(COST), _plan({**COST, "makespan_minutes": None, "eur_per_day": "error"}))
    assert "- EUR/day 13.98 -> n/a (change unknown)" in lines
    assert "- makespan 2.1 h -> n/a (change unknown; largest burst 123.8 -> n/a min)" in lines
    assert render_delta(None, _plan(COST), no_base="no base plan (plan-base.json: No such file)")[2].startswith(
        "- no base plan (plan-base.json: No such file); this commit: 13.98 EUR/day"
    )


def test_the_note_opens_with_the_delta_before_the_resource_diff() -> None:
    delta = tuple(render_delta(_plan(COST), _plan({**COST, "eur_per_day": 14.397358})))
    text = "Resources:\n    ~ 1 to update\n    7 unchanged\n"
    body = render_note(NoteInput(stack="dev", text=text, delta=delta, report="capacity report"))
    lines = body.splitlines()
    assert lines[0] == marker("dev")
    assert body.index(delta[0]) < body.index("**`pulumi preview`**") < body.index("~ 1 to update")
    assert "- EUR/day 13.98 -> 14.40 (+0.42 EUR/day)" in lines
    assert delta[0] not in render_note(NoteInput(stack="dev", text=text))


@pytest.fixture(scope="module")
def real_plans(
    dev_stack: StackConfig, dev_plan_document: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The dev stack's plan and its plan with ci-training's max_size 1 -> 2, by the real program; their specs."""
    base_spec = copy.deepcopy(dev_stack.get("platform"))
    head_spec = copy.deepcopy(base_spec)
    head_spec["pools"]["ci-training"]["max_size"] = 2
    return dev_plan_document, plan_json_with(dev_stack, head_spec), base_spec, head_spec


def _minutes(value: Fraction) -> str:
    return f"{float(value):.2f}".rstrip("0").rstrip(".")


def test_a_second_l40s_node_in_the_delta_is_the_simulations_figures(real_plans: tuple[Any, ...]) -> None:
    base, head, base_spec, head_spec = real_plans
    old, new = simulate_week(load_platform(base_spec)), simulate_week(load_platform(head_spec))
    assert old is not None and new is not None
    assert new.makespan_minutes < old.makespan_minutes  # twice the slots: the largest burst drains sooner
    lines = render_delta(base, head)
    eur = f"{float(new.eur_per_day - old.eur_per_day):+.2f}"
    assert f"- EUR/day {float(old.eur_per_day):.2f} -> {float(new.eur_per_day):.2f} ({eur} EUR/day)" in lines, lines
    hours = f"{float(old.makespan_minutes) / 60:.1f} h -> {float(new.makespan_minutes) / 60:.1f} h"
    span = f"largest burst {_minutes(old.makespan_minutes)} -> {_minutes(new.makespan_minutes)} min"
    assert any(line.startswith(f"- makespan {hours} (") and line.endswith(f"; {span})") for line in lines), lines
    assert f"- failed jobs (simulated): {new.failed_jobs} (unchanged)" in lines
    assert "- ci-training slots 4 -> 8 (+4)" in lines
    assert not any(line.startswith("- ci-compile") for line in lines)  # its slots did not move
    # The same plan on both sides: one line.
    assert render_delta(head, head)[0].startswith("**Cost and capacity**: no cost change (")


def test_mr_note_reads_the_base_plan(
    real_plans: tuple[Any, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, head, _, _ = real_plans
    files = {}
    for name, document in (("base", base), ("head", head)):
        files[name] = tmp_path / f"plan-{name}.json"
        files[name].write_text(json.dumps(document), encoding="utf-8")
    preview = tmp_path / "plan-diff.txt"
    preview.write_text("Resources:\n    ~ 2 to update\n    40 unchanged\n", encoding="utf-8")
    args = ["mr-note", "--plan-diff", str(preview), "--plan", str(files["head"]), "--dry-run", "--stack", "dev"]
    assert main([*args, "--base-plan", str(files["base"])]) == 0
    note = capsys.readouterr().out
    assert note.index("- ci-training slots 4 -> 8 (+4)") < note.index("**Offline plan diff**")
    # A base that did not build leaves no file: the note says so and is still posted.
    assert main([*args, "--base-plan", str(tmp_path / "missing.json")]) == 0
    note = capsys.readouterr().out
    assert f"- no base plan ({tmp_path / 'missing.json'}: No such file or directory); this commit: " in note
    assert main(["mr-note", "--plan-diff", str(preview), "--base-plan", str(files["base"]), "--dry-run"]) == 2
    assert (
        capsys.readouterr().err == "error: --base-plan: the delta compares it with the head's plan: give --plan too\n"
    )


# The `preview` job's script, run in bash in a repository with a base and a head commit: the base's plan by
# `.ci/plan-at`, then `mr-note --base-plan`. Stand-ins: `pulumi` (prints a preview), and venv/bin/python runs
# this Python except for `-m infra plan`, which prints the real program's plan computed above for the
# checkout's stack file (the real `plan --json` is exercised by the plan-diff job's test).

PREVIEW_TEXT = "Previewing update (dev):\nResources:\n    ~ 2 to update\n    40 unchanged\n"


def _preview_repo(tmp_path: Path, base: dict[str, Any], head: dict[str, Any], base_stack: str) -> Path:
    repo = tmp_path / "gpu-ci"
    shutil.copytree(ROOT / ".ci", repo / ".ci")
    (repo / "Pulumi.dev.yaml").write_text(base_stack, encoding="utf-8")
    git(repo, "init", "--quiet")
    git(repo, "add", ".")
    git(repo, "commit", "--quiet", "-m", "base")
    (repo / "Pulumi.dev.yaml").write_text("ci-training max_size: 2\n", encoding="utf-8")
    git(repo, "commit", "--quiet", "-am", "ci-training: up to 2 nodes")
    for name, document in (("base", base), ("head", head)):
        (tmp_path / f"{name}.json").write_text(json.dumps(document), encoding="utf-8")
    venv_python(
        repo,
        'if [ "$1 $2 $3" = "-m infra plan" ]; then\n'
        "  case $(cat Pulumi.dev.yaml) in\n"
        f'    *"max_size: 2"*) cat "{tmp_path}/head.json";;\n'
        '    *broken*) echo "error: platform.pools: broken" >&2; exit 2;;\n'
        f'    *) cat "{tmp_path}/base.json";;\n'
        "  esac\n"
        "  exit 0\n"
        "fi\n",
    )
    pulumi = tmp_path / "bin" / "pulumi"
    pulumi.parent.mkdir()
    pulumi.write_text(f"#!/bin/sh\ncase \"$*\" in *preview*) printf '{PREVIEW_TEXT}';; esac\n", encoding="utf-8")
    pulumi.chmod(0o755)
    return repo


def _run_preview(repo: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    ci = yaml.safe_load((ROOT / ".gitlab-ci.yml").read_text(encoding="utf-8"))
    env = {
        "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYTHONPATH": str(ROOT),
        **SUITE_DAY_ENV,
        "PULUMI_STACK": "dev",
        "PULUMI_BACKEND_URL": "s3://state",
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_SERVER_URL": "http://127.0.0.1:9",  # never reached: no note token in a fork's pipeline
        "CI_MERGE_REQUEST_PROJECT_ID": "42",
        "CI_MERGE_REQUEST_IID": "7",
        "CI_MERGE_REQUEST_DIFF_BASE_SHA": git(repo, "rev-parse", "HEAD~1"),
        "CI_COMMIT_SHA": git(repo, "rev-parse", "HEAD"),
        "pack": str(tmp_path / "pack"),
        "policy_config": "",
    }
    script = "\n".join(ci["preview"]["script"])
    return subprocess.run(
        ["bash", "-eo", "pipefail", "-c", script], cwd=repo, env=env, capture_output=True, text=True, check=False
    )


def test_the_preview_job_computes_the_base_plan_for_the_delta(real_plans: tuple[Any, ...], tmp_path: Path) -> None:
    base, head, _, _ = real_plans
    repo = _preview_repo(tmp_path, base, head, base_stack="ci-training max_size: 1\n")
    result = _run_preview(repo, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads((repo / "plan-base.json").read_text(encoding="utf-8")) == base  # .ci/plan-at at the base
    note = result.stdout[result.stdout.index("<!--") :]
    assert note.index("- ci-training slots 4 -> 8 (+4)") < note.index("**`pulumi preview`**")
    assert "- EUR/day " in note and "- makespan " in note
    assert git(repo, "worktree", "list").count("\n") == 0  # the base's worktree is gone


def test_a_base_that_does_not_build_is_said_in_the_preview_note(real_plans: tuple[Any, ...], tmp_path: Path) -> None:
    base, head, _, _ = real_plans
    repo = _preview_repo(tmp_path, base, head, base_stack="broken\n")
    result = _run_preview(repo, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "error: platform.pools: broken" in result.stderr
    assert not (repo / "plan-base.json").exists()
    assert "- no base plan (plan-base.json: No such file or directory); this commit: " in result.stdout
    assert "**`pulumi preview`**" in result.stdout  # the preview note is posted all the same


def test_the_merge_request_wait_beside_the_cost_with_its_target() -> None:
    """Held slots and warm nodes cost EUR/day and buy a shorter wait: the note shows both, and the target's
    verdict at the head (bold when missed)."""
    target = {"slo": {"merge_request_wait_minutes": 15, "met": None}}
    base = {**COST, "merge_request_wait_p95_minutes": 69.4, **target}
    head = {**COST, "eur_per_day": 19.52, "merge_request_wait_p95_minutes": 9.5, **target}
    lines = render_delta(_plan(base), _plan(head))
    assert lines[0] == "**Cost and capacity**, base -> this commit (the simulated week of `platform.workload`):"
    assert lines[2] == "- EUR/day 13.98 -> 19.52 (+5.54 EUR/day)"
    assert lines[5] == "- merge-request wait p95 69.4 min -> 9.5 min (-59.9 min; target 15 min: met)"
    missed = render_delta(_plan(head), _plan(base))
    assert missed[5] == "- **merge-request wait p95 9.5 min -> 69.4 min (+59.9 min; target 15 min: missed)**"
    older = render_delta(_plan(COST), _plan(head))  # a base plan from before the simulated week
    assert older[5] == "- merge-request wait p95 n/a -> 9.5 min (change unknown; target 15 min: met)"


def test_the_verdict_is_the_plan_s_own_when_it_gives_one() -> None:
    """A merge-request job that failed for good misses the target however short the others' waits: the plan's
    `slo.met` wins over comparing the p95 of the jobs that ran with the target."""
    lost: dict[str, Any] = {**COST, "failed_jobs": 1, "merge_request_wait_p95_minutes": 9.5}
    lost["slo"] = {"merge_request_wait_minutes": 15, "met": False}
    every_one_lost = {**lost, "merge_request_wait_p95_minutes": None}
    met = {**COST, "merge_request_wait_p95_minutes": 9.5, "slo": {"merge_request_wait_minutes": 15, "met": True}}
    assert render_delta(_plan(met), _plan(lost))[5].endswith("(unchanged; target 15 min: missed)**")
    assert render_delta(_plan(met), _plan(every_one_lost))[5].endswith("target 15 min: missed)**")
    assert render_delta(_plan(lost), _plan(met))[5].endswith("(unchanged; target 15 min: met)")


def _weeks(met: int, p95: float, *, weeks: int = 20) -> dict[str, Any]:
    return {
        "weeks": weeks,
        "met_weeks": met,
        "required_weeks": 18,
        "met": met >= 18,
        "merge_request_wait_p95_minutes": p95,
    }


def test_the_weeks_verdict_with_the_first_weeks_p95() -> None:
    """A plan with its weeks (`plan --json`'s `weeks`): the verdict is theirs, and a line says in how many of
    them the target is met, base -> head, with the p95 over all their merge-request jobs (bold when missed)."""
    target = {"slo": {"merge_request_wait_minutes": 15, "met": True}}
    base = {**COST, "merge_request_wait_p95_minutes": 15.0, **target}
    head = {**COST, "eur_per_day": 42.75, "merge_request_wait_p95_minutes": 7.7, **target}
    lines = render_delta({**_plan(base), "weeks": _weeks(0, 20.0)}, {**_plan(head), "weeks": _weeks(20, 0.0)})
    assert lines[5] == "- merge-request wait p95 15 min -> 7.7 min (-7.3 min; target 15 min: met in 20 of 20 weeks)"
    assert lines[6] == (
        "- weeks the target is met in, of 20 0 -> 20 (+20; p95 over all their merge-request jobs 20 min -> 0 min)"
    )
    missed = render_delta({**_plan(head), "weeks": _weeks(20, 0.0)}, {**_plan(base), "weeks": _weeks(3, 15.4)})
    assert missed[5].startswith("- **merge-request wait p95") and missed[5].endswith("missed in 3 of 20 weeks)**")
    assert missed[6].startswith("- **weeks the target is met in, of 20 20 -> 3 (-17;")
    older = render_delta(_plan(base), {**_plan(head), "weeks": _weeks(19, 0.0)})  # a base from before the weeks
    assert older[6].startswith("- weeks the target is met in, of 20 n/a -> 19 (change unknown;")
    other_count = render_delta(
        {**_plan(base), "weeks": _weeks(5, 1.0, weeks=10)}, {**_plan(head), "weeks": _weeks(19, 0.0)}
    )
    assert "n/a -> 19" in other_count[6]  # weeks of another count are not compared


def test_a_plan_with_weeks_of_the_wrong_type_is_refused_at_the_field(tmp_path: Path) -> None:
    from infra.review.schema import PlanDocumentError, check_plan

    check_plan({**_plan(COST), "weeks": _weeks(19, 3.5)}, "plan.json")
    with pytest.raises(PlanDocumentError, match=r"weeks\.met_weeks"):
        check_plan({**_plan(COST), "weeks": {**_weeks(19, 3.5), "met_weeks": "19"}}, "plan.json")
    with pytest.raises(PlanDocumentError, match=r"weeks\.merge_request_wait_p95_minutes"):
        check_plan({**_plan(COST), "weeks": {**_weeks(19, 3.5), "merge_request_wait_p95_minutes": -1}}, "plan.json")


def test_the_targets_bound_and_the_ratio_follow_the_weeks() -> None:
    """With the target's bound in the head's weeks (`plan --json`'s `weeks.bound`), a line gives it and the ratio of
    the head's EUR/week to it; a head without it (a plan from before the bound) has no such line."""
    target = {"slo": {"merge_request_wait_minutes": 15, "met": True}}
    base, head = {**COST, **target}, {**COST, "eur_per_day": 42.75, **target}
    bound = {"eur_per_week_median": 88.077892, "ratio": 3.2393}
    lines = render_delta(
        {**_plan(base), "weeks": _weeks(0, 20.0)}, {**_plan(head), "weeks": {**_weeks(20, 0.0), "bound": bound}}
    )
    assert lines[-1] == (
        "- the target's bound: 88.08 EUR/week (no dispatch of these pools meets it for less, docs/simulation.md); "
        "this commit spends 3.24x it, a week on average"
    )
    assert not any("bound" in line for line in render_delta(_plan(base), {**_plan(head), "weeks": _weeks(20, 0.0)}))


def test_a_bound_of_the_wrong_type_is_refused_at_the_field() -> None:
    from infra.review.schema import PlanDocumentError, check_plan

    weeks = {**_weeks(19, 3.5), "bound": {"eur_per_week_median": 88.08, "ratio": 1.13}}
    check_plan({**_plan(COST), "weeks": weeks}, "plan.json")
    with pytest.raises(PlanDocumentError, match=r"weeks\.bound\.ratio"):
        check_plan({**_plan(COST), "weeks": {**weeks, "bound": {"ratio": "3x"}}}, "plan.json")


def test_the_blind_bound_and_its_ratio_follow_the_weeks() -> None:
    """With the bound of a platform blind to arrivals in the head's weeks (`weeks.blind_bound`, holding slots ready),
    a line gives it and the head's ratio to it; one that holds nothing ready (every boot within the target) none."""
    target = {"slo": {"merge_request_wait_minutes": 15, "met": True}}
    base, head = {**COST, **target}, {**COST, **target}
    blind = {"eur_per_week": 124.22, "ratio": 2.2968, "ready_slot_hours": {"ci-training": 261.67}}
    lines = render_delta(
        {**_plan(base), "weeks": _weeks(0, 20.0)}, {**_plan(head), "weeks": {**_weeks(20, 0.0), "blind_bound": blind}}
    )
    assert lines[-1] == (
        "- blind to arrivals: 124.22 EUR/week (no platform that cannot see merge requests coming meets the target "
        "with nodes late for less, on average); this commit spends 2.30x it"
    )
    idle = {**blind, "ready_slot_hours": {}}
    plain = render_delta(_plan(base), {**_plan(head), "weeks": {**_weeks(20, 0.0), "blind_bound": idle}})
    assert not any("blind" in line for line in plain)


def test_a_blind_bound_of_the_wrong_type_is_refused_at_the_field() -> None:
    from infra.review.schema import PlanDocumentError, check_plan

    weeks = {**_weeks(19, 3.5), "blind_bound": {"eur_per_week": 124.22, "ratio": 0.8}}
    check_plan({**_plan(COST), "weeks": weeks}, "plan.json")
    with pytest.raises(PlanDocumentError, match=r"weeks\.blind_bound\.eur_per_week"):
        check_plan({**_plan(COST), "weeks": {**weeks, "blind_bound": {"eur_per_week": "lots"}}}, "plan.json")
