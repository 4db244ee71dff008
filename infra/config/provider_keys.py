"""The config keys of the three providers' namespaces, as the SDK packages of requirements.txt ship them.

A stack file's `gitlab:baseURL` (for `gitlab:baseUrl`) is no key of the GitLab provider: the engine hands it on and
the provider falls back to its default URL, so the program refuses it by name, with the closest key. Read from the
packages' files, not imported (importing the SDKs costs `plan` seconds): `pulumi_gitlab/config/vars.py` and
`pulumiverse_scaleway/config/vars.py` (the `__config__.get...('<key>')` of each setting), and
`pulumi_kubernetes/provider.py` (its `ProviderArgs`, the inputs a default provider takes from `kubernetes:<key>`).
tests/config/test_provider_keys.py holds these lists against the installed packages, so a bump cannot drift.
"""

from __future__ import annotations

PROVIDER_CONFIG_KEYS: dict[str, tuple[str, ...]] = {
    "gitlab": (
        "baseUrl",
        "cacertFile",
        "clientCert",
        "clientKey",
        "configFile",
        "context",
        "earlyAuthCheck",
        "enableAutoCiSupport",
        "headers",
        "insecure",
        "retries",
        "token",
    ),
    "kubernetes": (
        "alwaysRender",
        "cluster",
        "clusterIdentifier",
        "context",
        "deleteUnreachable",
        "enableConfigMapMutable",
        "enablePatchForce",
        "enableSecretMutable",
        "enableServerSideApply",
        "helmReleaseSettings",
        "kubeClientSettings",
        "kubeconfig",
        "namespace",
        "renderYamlToDirectory",
        "skipUpdateUnreachable",
        "suppressDeprecationWarnings",
        "suppressHelmHookWarnings",
        "upsertExistingObjects",
    ),
    "scaleway": (
        "accessKey",
        "apiUrl",
        "endpoints",
        "organizationId",
        "profile",
        "projectId",
        "region",
        "s3UsePathStyle",
        "secretKey",
        "zone",
    ),
}
"""Provider namespace -> its config keys (the schema's camelCase names), sorted."""

SDK_FILES = {
    "gitlab": "pulumi_gitlab/config/vars.py",
    "kubernetes": "pulumi_kubernetes/provider.py",
    "scaleway": "pulumiverse_scaleway/config/vars.py",
}
"""Where each list is read from, under site-packages."""

TERRAFORM_BRIDGED = frozenset({"gitlab", "scaleway"})
"""Providers built on the Terraform bridge, which reads a key's snake_case spelling as the key itself (the
bridge maps `accessKey` to Terraform's `access_key`, and `access_key` to the same): `scaleway:access_key` is
`scaleway:accessKey` (docs/operations.md writes the first)."""

ENGINE_KEYS = ("version", "pluginDownloadURL")
"""Keys the engine reads in every provider's namespace (the default provider's plugin version and source)."""


def snake_case(key: str) -> str:
    """`accessKey` -> `access_key`, as the Terraform bridge names a setting."""
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key).lstrip("_")


def known_keys(namespace: str) -> tuple[str, ...]:
    """Every spelling of a key the provider of `namespace` takes (empty for a namespace of no provider)."""
    keys = PROVIDER_CONFIG_KEYS.get(namespace, ())
    if not keys:
        return ()
    spellings = [*keys, *ENGINE_KEYS]
    if namespace in TERRAFORM_BRIDGED:
        spellings += [snake_case(key) for key in keys if snake_case(key) != key]
    return tuple(spellings)
