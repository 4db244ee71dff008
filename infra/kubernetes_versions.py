"""Kapsule's Kubernetes minor versions and when Scaleway withdraws them (pure data, no Pulumi).

Scaleway's version support policy (its "Kubernetes version support policy" page) gives each minor version a
14-month window: from its *deprecation* date no new cluster can be created at it, and after its *end of
support* Scaleway upgrades the remaining clusters to the next minor version itself. `infra.config.checks.
versions` reads these dates against the day of the plan. Dates as published on VERSIONS_AS_OF; a row whose
dates Scaleway had not yet published carries the policy's window from its release (`published=False`).
Verify with `scw k8s version list` and the policy page (docs/runbook.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

VERSIONS_AS_OF = "2026-12-01"


@dataclass(frozen=True)
class KubernetesVersion:
    """One minor version on Kapsule."""

    minor: str
    released: date | None
    """When Kapsule offered it (None: not recorded)."""
    creation_ends: date
    """Scaleway's deprecation: no new cluster at this version from this day."""
    support_ends: date
    """Scaleway's end of support: after this day it upgrades the clusters still at it."""
    published: bool = True
    """False: the dates follow the policy's window from `released`, not yet read from Scaleway's table."""


KUBERNETES_VERSIONS = {
    v.minor: v
    for v in (
        KubernetesVersion("1.32", date(2025, 3, 24), date(2026, 3, 24), date(2026, 5, 24)),
        KubernetesVersion("1.33", date(2025, 9, 4), date(2026, 9, 4), date(2026, 11, 4)),
        KubernetesVersion("1.34", date(2025, 9, 29), date(2026, 9, 29), date(2026, 11, 29)),
        KubernetesVersion("1.35", None, date(2027, 1, 19), date(2027, 3, 19)),
        KubernetesVersion("1.36", date(2026, 7, 7), date(2027, 7, 7), date(2027, 9, 7), published=False),
    )
}
"""By minor version, oldest first."""


def minor_of(version: str) -> str:
    """`1.35` of `1.35` or `1.35.3`."""
    return ".".join(version.split(".")[:2])


def minor_key(minor: str) -> tuple[int, ...]:
    """`1.35` as (1, 35), so 1.100 sorts after 1.99."""
    return tuple(int(part) for part in minor.split("."))


def newest_version() -> KubernetesVersion:
    return max(KUBERNETES_VERSIONS.values(), key=lambda v: minor_key(v.minor))


def oldest_version() -> KubernetesVersion:
    return min(KUBERNETES_VERSIONS.values(), key=lambda v: minor_key(v.minor))
