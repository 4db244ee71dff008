"""Every config error names its stack file, the key and the key it most likely means, on one line with no literal
escape sequence (issue 39, item 3): through `plan` (the real program under the mocks, as `pulumi preview` runs it)
and through the commands that read the spec themselves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.paths import FIXTURES, ROOT

from infra.__main__ import main
from infra.cli import fail

DEV_STACK = (ROOT / "Pulumi.dev.yaml").read_text(encoding="utf-8")
NAMESPACES = "read: gpu-ci:, gitlab:, kubernetes:, scaleway:, pulumi:"


def _edited(tmp_path: Path, old: str, new: str, name: str = "Pulumi.typo.yaml") -> Path:
    assert old in DEV_STACK, old
    path = tmp_path / name
    path.write_text(DEV_STACK.replace(old, new, 1), encoding="utf-8")
    return path


def _line_of(path: Path, new: str) -> int:
    """The line of the edited file `path` where the edit's last line (the key it changed or added) is written."""
    text = path.read_text(encoding="utf-8")
    return text.count("\n", 0, text.index(new)) + new.rstrip("\n").count("\n") + 1


def _errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "\\t" not in captured.err and "\\n" not in captured.err and "\t" not in captured.err
    return captured.err.splitlines()


COMPILE = "      ci-compile:\n        node_type: L4-1-24G\n        zone: fr-par-2\n        min_size: 0\n        "
CASES = [
    (
        f"{COMPILE}max_size:",
        f"{COMPILE}max_sise:",
        "platform.pools.ci-compile.max_sise=1: unknown key; did you mean max_size?",
    ),
    (
        "  gpu-ci:platform:",
        "  gpu-ci:platfrom:",
        "gpu-ci:platfrom: unknown key (the program reads gpu-ci:platform); did you mean gpu-ci:platform?",
    ),
    (
        "  gpu-ci:platform:",
        "  gpu-cl:platform:",
        f"gpu-cl:platform: unknown namespace, nothing reads it ({NAMESPACES}); did you mean gpu-ci:platform?",
    ),
    (
        "config:\n",
        "config:\n  gitlab:baseURL: https://gitlab.example.com/api/v4/\n",
        "gitlab:baseURL: unknown key of the gitlab provider, which would ignore it; did you mean gitlab:baseUrl?",
    ),
    (
        "          replicas: 2",
        "          replicaz: 2",
        "platform.pools.ci-compile.gpu_sharing.replicaz=2: unknown key; did you mean replicas?",
    ),
]


@pytest.mark.parametrize(("old", "new", "line"), CASES, ids=["spec-key", "our-key", "namespace", "provider", "union"])
def test_plan_names_the_file_the_key_and_the_key_meant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, line: str
) -> None:
    path = _edited(tmp_path, old, new)
    errors = _errors(["plan", "--config", str(path)], capsys)
    assert f"error: Pulumi.typo.yaml:{_line_of(path, new)}: {line}" in errors  # a renamed key: also "missing"
    assert all(re.match(r"error: Pulumi\.typo\.yaml:[0-9]+: ", error) for error in errors), errors


def test_a_stack_without_its_spec_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Not the SDK's `Missing required configuration variable` and a tab-indented `please set a value ...`."""
    path = tmp_path / "Pulumi.bare.yaml"
    path.write_text("config:\n  gitlab:baseUrl: https://gitlab.example.com/api/v4/\n", encoding="utf-8")
    assert _errors(["plan", "--config", str(path)], capsys) == [
        "error: Pulumi.bare.yaml: gpu-ci:platform: missing: the stack holds no platform spec (every key: "
        "docs/config-reference.md; Pulumi.dev.yaml is a complete one)"
    ]


@pytest.mark.parametrize("command", [["simulate"], ["check-ci", str(FIXTURES / "training-repo")], ["recommend"]])
def test_the_commands_that_read_the_spec_themselves_name_the_file_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    old, new, line = CASES[0]
    path = _edited(tmp_path, old, new)
    errors = _errors([*command, "--config", str(path)], capsys)
    assert errors == [f"error: Pulumi.typo.yaml:{_line_of(path, new)}: {line}"]


def test_a_librarys_tab_indented_line_is_shown_without_a_literal_escape(capsys: pytest.CaptureFixture[str]) -> None:
    """The Pulumi SDK's ConfigMissingError reads "...\\n\\tplease set a value ...": each line an `error:` line, the
    tab laid out, never shown as `\\t`."""
    assert fail("Missing required configuration variable 'gpu-ci:x'\n\tplease set a value using the command") == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: Missing required configuration variable 'gpu-ci:x'",
        "error: please set a value using the command",
    ]
