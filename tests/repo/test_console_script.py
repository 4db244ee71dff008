"""pyproject.toml declares the project and its `gpu-ci` command: the same command line as `python -m infra`, which
reads the checkout it belongs to from any directory, and says in one line where it runs when it has no checkout.

The install itself (pip, setuptools' editable build, the console script run from another directory) is run in
tests/engine/test_engine_readme.py: it takes seconds.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from setuptools import find_packages
from support.paths import ROOT
from support.requirements import pin

import infra.__main__ as cli

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _run(entry: Any, argv: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    """The entry point as its script calls it (`sys.exit(entry())`, arguments in sys.argv), help unwrapped."""
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.setenv("COLUMNS", "1000")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), contextlib.suppress(SystemExit):
        code = entry()
        return code, out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()  # --help exits 0


def test_the_gpu_ci_script_is_the_command_line_of_python_m_infra(monkeypatch: pytest.MonkeyPatch) -> None:
    module, _, name = PYPROJECT["project"]["scripts"]["gpu-ci"].partition(":")
    entry = getattr(importlib.import_module(module), name)
    assert entry is cli.console
    _, script, _ = _run(entry, ["gpu-ci", "--help"], monkeypatch)
    _, python_m, _ = _run(cli.main, ["__main__.py", "--help"], monkeypatch)
    assert script.startswith("usage: gpu-ci [-h] command ...")
    assert script.replace("gpu-ci", "python -m infra") == python_m.replace("gpu-ci", "python -m infra")
    assert all(f"    {command} " in python_m or f"    {command}\n" in python_m for command in cli.COMMANDS)


def test_the_package_holds_what_the_commands_import() -> None:
    """infra, and the pack's rules it imports (policy.policies.definitions); nothing else of the checkout."""
    found = set(find_packages(ROOT, include=PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]))
    on_disk = {
        ".".join(path.parent.relative_to(ROOT).parts)
        for top in ("infra", "policy")
        for path in (ROOT / top).rglob("__init__.py")
        if "venv" not in path.parts
    }
    assert found == on_disk
    assert {"infra", "infra.cli", "policy", "policy.policies"} <= found


def test_its_build_backend_is_the_locked_setuptools() -> None:
    """`--no-build-isolation` builds with the venv's setuptools, which the dev lock installed: the same version."""
    assert PYPROJECT["build-system"]["requires"] == [f"setuptools=={pin('setuptools')}"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["dependencies"] == {"file": ["requirements.in"]}


def test_the_commands_read_their_checkout_from_any_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`simulate` reads the dev stack of the checkout, wherever it runs (`gpu-ci plan` from another directory:
    tests/engine/test_engine_readme.py)."""
    said = []
    for folder in (ROOT, tmp_path):
        monkeypatch.chdir(folder)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert cli.main(["simulate"]) == 0
        said.append(out.getvalue())
    assert said[0] == said[1] and "per-pool runners" in said[0]


def test_without_its_checkout_the_command_says_where_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A copy of the package installed without `-e` (site-packages/infra): one line, before any command runs."""
    monkeypatch.setattr(cli, "CHECKOUT", tmp_path)
    assert cli.main(["plan"], prog="gpu-ci") == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "error: gpu-ci runs from gpu-ci's checkout (its root), or from any directory once the checkout is installed "
        "into its venv (pip install --no-deps --no-build-isolation -e <checkout>, which adds the `gpu-ci` command); "
        f"{tmp_path} holds no Pulumi.yaml beside infra/\n"
    )


def test_a_reader_that_stops_early_ends_the_command_quietly() -> None:
    """`plan --json | head`: the reader closes the pipe before the command has written all; the command ends with
    the shell's SIGPIPE status and no BrokenPipeError traceback (`exit_code` wraps both `gpu-ci` and `-m infra`).
    The command here is a stand-in that prints a plan's worth of lines (a real plan takes seconds)."""
    import subprocess

    program = (
        "import sys, infra.__main__ as cli\n"
        "def command():\n"
        "    for n in range(20000):\n"
        "        print(f'line {n} of a long plan')\n"
        "    return 0\n"
        "sys.exit(cli.exit_code(command))\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", program], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before the command writes
    stderr = process.stderr.read().decode()
    process.stderr.close()
    assert process.wait(timeout=30) == cli.SIGPIPE_EXIT, stderr
    assert stderr == ""
