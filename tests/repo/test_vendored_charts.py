"""The vendored runner chart is the one the spec pins, unchanged (its published digest), and the loopback chart
repository's index names it as Helm reads it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import yaml
from support.chart_repository import RUNNER_CHART, RUNNER_CHART_SHA256, write_repository

from infra.config.runner import CHART_NAME, RunnerSpec


def test_the_vendored_chart_is_the_pinned_release_unchanged() -> None:
    assert hashlib.sha256(RUNNER_CHART.read_bytes()).hexdigest() == RUNNER_CHART_SHA256
    assert RUNNER_CHART.name == f"{CHART_NAME}-{RunnerSpec().chart_version}.tgz"


def test_the_repository_index_names_the_chart_its_version_and_digest(tmp_path: Path) -> None:
    write_repository(tmp_path, [RUNNER_CHART])
    index = yaml.safe_load((tmp_path / "index.yaml").read_text(encoding="utf-8"))
    (entry,) = index["entries"][CHART_NAME]
    assert (entry["name"], entry["version"], entry["appVersion"]) == (CHART_NAME, "0.86.0", "18.9.0")
    assert (entry["urls"], entry["digest"]) == ([RUNNER_CHART.name], RUNNER_CHART_SHA256)
    assert (tmp_path / RUNNER_CHART.name).read_bytes() == RUNNER_CHART.read_bytes()
