"""The README as written, on the real CLI: its real path to `pulumi up`, command by command, and its install of the
checkout (the `gpu-ci` command, from another directory).

The real path's code block is read from README.md at each run and run line by line on a fresh copy of the project,
in the order written: `export` lines set the environment of the commands after them, `pulumi` lines run the CLI
(tests/support/engine.py: the CLI of tools/engine/go.mod, provider doubles for the clouds). What only a machine with
cloud access can run is replaced, each in STAND_INS with why, and nothing else: a line that is neither a stand-in's,
an `export` nor a `pulumi` command fails the test, and so does a stand-in that no line needs any more. So the README
cannot name a step the test does not run, nor lose one it needs.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.day import SUITE_DAY_ENV
from support.engine import POLICY_PACK, PROGRAM_FILES, PULUMI, EngineProject, Result, copy_program
from support.paths import ROOT
from support.pulumi_cli import cli_version

README = ROOT / "README.md"
REAL_PATH = "## The real path to `pulumi up`"
S3_BACKEND = yaml.safe_load((ROOT / ".gitlab-ci.yml").read_text(encoding="utf-8"))["variables"]["PULUMI_BACKEND_URL"]
"""The team's state backend, as the pipeline logs in to it: the README's must be the same."""
PASSPHRASE = "readme-test-passphrase"
SECRETS = {
    "gitlab:token": "glpat-readme-test-gitlab-token",
    "registry_pull_secret_key": "readme-test-registry-pull-key",
}


@dataclass(frozen=True)
class StandIn:
    written: str
    """Text of the README's block (part of a line, or a whole line)."""
    runs: str | None
    """What runs here instead (`{state}`: the local backend's folder); None: nothing, the line is done already."""
    why: str


STAND_INS = (
    StandIn(
        "python3 -m venv policy/venv && policy/venv/bin/pip install --require-hashes -r policy/requirements.txt",
        None,
        "the pack's venv is the suite's interpreter (EngineProject links policy/venv to it), which holds the pins of "
        "policy/requirements.txt (tests/repo/test_locks.py): no install from PyPI",
    ),
    StandIn(f"pulumi login '{S3_BACKEND}'", "pulumi login file://{state}", "no cloud: the DIY backend on local files"),
    StandIn(
        "--policy-pack policy/",
        f"--policy-pack {POLICY_PACK}",
        "the pack as a binary analyzer: the Go language host that runs a pack directory cannot be built here "
        "(docs/operations.md, the real engine offline)",
    ),
    StandIn("pulumi up ", "pulumi up --yes ", "the answer to up's prompt: the CLI runs without a terminal here"),
    StandIn("PULUMI_CONFIG_PASSPHRASE=...", f"PULUMI_CONFIG_PASSPHRASE={PASSPHRASE}", "the passphrase a team keeps"),
    StandIn("glpat-...", SECRETS["gitlab:token"], "a GitLab token (the double checks none)"),
)
USER_ENVIRONMENT = {
    "SCW_ACCESS_KEY": "SCWREADMETESTACCESS0",
    "SCW_SECRET_KEY": "readme-test-scaleway-secret-key",
    "REGISTRY_PULL_KEY": SECRETS["registry_pull_secret_key"],
}
"""What the README's reader has exported before the block (its Credentials bullet)."""


def code_block(heading: str) -> list[str]:
    """The lines of the first code block under `heading` in README.md."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index(f"\n{heading}\n") :]
    block = re.search(r"\n```sh\n(.*?)\n```\n", section, re.DOTALL)
    assert block, f"README.md: no ```sh block under {heading!r}"
    return block.group(1).splitlines()


def _steps(lines: list[str], state: Path) -> tuple[list[list[str]], set[str]]:
    """The block's commands as argv lists after the stand-ins (comments and stood-in lines dropped), and the
    stand-ins used."""
    steps, used = [], set()
    for written in lines:
        line: str | None = written
        for stand_in in STAND_INS:
            if line is not None and stand_in.written in line:
                used.add(stand_in.written)
                runs = stand_in.runs
                line = None if runs is None else line.replace(stand_in.written, runs.format(state=state))
        words = shlex.split(line or "", comments=True)
        if words:
            steps.append(words)
    return steps, used


def _expanded(word: str, env: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        assert match.group(1) in env, f"README: ${match.group(1)} is set by no line above it nor the Credentials"
        return env[match.group(1)]

    return re.sub(r"\$(\w+)", value, word)


class ReadmeProject(EngineProject):
    """An engine project whose backend and passphrase are what the README's lines give it, not preset."""

    @property
    def env(self) -> dict[str, str]:
        preset = super().env
        return {k: v for k, v in preset.items() if k not in {"PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE"}}


def run_block(project: EngineProject, lines: list[str], *, check: bool = True) -> list[Result]:
    """Run the block's lines in order, as a shell would; each `pulumi` command's result."""
    steps, used = _steps(lines, project.state)
    unused = {s.written for s in STAND_INS} - used
    assert not unused, f"stand-ins no README line needs any more: {sorted(unused)}"
    env = dict(USER_ENVIRONMENT)
    results = []
    for step in steps:
        words = [_expanded(word, env) for word in step]
        if words[0] == "export":
            for word in words[1:]:
                name, _, value = word.partition("=")
                env[name] = value
        elif words[0] == "pulumi":
            results.append(project.pulumi(*words[1:], env=env, check=check))
        else:
            pytest.fail(f"README: {shlex.join(words)!r} is no step this test can run, nor a stand-in's")
    return results


@pytest.fixture(scope="module")
def real_path(tmp_path_factory: pytest.TempPathFactory) -> tuple[EngineProject, list[Result]]:
    project = ReadmeProject(tmp_path_factory.mktemp("engine-readme"))
    return project, run_block(project, code_block(REAL_PATH))


def test_the_stand_ins_cover_what_they_say(real_path: tuple[EngineProject, list[Result]]) -> None:
    """Every stand-in is needed (run_block checks), and the README's backend is the pipeline's."""
    assert f"pulumi login '{S3_BACKEND}'" in "\n".join(code_block(REAL_PATH))
    assert all(s.why for s in STAND_INS)


def test_the_real_path_runs_as_written_to_a_green_preview_and_up(real_path: tuple[EngineProject, list[Result]]) -> None:
    project, results = real_path
    commands = [" ".join(r.args[:2]) for r in results]
    assert commands == [
        "login file://" + str(project.state),
        "stack select",
        "config set",
        "config set",
        "preview --diff",
        "up --yes",
    ]
    preview, up = results[-2], results[-1]
    for result in (preview, up):
        assert result.returncode == 0, result
        assert [line for line in result.output.splitlines() if line.startswith("error")] == [], result
        assert "bootstrap-not-done" not in result.output  # the placeholder replaced before the first preview
    assert re.search(r"^Policy Packs run:\n.*\n    gpu-ci\|local\|policy/\S+ +0\.1\.0$", preview.stdout, re.M), preview
    assert re.search(r"^    \+ \d+ to create$", preview.stdout, re.M) and re.search(
        r"^    \+ \d+ created$", up.stdout, re.M
    )
    stack: dict[str, Any] = yaml.safe_load(project.stack_file().read_text(encoding="utf-8"))
    assert set(stack["config"]["gpu-ci:registry_pull_secret_key"]) == {"secure"}  # the placeholder replaced
    assert project.records("Create")  # the doubles were asked to create the platform


def test_the_cli_is_the_pinned_one() -> None:
    """The CLI these tests run is the one tools/engine/go.mod pins, which the deploy image and the docs name."""
    done = subprocess.run([str(PULUMI), "version"], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == f"v{cli_version()}"


def test_the_readmes_install_gives_gpu_ci_which_plans_from_another_directory(
    tmp_path: Path, dev_plan_json_text: tuple[int, str]
) -> None:
    """The README's install line, in a venv of its own that sees the suite's packages (a .pth file: the locks are
    installed), pip and setuptools' editable build for real; then `gpu-ci plan --json` from another directory is
    the plan of the checkout, and `python -m infra` works there too."""
    [install] = [line for line in code_block("## Fresh machine: three commands") if " -e ." in line]
    checkout = tmp_path / "gpu-ci"
    checkout.mkdir()
    copy_program(ROOT, checkout, (*PROGRAM_FILES, "pyproject.toml", "requirements.in"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    [site] = (venv / "lib").glob("python3*/site-packages")
    (site / "suite.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path), **SUITE_DAY_ENV}
    words = shlex.split(install)
    assert words[0] == "venv/bin/pip"
    pip = [str(venv / "bin" / "python"), "-m", "pip", *words[1:], "--quiet", "--disable-pip-version-check"]
    done = subprocess.run(pip, cwd=checkout, env=env, capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    plan = subprocess.run(
        [str(venv / "bin" / "gpu-ci"), "plan", "--json"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (plan.returncode, plan.stdout) == dev_plan_json_text, plan.stderr[-2000:]
    usage = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "infra", "--help"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert usage.returncode == 0 and usage.stdout.startswith("usage: python -m infra"), usage.stderr
