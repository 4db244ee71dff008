"""Which stack secrets the spec needs: `__main__.py` reads exactly these, nothing under infra/ reads config."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infra.config.runner import CACHE_ACCESS_KEY_CONFIG, CACHE_SECRET_KEY_CONFIG

if TYPE_CHECKING:
    from infra.config.platform import PlatformSpec


def secret_config_keys(spec: PlatformSpec) -> list[str]:
    """Keys (in the project's namespace, `gpu-ci:<key>`) of the secrets the program needs, sorted."""
    keys = set(spec.ci.secret_config_keys()) | set(spec.registry.secret_config_keys())
    if spec.runner.cache is not None:
        keys |= {CACHE_ACCESS_KEY_CONFIG, CACHE_SECRET_KEY_CONFIG}
    return sorted(keys)
