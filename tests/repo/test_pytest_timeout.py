"""A hung test fails in a minute, with its name: pytest-timeout, configured in pyproject.toml for every test.

Shown on a tiny test file run as the suite runs (the repository's pytest configuration, in an xdist worker
and in one process), with the timeout cut to 0.3 s rather than waiting a real minute. One worker, not the
suite's two: `--dist loadfile` sends both tests of the one file to the same worker anyway, and a second worker
would only start up (import the plugins) to run nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from support.paths import ROOT

HUNG = """
import time


def test_passes():
    pass


def test_hangs_forever():
    time.sleep(600)
"""


def test_every_test_has_a_minute() -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert options["timeout"] == 60
    assert "-p pytest_timeout" in options["addopts"]  # plugins are named, not auto-loaded
    assert "timeout_method" not in options  # signal: the test fails and the run goes on, under xdist too


@pytest.mark.parametrize("workers", ["1", "0"], ids=["xdist", "one-process"])
def test_a_hung_test_fails_with_its_name(tmp_path: Path, workers: str) -> None:
    (tmp_path / "test_hung.py").write_text(HUNG, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONWARNINGS"))}
    env["COLUMNS"] = "200"  # the summary line whole
    config = ["-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path), "-p", "no:cacheprovider"]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *config, "-o", "timeout=0.3", "-n", workers, "test_hung.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert "FAILED test_hung.py::test_hangs_forever - Failed: Timeout (>0.3s) from pytest-timeout." in out
    assert "1 failed, 1 passed" in out
