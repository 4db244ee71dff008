"""ContainerRegistry: the Scaleway registry namespace of the training images, and its pull credential.

Fed by `platform.registry` and `platform.region`. The namespace is created (protected: deleting it
deletes its images) or, with `existing: true`, read by name. For a private namespace the job pods
need to pull: an IAM application with a read-only policy on the namespace's project, and an API key of
that application, give a Docker config (user `nologin`, the key as password). The key is made and kept
by Pulumi as a secret; nobody types or sees it.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

import pulumi
from pulumiverse_scaleway import iam as scw_iam
from pulumiverse_scaleway import registry as scw_registry

from infra.cloud.names import REGISTRY_TOKEN, child_name
from infra.config.platform import PlatformSpec

PULL_PERMISSION_SETS = ["ContainerRegistryReadOnly"]
REGISTRY_USERNAME = "nologin"
"""Scaleway's registry takes any user name with an API secret key as the password; `nologin` is its documented one."""


@dataclass(frozen=True)
class ContainerRegistryArgs:
    spec: PlatformSpec


def docker_config_json(registry_host: str, password: str, username: str = REGISTRY_USERNAME) -> str:
    """A `.dockerconfigjson` document for one registry host."""
    auth = base64.b64encode(f"{username}:{password}".encode()).decode()
    return json.dumps({"auths": {registry_host: {"username": username, "password": password, "auth": auth}}})


class ContainerRegistry(pulumi.ComponentResource):
    """The namespace's endpoint (the REGISTRY variable) and, if private, a pull credential."""

    endpoint: pulumi.Output[str]
    """`rg.<region>.scw.cloud/<namespace>`: what images are named after."""
    project_id: pulumi.Output[str]
    """Scaleway project of the namespace."""
    docker_config_json: pulumi.Output[str] | None
    """Read-only `.dockerconfigjson` for the namespace (a secret), or None for a public one."""

    def __init__(self, name: str, args: ContainerRegistryArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(REGISTRY_TOKEN, name, {}, opts)
        spec, registry = args.spec, args.spec.registry
        if registry.existing:
            found = scw_registry.get_namespace_output(
                name=registry.namespace, region=spec.region, opts=pulumi.InvokeOutputOptions(parent=self)
            )
            self.endpoint, self.project_id = found.endpoint, found.project_id.apply(lambda v: v or "")
        else:
            namespace = scw_registry.Namespace(
                child_name("namespace", name),
                name=registry.namespace,
                region=spec.region,
                is_public=registry.is_public,
                description="Training images of the gpu-ci platform (managed by Pulumi)",
                opts=pulumi.ResourceOptions(parent=self, protect=registry.protect),
            )
            self.endpoint, self.project_id = namespace.endpoint, namespace.project_id
        self.docker_config_json = (
            self._pull_credential(name, registry.namespace) if registry.needs_pull_secret else None
        )
        self.register_outputs(
            {"endpoint": self.endpoint, "project_id": self.project_id, "docker_config_json": self.docker_config_json}
        )

    def _pull_credential(self, name: str, namespace: str) -> pulumi.Output[str]:
        application = scw_iam.Application(
            child_name("pull", name),
            name=f"{namespace}-registry-pull",
            description="Pulls gpu-ci training images for CI job pods (managed by Pulumi)",
            opts=pulumi.ResourceOptions(parent=self),
        )
        policy = scw_iam.Policy(
            child_name("pull-policy", name),
            name=f"{namespace}-registry-pull",
            description="Read-only access to the gpu-ci registry namespace's project",
            application_id=application.id,
            rules=[scw_iam.PolicyRuleArgs(project_ids=[self.project_id], permission_set_names=PULL_PERMISSION_SETS)],
            opts=pulumi.ResourceOptions(parent=self),
        )
        key = scw_iam.ApiKey(
            child_name("pull-key", name),
            application_id=application.id,
            description="Image pulls of gpu-ci CI job pods (managed by Pulumi)",
            opts=pulumi.ResourceOptions(parent=self, depends_on=[policy]),
        )
        return pulumi.Output.secret(
            pulumi.Output.all(self.endpoint, key.secret_key).apply(
                lambda values: docker_config_json(values[0].split("/", 1)[0], values[1])
            )
        )
