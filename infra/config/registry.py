"""`platform.registry`: the Scaleway Container Registry namespace the training images live in.

Its endpoint becomes the `REGISTRY` CI/CD variable the templates' image uses. A private namespace
gets a read-only pull credential for the job pods (an IAM application and API key made by the
program, never typed by anyone).
"""

from __future__ import annotations

from pydantic import field_validator

from infra.config.base import SpecModel, is_dns_label


class RegistrySpec(SpecModel):
    """A registry namespace in the stack's region, created or adopted."""

    namespace: str = "gpu-ci"
    """Namespace name (unique in the region; the endpoint is rg.<region>.scw.cloud/<namespace>)."""
    existing: bool = False
    """Adopt an existing namespace of that name (read, not managed) instead of creating it."""
    is_public: bool = False
    pull_secret: bool = True
    """Private namespace: give job pods a read-only pull credential (IAM application + API key)."""
    protect: bool = True
    """Deleting a namespace deletes its images: Pulumi refuses unless unprotected first."""

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        if not is_dns_label(value):
            raise ValueError("not a registry namespace name (a-z, 0-9 and '-')")
        return value

    @property
    def needs_pull_secret(self) -> bool:
        return self.pull_secret and not self.is_public
