"""The cluster's Kubernetes version against Scaleway's withdrawal dates, on a given day (pure: the day is an
input, so tests pin it; the program and `plan` pass the day they run on, `plan_day`).

Not part of `load_spec`, which is a function of the spec alone. The program cannot tell a stack whose cluster
exists already from a new one, so a cluster the stack manages (no `cluster.existing_id`) is checked as one
`up` may create:
- at or past its version's creation end (Scaleway's deprecation): an error. No cluster can be created at it,
  and an existing one is upgraded by Scaleway after the end of support, which `up` would then try to undo;
  setting the next version upgrades an existing cluster in place;
- within NEAR_END_DAYS of its creation end: a warning naming both dates and the version to move to;
- a version the catalogue (`infra.kubernetes_versions`) does not hold: a warning, or an error below its oldest.
An adopted cluster's version is Scaleway's to keep (read, never set): not checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date

from infra.config.errors import Problem, key_path
from infra.config.platform import PlatformSpec
from infra.kubernetes_versions import KUBERNETES_VERSIONS, minor_key, minor_of, newest_version, oldest_version

NEAR_END_DAYS = 60
"""A version is near its end this many days before its creation end: the two months Scaleway leaves between
that and its forced upgrade, so a team that acts on the first warning upgrades in its own time before either."""
TODAY_VARIABLE = "GPU_CI_TODAY"
"""Set to a date (`2027-01-10`), the day the program checks versions against; unset, the real date."""


def plan_day(environ: Mapping[str, str], today: date) -> date:
    """The day to check against: `$GPU_CI_TODAY` when set (what would `plan` say then?), else `today`."""
    raw = environ.get(TODAY_VARIABLE)
    if raw is None:
        return today
    try:
        return date.fromisoformat(raw)
    except ValueError:
        raise ValueError(f"{TODAY_VARIABLE}={raw[:40]!r}: not a date like 2027-01-10") from None


def version_problems(spec: PlatformSpec, today: date) -> list[Problem]:
    """Errors and warnings of `platform.cluster.version` on `today`."""
    cluster = spec.cluster
    if cluster.existing_id:
        return []
    path = key_path("cluster", "version")
    known = KUBERNETES_VERSIONS.get(minor_of(cluster.version))
    newest = newest_version()
    if known is None:
        oldest = oldest_version()
        if minor_key(minor_of(cluster.version)) < minor_key(oldest.minor):
            return [Problem(path, cluster.version, f"withdrawn by Scaleway (it offers {oldest.minor} and later)")]
        return [
            Problem(
                path,
                cluster.version,
                f"not in gpu-ci's catalogue of Kapsule versions ({', '.join(KUBERNETES_VERSIONS)}): when Scaleway "
                "withdraws it is unknown (check `scw k8s version list` and add it to infra/kubernetes_versions.py)",
                "warning",
            )
        ]
    dates = f"creates no cluster from {known.creation_ends}, upgrades the rest after {known.support_ends}"
    later = f"set {newest.minor}" if newest.minor != known.minor else "no newer version is in the catalogue"
    if today >= known.creation_ends:
        return [
            Problem(
                path,
                cluster.version,
                f"withdrawn: Scaleway {dates}; {later} (an existing cluster upgrades in place)",
            )
        ]
    left = (known.creation_ends - today).days
    if left <= NEAR_END_DAYS:
        return [Problem(path, cluster.version, f"near its end, in {left} days: Scaleway {dates}; {later}", "warning")]
    return []
