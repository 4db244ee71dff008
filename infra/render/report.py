"""The capacity report as text: printed by `python -m infra plan`, written as an artifact, posted in MRs."""

from __future__ import annotations

from infra.capacity import pool_reports, render_pool_table
from infra.spec.platform import PlatformSpec


def render_report(spec: PlatformSpec) -> str:
    """Per pool: node type, allocatable, jobs per node and what binds it, EUR/h while up and idle."""
    return "Capacity (per node, while a pool is up):\n" + render_pool_table(pool_reports(spec))
