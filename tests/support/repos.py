"""Git repositories for the tests that run the pipeline's scripts for real, and the virtualenv they expect."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

GIT = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.com", "-c", "init.defaultBranch=main"]
"""A fixed author and a `main` default branch, whatever the user's git config says."""


def git(repo: Path, *args: str) -> str:
    """Run `git ARGS` in `repo`; what it printed, stripped (a failure raises)."""
    return subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def venv_python(repo: Path, prelude: str = "") -> Path:
    """`repo`/venv/bin/python, running this interpreter: the jobs' before_script (a virtualenv, pip) is not
    run. `prelude`: shell lines run first, which may answer a call themselves (and exit)."""
    python = repo / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\n{prelude}exec "{sys.executable}" "$@"\n', encoding="utf-8")
    python.chmod(0o755)
    return python
