"""Where the tests find the repository and their own files, whatever folder of tests/ they sit in."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository's root: Pulumi.yaml, the stack files, infra/."""
TESTS = ROOT / "tests"
FIXTURES = TESTS / "fixtures"
"""Training repositories whose pipelines check-ci, the simulation and the oracle read."""
DATA = TESTS / "data"
"""Recorded documents: the golden plan, previews, upstream values."""
