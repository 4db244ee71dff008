"""Edits of the dev platform object that several tests make."""

from __future__ import annotations

from typing import Any


def add_h100_pool(platform: dict[str, Any], *, cold_start_minutes: int | None = None) -> None:
    """An H100 pool and the profile that targets it (a pool no profile reaches is refused as dead config)."""
    pool: dict[str, Any] = {"node_type": "H100-1-80G", "zone": "fr-par-2"}
    if cold_start_minutes is not None:
        pool["cold_start_minutes"] = cold_start_minutes
    platform["pools"]["ci-h100"] = pool
    platform["profiles"]["llm"] = {
        "pool": "ci-h100",
        "families": ["llama"],
        "template": ".train-llm-base",
        "cpu_request": "8",
        "cpu_limit": "12",
        "memory_request": "64Gi",
        "memory_limit": "96Gi",
    }
