"""Training pipelines on the dev stack's templates, for the tests that check them and simulate them."""

from __future__ import annotations

import textwrap
from pathlib import Path

HEADER = """
include: [{project: ml-team/training, ref: main, file: .gitlab/ci/gpu-ci-templates.yml}]
stages: [build, train]
"""
"""The platform's templates, as the training project includes them: `.train-rl-base` (runner ci-compile, [kapsule,
gpu]) and `.train-validate-base` (runner ci-training, [kapsule, ci-training])."""


def write_pipeline(folder: Path, jobs: str) -> Path:
    """`folder`/.gitlab-ci.yml: the header, then `jobs` (dedented)."""
    path = folder / ".gitlab-ci.yml"
    path.write_text(HEADER + textwrap.dedent(jobs), encoding="utf-8")
    return path
