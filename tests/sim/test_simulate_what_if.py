"""`python -m infra simulate --set KEY=VALUE`: the same scenarios on a changed spec, side by side with the
current one, without touching the stack file; a bad `--set` is one `error:` line naming the key."""

from __future__ import annotations

import base64
import copy
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.paths import ROOT

from infra.__main__ import main
from infra.model.platform import Platform, load_platform
from infra.render.text import format_eur
from infra.sim.arrivals import week_jobs as workload_jobs
from infra.sim.engine import simulate
from infra.sim.platform_scenario import scenario
from infra.sim.week import simulate_week


def _table(out: str) -> dict[str, tuple[str, ...]]:
    """The what-if table's rows: figure -> (current, changed, change)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("figure "))
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith(("per-pool", "single", "plan:", "ci-")) or "  " not in line:
            break
        name, *cells = [cell for cell in line.split("  ") if cell.strip()]
        rows[name.strip()] = tuple(cell.strip() for cell in cells)
    return rows


def _burst(platform: Platform) -> tuple[Fraction, Fraction, int]:
    """The first burst of the workload simulated directly: makespan, GPU EUR, failed jobs."""
    jobs = workload_jobs(platform)
    first = [job for job in jobs if job.created_minute == min(j.created_minute for j in jobs)]
    result = simulate(scenario(platform, first))
    return result.makespan, result.eur, len(result.failed)


def test_a_second_l40s_node_side_by_side(dev_platform: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    stack_file = ROOT / "Pulumi.dev.yaml"
    before = stack_file.read_bytes()
    assert main(["simulate", "--set", "pools.ci-training.max_size=2"]) == 0
    out = capsys.readouterr().out
    assert stack_file.read_bytes() == before  # the stack file is not edited
    changed_spec = copy.deepcopy(dev_platform)
    changed_spec["pools"]["ci-training"]["max_size"] = 2
    current, changed = load_platform(dev_platform), load_platform(changed_spec)
    assert "Changed: platform.pools.ci-training.max_size 1 -> 2\n" in out
    rows = _table(out)
    (old_span, old_eur, _), (new_span, new_eur, new_failed) = _burst(current), _burst(changed)
    assert new_span < old_span
    assert rows["per-pool runners: makespan (min)"] == (
        f"{float(old_span):.1f}",
        f"{float(new_span):.1f}",
        f"-{float(old_span - new_span):.1f}",
    )
    assert rows["per-pool runners: GPU EUR"][:2] == (format_eur(old_eur), format_eur(new_eur))
    assert rows["per-pool runners: failed jobs"] == ("0", str(new_failed), "=")
    old_day, new_day = simulate_week(current), simulate_week(changed)
    assert old_day is not None and new_day is not None
    assert rows["plan: EUR/day"] == (
        format_eur(old_day.eur_per_day),
        format_eur(new_day.eur_per_day),
        "+" + format_eur(new_day.eur_per_day - old_day.eur_per_day),
    )
    assert rows["ci-training slots"] == ("4", "8", "+4")
    assert rows["ci-compile slots"] == ("2", "2", "=")


def test_several_keys_a_new_key_and_the_other_flags(capsys: pytest.CaptureFixture[str]) -> None:
    """A key the stack file leaves to its default is set too; --single-runner adds its rows to both columns; the
    exit code is the changed spec's (1: it loses jobs), and its new warnings are said."""
    supervised = "workload.profiles.supervised.kinds.train-validate.jobs_per_day"
    args = ["simulate", "--set", f"{supervised}=300", "--set", "registry.protect=false"]
    assert main([*args, "--single-runner"]) == 1
    out = capsys.readouterr().out
    assert f"Changed: platform.{supervised} 24 -> 300; platform.registry.protect unset -> false" in out
    assert "warning (changed spec): platform.registry.protect=false: an unprotected namespace is deleted" in out
    rows = _table(out)
    # 300 supervised jobs a working day need 80 h of the L40S's four slots: GitLab drops what waits 24 h, in the
    # week; the first pipeline alone (what the scenario rows run) loses nothing with the per-pool runners.
    assert rows["per-pool runners: failed jobs"] == ("0", "0", "=")
    assert rows["plan: failed jobs"][0] == "0" and int(rows["plan: failed jobs"][1]) > 0
    assert int(rows["single runner (before): failed jobs"][0]) > 0  # the former layout loses jobs either way


def test_without_set_the_output_is_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate"]) == 0
    out = capsys.readouterr().out
    assert "current  changed" not in out and out.splitlines()[1].startswith("scenario")


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (
            "pools.ci-training.max_size=abc",
            "error: --set pools.ci-training.max_size=abc: platform.pools.ci-training.max_size='abc': ",
        ),
        ("pools.ci-training.max_size=0", "error: --set pools.ci-training.max_size=0: platform.pools.ci-training."),
        (
            "pools.ci-trainin.max_size=2",
            "error: --set pools.ci-trainin.max_size=2: platform.pools has no 'ci-trainin'; did you mean 'ci-training'?",
        ),
        (
            "pools.ci-training.max_sise=2",
            "error: --set pools.ci-training.max_sise=2: platform.pools.ci-training.max_sise=2: unknown key",
        ),
        ("clustr.name=x", "error: --set clustr.name=x: platform has no 'clustr'; did you mean 'cluster'?"),
        (
            "runner.job_timeout.x=1",
            "error: --set runner.job_timeout.x=1: platform.runner.job_timeout='3h30m' is a value",
        ),
        ("max_size", "error: --set max_size: expected KEY=VALUE"),
        (  # the spec refuses another key than the one set: named as the spec names it
            "pools.ci-training.autoscaling=false",
            "error: --set pools.ci-training.autoscaling=false: the changed spec is refused: "
            "platform.pools.ci-training.max_size=1: a pool without autoscaling has a fixed size",
        ),
        ("pools.ci-training.max_size=[1", "error: --set pools.ci-training.max_size=[1: '[1' is not a YAML value"),
        (  # a recursive value used to hang the command
            "pools.ci-training.max_size=&a [*a]",
            "error: --set pools.ci-training.max_size=&a [*a]: '&a [*a]' is not a YAML value (a recursive or undefined "
            "alias *a)",
        ),
        (  # 5,000 nested lists used to end in a RecursionError traceback
            "pools.ci-training.max_size=" + "[" * 5000,
            "error: --set pools.ci-training.max_size="
            + "[" * 93
            + "…: '"
            + "[" * 59
            + "'… is not a YAML value (nested",
        ),
        ("pools.ci-training.max_size=" + "9" * 20_000, "error: --set pools.ci-training.max_size=999"),
        (  # base64 hid a token from the credential scan, and the Changed: line printed it
            "registry.namespace=!!binary " + base64.b64encode(b"glptt-" + b"7Hq" * 8).decode(),
            "error: --set registry.namespace=…: the value is bytes (YAML's !!binary), which no setting takes",
        ),
        ("runner.tags=!!set {kapsule: null}", "error: --set runner.tags=…: the value is a set (YAML's !!set)"),
        (
            "ci.stage=!!timestamp 2026-12-01",
            "error: --set ci.stage=…: the value is a date or time (YAML's !!timestamp)",
        ),
        (  # 2,000 parts nested the spec past Python's recursion limit
            ".".join(["pools"] * 1500) + ".max_size=1",
            "error: --set pools.pools.",
        ),
        ("a." * 16 + "b=1", "error: --set " + "a." * 16 + "b=1: a key of 17 parts (at most 16"),
        (
            "pools.\x1b[2Jci=1",
            "error: --set pools.\\x1b[2Jci=1: the changed spec is refused: platform.pools.'\\x1b[2Jci'=1: ",
        ),
    ],
    ids=lambda value: value[:40],
)
def test_a_bad_set_is_one_line_naming_the_key(capsys: pytest.CaptureFixture[str], setting: str, message: str) -> None:
    assert main(["simulate", "--set", setting]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()
    assert line.startswith(message), line


def test_a_set_on_another_stack_file(
    tmp_path: Path, dev_platform: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """`--config` and `--set` together: the change applies to that file's spec, which is the current column."""
    dev_platform["pools"]["ci-training"]["max_size"] = 3
    stack_file = tmp_path / "Pulumi.other.yaml"
    stack_file.write_text(yaml.safe_dump({"config": {"gpu-ci:platform": dev_platform}}), encoding="utf-8")
    assert main(["simulate", "--config", str(stack_file), "--set", "platform.pools.ci-training.max_size=1"]) == 0
    out = capsys.readouterr().out
    assert "Changed: platform.pools.ci-training.max_size 3 -> 1\n" in out
    assert _table(out)["ci-training slots"] == ("12", "4", "-8")
