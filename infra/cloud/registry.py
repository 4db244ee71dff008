"""ContainerRegistry: the Scaleway registry namespace of the training images, and its pull credential.

Fed by `platform.registry`, `platform.region` and, for a private namespace, the stack secret
`gpu-ci:registry_pull_secret_key`. The namespace is created (protected: deleting it deletes its images)
or, with `existing: true`, read by name. Job pods pull with a Docker config (user `nologin`, the key as
password) built here from that secret; it stays a Pulumi secret end to end.

Why the key is not created here: a program that creates an IAM application, policy and API key needs
a Scaleway key with IAM write rights, and a key that can write IAM policies can grant itself anything.
The pull key is made once by a person (docs/security.md, "Bootstrap: the registry pull key"), with an
`expires_at`, and rotated by the runbook there. Stacks that still hold the IAM resources this
component used to create drop them with `pulumi state delete` (the same section says why).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

import pulumi
from pulumiverse_scaleway import registry as scw_registry

from infra.cloud.names import REGISTRY_TOKEN, child_name
from infra.config.registry import REGISTRY_PULL_SECRET_CONFIG, RegistrySpec

REGISTRY_USERNAME = "nologin"
"""Scaleway's registry takes any user name with an API secret key as the password; `nologin` is its documented one."""


@dataclass(frozen=True)
class ContainerRegistryArgs:
    """The stack's region and the registry section."""

    region: str
    registry: RegistrySpec
    pull_secret_key: pulumi.Input[str] | None = None
    """The pull key's secret part (stack secret `gpu-ci:registry_pull_secret_key`), for a private namespace."""


def docker_config_json(registry_host: str, password: str, username: str = REGISTRY_USERNAME) -> str:
    """A `.dockerconfigjson` document for one registry host."""
    auth = base64.b64encode(f"{username}:{password}".encode()).decode()
    return json.dumps({"auths": {registry_host: {"username": username, "password": password, "auth": auth}}})


class ContainerRegistry(pulumi.ComponentResource):
    """The namespace's endpoint (the REGISTRY variable) and, if private, the pull credential's Docker config."""

    endpoint: pulumi.Output[str]
    """`rg.<region>.scw.cloud/<namespace>`: what images are named after."""
    project_id: pulumi.Output[str]
    """Scaleway project of the namespace."""
    docker_config_json: pulumi.Output[str] | None
    """Read-only `.dockerconfigjson` for the namespace (a secret), or None for a public one."""

    def __init__(self, name: str, args: ContainerRegistryArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(REGISTRY_TOKEN, name, {}, opts)
        registry = args.registry
        if registry.needs_pull_secret and args.pull_secret_key is None:
            raise ValueError(
                f"platform.registry.pull_secret=true needs the stack secret gpu-ci:{REGISTRY_PULL_SECRET_CONFIG} "
                "(docs/security.md, 'Bootstrap: the registry pull key')"
            )
        if registry.existing:
            found = scw_registry.get_namespace_output(
                name=registry.namespace, region=args.region, opts=pulumi.InvokeOutputOptions(parent=self)
            )
            self.endpoint, self.project_id = found.endpoint, found.project_id.apply(lambda v: v or "")
        else:
            namespace = scw_registry.Namespace(
                child_name("namespace", name),
                name=registry.namespace,
                region=args.region,
                is_public=registry.is_public,
                description="Training images of the gpu-ci platform (managed by Pulumi)",
                opts=pulumi.ResourceOptions(parent=self, protect=registry.protect),
            )
            self.endpoint, self.project_id = namespace.endpoint, namespace.project_id
        self.docker_config_json = None
        if registry.needs_pull_secret and args.pull_secret_key is not None:
            self.docker_config_json = pulumi.Output.secret(
                pulumi.Output.all(self.endpoint, args.pull_secret_key).apply(
                    lambda values: docker_config_json(values[0].split("/", 1)[0], values[1])
                )
            )
        self.register_outputs(
            {"endpoint": self.endpoint, "project_id": self.project_id, "docker_config_json": self.docker_config_json}
        )
