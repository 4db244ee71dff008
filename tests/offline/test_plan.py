"""`python -m infra plan`: the offline plan a newcomer runs first and a reviewer reads."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.links import planted_link
from support.paths import DATA, ROOT
from support.plans import PlanRun

from infra.__main__ import main
from infra.offline.mocks import MOCK_KUBECONFIG_PREFIX


def test_plan_lists_every_resource_capacity_and_outputs(dev_plan: PlanRun) -> None:
    assert dev_plan.code == 0
    out = dev_plan.out
    for name in ("kapsule-vpc", "kapsule-pn", "kapsule-cluster [protected]", "kapsule-system", "kapsule-k8s"):
        assert name in out
    assert "kapsule-ci-compile [protected; ignores size]" in out
    assert "nodeType=L40S-1-48G" in out
    assert (
        "ci-compile   L4-1-24G    fr-par-2  0-1    7 CPU, 44 GiB  time-slicing x2  rl          2     GPU replicas"
        in out
    )
    assert "kubeconfig = [secret]" in out
    assert "kubeconfig=[secret]" in out  # the provider's input, in the resource table
    assert MOCK_KUBECONFIG_PREFIX.splitlines()[0] not in out
    assert "overcommits" in out  # the warning
    written = sorted(p.name for p in dev_plan.artifacts.iterdir())
    assert "capacity.txt" in written and "capacity.json" in written
    assert json.loads((dev_plan.artifacts / "capacity.json").read_text())[0]["pool"] == "ci-compile"


def test_plan_json_is_complete_and_masks_secrets(dev_plan_json: tuple[int, dict[str, Any]]) -> None:
    code, document = dev_plan_json
    assert code == 0
    assert document["stack"] == "dev"
    names = {r["name"] for r in document["resources"]}
    assert {"kapsule-cluster", "kapsule-ci-compile", "kapsule-ci-training", "kapsule-system"} <= names
    provider = next(r for r in document["resources"] if r["type"] == "pulumi:providers:kubernetes")
    assert provider["inputs"]["kubeconfig"] == "[secret]"
    assert document["outputs"]["kubeconfig"] == "[secret]"
    pool = next(r for r in document["resources"] if r["name"] == "kapsule-ci-training")
    assert pool["inputs"]["maxSize"] == 1 and isinstance(pool["inputs"]["maxSize"], int)
    assert pool["options"]["ignore_changes"] == ["size"]
    assert MOCK_KUBECONFIG_PREFIX.splitlines()[0] not in json.dumps(document)


def test_plan_rejects_bad_config_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, dev_platform: dict[str, Any]
) -> None:
    dev_platform["profiles"]["rl"]["pool"] = "ci-gpu"
    stack_file = tmp_path / "Pulumi.broken.yaml"
    stack_file.write_text(yaml.safe_dump({"config": {"gpu-ci:platform": dev_platform}}))
    assert main(["plan", "--config", str(stack_file)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    line = next(i for i, text in enumerate(stack_file.read_text().splitlines(), 1) if "ci-gpu" in text)
    assert captured.err == (  # the file and the line of the key (issue 39, item 3)
        f"error: Pulumi.broken.yaml:{line}: platform.profiles.rl.pool='ci-gpu': no such pool (pools: ci-compile, "
        "ci-training, system)\n"
    )


def test_plan_names_a_missing_stack(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--stack", "nope"]) == 2
    assert "no stack file Pulumi.nope.yaml" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda tmp: tmp / "nowhere.yaml", "{path}: no such file, not a stack file"),
        (
            lambda tmp: _link(tmp / "gone.yaml", tmp / "nothing"),
            "{path}: a symlink that leads nowhere, not a stack file",
        ),
        (lambda tmp: tmp / ("a" * 300 + ".yaml"), "{cut}…: cannot be read (File name too long)"),  # was a traceback
        (lambda tmp: tmp / "x\x1b[2J\nerror: forged.yaml", "{shown}: no such file, not a stack file"),
    ],
    ids=["missing", "dangling-symlink", "name-too-long", "control-characters"],
)
def test_a_config_file_that_cannot_be_read_is_named_in_one_line(
    make: Callable[[Path], Path], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = make(tmp_path)
    for command in ("plan", "recommend", "check-ci"):
        assert main([command, *(["."] if command == "check-ci" else []), "--config", str(path)]) == 2
        shown = str(path).replace("\x1b", "\\x1b").replace("\n", "\\n")
        expected_line = expected.format(path=path, shown=shown, cut=str(path)[:300])
        assert capsys.readouterr().err == f"error: {expected_line}\n"


def _link(path: Path, target: Path) -> Path:
    path.symlink_to(target)
    return path


def test_plan_out_must_be_a_directory_it_can_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It used to end in a traceback (FileExistsError)."""
    stack_file = tmp_path / "Pulumi.dev.yaml"
    shutil.copy(ROOT / "Pulumi.dev.yaml", stack_file)
    assert main(["plan", "--config", str(stack_file), "--out", str(stack_file)]) == 2
    assert capsys.readouterr().err == (
        f"error: --out {stack_file}: cannot be written: it is not a directory (--out names where the artifacts go)\n"
    )


def test_plan_shows_sharing_and_cost_and_writes_their_artifacts(
    dev_plan: PlanRun, dev_plan_json: tuple[int, dict[str, Any]]
) -> None:
    assert dev_plan.code == 0
    out = dev_plan.out
    assert "GPU sharing (ConfigMap kube-system/gpu-ci-device-plugin-config" in out
    assert "ci-training  ci-training                            time-slicing  4" in out
    assert "53.6 % (46.4 % cheaper)" in out
    assert "An average day of the simulated week above (that week: 101.0130 EUR), new setup against old" in out
    config_map = yaml.safe_load((dev_plan.artifacts / "device-plugin-config.yaml").read_text())
    assert config_map["kind"] == "ConfigMap" and set(config_map["data"]) >= {"ci-compile", "ci-training"}
    patch = json.loads((dev_plan.artifacts / "cluster-policy-patch.json").read_text())
    assert patch["spec"]["devicePlugin"]["config"]["name"] == config_map["metadata"]["name"]
    assert json.loads((dev_plan.artifacts / "cost.json").read_text())["baseline"]["keeps_up"] is True
    document = dev_plan_json[1]
    assert "An average day of the simulated week above" in document["report"]  # what MR notes post
    assert document["outputs"]["gpu_sharing"]["config_map"] == "kube-system/gpu-ci-device-plugin-config"


def test_a_green_plan_means_a_green_preview(
    stack_file: Callable[[dict[str, Any]], Path],
    dev_platform: dict[str, Any],
    dev_plan: PlanRun,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The plan runs the policy pack over what it would register: a mandatory violation is shown, kept in the
    JSON for the MR note, and makes `plan` exit 1 (2 stays for an unusable config)."""
    assert dev_plan.code == 0
    assert "Policy pack (policy/, over these resources):\n  no violation\n" in dev_plan.out
    dev_platform["pools"]["ci-training"]["min_size"] = 1  # valid for the spec, refused by gpu-pool-scales-to-zero
    assert main(["plan", "--json", "--config", str(stack_file(dev_platform))]) == 1
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert document["policy"] == [
        {
            "policy": "gpu-pool-scales-to-zero",
            "resource": "kapsule-ci-training",
            "message": document["policy"][0]["message"],
            "level": "mandatory",
        }
    ]
    assert document["policy"][0]["message"].startswith("GPU pool 'ci-training' (L40S-1-48G): minSize=1")
    assert any(
        w.startswith("policy gpu-pool-scales-to-zero (mandatory): kapsule-ci-training:") for w in document["warnings"]
    )
    assert captured.err.startswith("error: policy gpu-pool-scales-to-zero (mandatory): kapsule-ci-training:")


GOLDEN = DATA / "golden" / "plan-dev.json"


def test_plan_json_of_the_dev_stack_is_the_committed_one(dev_plan_json_text: tuple[int, str]) -> None:
    """Byte for byte: a refactoring changes none of it; a change of a figure or a resource updates the file in
    the same commit, where a reviewer sees it (`python -m infra plan --json > tests/data/golden/plan-dev.json`)."""
    code, text = dev_plan_json_text
    assert code == 0
    assert text == GOLDEN.read_text(encoding="utf-8")


def test_the_plan_counts_the_gpu_nodes_for_the_quota(
    dev_plan: PlanRun, dev_plan_json: tuple[int, dict[str, Any]]
) -> None:
    _, document = dev_plan_json
    assert document["gpu_quota"] == {"nodes": 2, "gpus": 2, "nodes_by_type": {"L4-1-24G": 1, "L40S-1-48G": 1}}
    assert "GPU nodes at once (every GPU pool at max_size, plus an upgrade's surge): 1 L4-1-24G, 1 L40S-1-48G" in (
        dev_plan.out
    )


HIDDEN = "\x1b]0;pwned\x07\x1b[2J\u202e\u2066\u200b\u2028\xa0\x85\ufeff"
"""A window-title escape, BEL, clear-screen, bidi override and isolate, zero-width space, line separator,
no-break space, NEL (a C1 control) and BOM: none may reach the terminal as it is."""


def test_plan_shows_a_variable_value_escaped_as_every_command_does(
    dev_platform: dict[str, Any], stack_file: Callable[[dict[str, Any]], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    dev_platform["ci"]["variables"] = {"BANNER": f"train{HIDDEN}ed"}
    assert main(["plan", "--config", str(stack_file(dev_platform))]) == 0
    out = capsys.readouterr().out
    assert not any(char in out for char in HIDDEN if not char.isprintable())
    # the value's cell, clipped to fit the table's 120 columns, shows what it shows escaped
    assert "value=train\\x1b]0;pwned\\x07\\x1b[2J\\u202e\\u2066\\u200b\\u2028\\xa0\\x85" in out


def test_plan_out_replaces_a_link_it_finds_and_never_writes_its_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plan-out"
    out.mkdir()
    (out / "ci-templates.yml").symlink_to(tmp_path / "nowhere")
    with planted_link(out / "cost.json"):
        assert main(["plan", "--out", str(out)]) == 0
    capsys.readouterr()
    assert not (tmp_path / "nowhere").exists() and not (out / "ci-templates.yml").is_symlink()
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == []  # no temporary file left


def test_plan_out_refuses_a_folder_that_is_a_link(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = _link(tmp_path / "plan-out", elsewhere)
    assert main(["plan", "--out", str(link)]) == 2
    assert capsys.readouterr().err == (
        f"error: --out {link}: cannot be written: it is a symlink, not followed (--out writes into real folders only)\n"
    )
    assert list(elsewhere.iterdir()) == []


def test_plan_fits_120_columns_and_opens_with_its_summary(dev_plan: PlanRun) -> None:
    """A reader's first screen: what the stack creates, costs and misses, before 150 lines of detail."""
    lines = dev_plan.out.splitlines()
    assert [line for line in lines if len(line) > 120] == []
    summary = lines[1 : lines.index("")]
    assert len(summary) <= 5
    assert summary[0].startswith("Resources: 35 to create (30 resources, 5 components; 7 protected)")
    assert summary[1].startswith(
        "EUR/week: 99.86 (mean of 20 simulated weeks); the target's bound 88.08, this spec 1.13x"
    )
    assert summary[2].endswith("MISSED, in 0 of 20 weeks (18 asked); p95 152.9 min over them")
    assert summary[3:] == ["Policy pack: no violation", "Warnings: 4 (listed below)"]
    warnings = lines.index("Warnings:")
    assert sum(line.startswith("  - ") for line in lines[warnings:]) == 4  # each warning wrapped, not cut


def test_no_figure_of_the_report_is_called_a_bound_unless_nothing_beats_it(dev_plan: PlanRun) -> None:
    """What limits jobs per node is a limit, not a bound; the target's price bound is one (docs/simulation.md)."""
    text = " ".join(dev_plan.out.split())
    price = ("the target's bound", "Bound on the target's price", "spends 1.13x the bound")
    for bound in price:
        assert bound in text
        text = text.replace(bound, "")
    assert "bound" not in text.lower()
    assert "limited by" in dev_plan.out  # what limits jobs per node
