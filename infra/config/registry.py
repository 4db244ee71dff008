"""`platform.registry`: the Scaleway Container Registry namespace the training images live in.

Its endpoint becomes the `REGISTRY` CI/CD variable the templates' image uses. A private namespace
gets a read-only pull credential for the job pods. That credential is made once, by a person with IAM
rights (docs/security.md, "Bootstrap: the registry pull key"), with an expiry, and handed to the
program as the stack secret `gpu-ci:registry_pull_secret_key`: the program creates no IAM resource,
so the key CI runs with needs no IAM write right.
"""

from __future__ import annotations

from typing import Final

from pydantic import field_validator

from infra.config.base import SpecModel, is_dns_label

REGISTRY_PULL_SECRET_CONFIG: Final = "registry_pull_secret_key"
"""Stack secret (`pulumi config set --secret registry_pull_secret_key ...`): the pull key's secret part."""
PULL_KEY_PLACEHOLDER: Final = "bootstrap-not-done"
"""What a stack file holds as the pull key until its bootstrap is done. A plain value, which the CLI hands to the
program as it is: the program then refuses it by name (`committed_placeholder`). A `secure:` placeholder stopped
the CLI itself, before the program ran, with a line that named no key."""


def committed_placeholder(full_key: str, value: str | None) -> str | None:
    """Why the stack secret `full_key` cannot be used when it holds the committed placeholder; None otherwise."""
    if full_key.partition(":")[2] != REGISTRY_PULL_SECRET_CONFIG or value != PULL_KEY_PLACEHOLDER:
        return None
    return (
        f"{full_key}={PULL_KEY_PLACEHOLDER!r}: the stack file's placeholder, not a key: `pulumi preview` and `up` stop "
        "on it until the registry's read-only pull key is made, once, by someone with IAM rights, outside CI "
        '(docs/security.md, "Bootstrap: the registry pull key"), and set with '
        f"`pulumi config set --secret {REGISTRY_PULL_SECRET_CONFIG} <its secret part>`"
    )


class RegistrySpec(SpecModel):
    """A registry namespace in the stack's region, created or adopted."""

    namespace: str = "gpu-ci"
    """Namespace name (unique in the region; the endpoint is `rg.<region>.scw.cloud/<namespace>`)."""
    existing: bool = False
    """Adopt an existing namespace of that name (read, not managed) instead of creating it."""
    is_public: bool = False
    """Anyone may pull; a private namespace gets a pull credential for job pods instead."""
    pull_secret: bool = True
    """Private namespace: give job pods a read-only pull credential (the stack secret registry_pull_secret_key)."""
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

    def secret_config_keys(self) -> list[str]:
        """The stack secrets this section needs: the pull key, for a private namespace with pull_secret."""
        return [REGISTRY_PULL_SECRET_CONFIG] if self.needs_pull_secret else []
