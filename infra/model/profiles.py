"""A profile as the platform uses it (pure): its pool, and what its CI template carries (tags, variables).

The template's tags reach exactly one runner, its pool's (`infra.model.runners`); its variables are the four
`KUBERNETES_*` requests and limits, the pool selector outside the default pool, then the profile's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from infra.config.platform import PlatformSpec
from infra.config.profiles import ProfileSpec
from infra.job_overrides import JOB_RESOURCES, POOL_VARIABLE, pool_selector
from infra.model.routes import template_tags


@dataclass(frozen=True)
class Profile:
    """A class of CI jobs: its pool, its template and what the template carries."""

    name: str
    spec: ProfileSpec
    tags: tuple[str, ...]
    """Tags its CI template carries: only its pool's runners hold them all (`infra.model.routes`)."""
    variables: Mapping[str, str]
    """Its template's variables: the four `KUBERNETES_*` requests and limits, the pool selector outside the
    default pool, then the profile's own."""

    @property
    def pool(self) -> str:
        return self.spec.pool

    @property
    def template(self) -> str:
        return self.spec.template

    @property
    def families(self) -> tuple[str, ...]:
        return self.spec.families

    @property
    def runner(self) -> str:
        return self.spec.pool


def derive_profile(spec: PlatformSpec, name: str, default: str) -> Profile:
    """The profile `name`, its template routed to `default`'s runner or to its own pool's."""
    profile = spec.profiles[name]
    on_default = profile.pool == default
    variables = {r.variable: getattr(profile, r.field).text for r in JOB_RESOURCES}
    if not on_default:
        variables[POOL_VARIABLE] = pool_selector(profile.pool)
    variables.update(profile.variables)
    return Profile(name=name, spec=profile, tags=template_tags(spec, profile.pool, default), variables=variables)
