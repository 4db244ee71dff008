"""GitlabRunner: the runner's registration on GitLab and its Helm release on the cluster.

Fed by `platform.runner`, `platform.gitlab` and, through `infra.routing`, the pools and profiles. It
creates:
- `gitlab.UserRunner` (project or group scope; the spec's tags; no untagged jobs): GitLab hands back a
  `glrt-` authentication token;
- the runner namespace, and in it the Secret the chart reads the token from (`runner-token`, plus the
  empty `runner-registration-token` the chart also mounts). The token travels only as a Pulumi secret,
  from the UserRunner's output into that Secret: never into Helm values, logs or plain outputs;
- optionally the image-pull Secret (registry) and the cache Secret and bucket (Object Storage);
- the `gitlab-runner` chart (charts.gitlab.io, pinned version) as a Helm release, with values and the
  config.toml template from `infra.render.runner`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_gitlab as gitlab
import pulumi_kubernetes as k8s
from pulumiverse_scaleway import object as scw_object

from infra.cloud.names import RUNNER_TOKEN, child_name
from infra.config.platform import PlatformSpec
from infra.config.runner import CACHE_ACCESS_KEY_CONFIG, CACHE_SECRET_KEY_CONFIG, CHART_NAME, CHART_REPOSITORY
from infra.render.runner import (
    CACHE_SECRET_NAME,
    REGISTRY_PULL_SECRET_NAME,
    RELEASE_NAME,
    RUNNER_ID_ANNOTATION,
    TOKEN_SECRET_NAME,
    runner_helm_values,
)

HELM_TIMEOUT_SECONDS = 600
MANAGED_BY = {"app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/part-of": "gpu-ci"}


@dataclass(frozen=True)
class GitlabRunnerArgs:
    """The spec, the cluster's provider, and the secrets the runner needs (Pulumi secrets)."""

    spec: PlatformSpec
    provider: k8s.Provider
    registry_docker_config: pulumi.Input[str] | None = None
    """`.dockerconfigjson` for pulling training images (None: public registry, no pull secret)."""
    secrets: Mapping[str, pulumi.Input[str]] | None = None
    """Stack secrets by config key; the cache keys when the spec has a cache."""


class GitlabRunner(pulumi.ComponentResource):
    """One runner: its GitLab registration and its manager on the cluster."""

    runner_id: pulumi.Output[str]
    """GitLab's id of the runner (not secret; the token is)."""
    namespace: pulumi.Output[str]
    """Namespace of the manager and the job pods."""
    release_status: pulumi.Output[str]
    """Helm release status (`deployed`)."""

    def __init__(self, name: str, args: GitlabRunnerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(RUNNER_TOKEN, name, {}, opts)
        spec, secrets = args.spec, args.secrets or {}
        if spec.registry.needs_pull_secret != (args.registry_docker_config is not None):
            raise ValueError("the registry pull credential must be given exactly when the registry is private")
        runner = self._registration(name, spec)
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args.provider)
        namespace = k8s.core.v1.Namespace(
            child_name("namespace", name),
            metadata=k8s.meta.v1.ObjectMetaArgs(name=spec.runner.namespace, labels=MANAGED_BY),
            opts=k8s_opts,
        )
        in_namespace = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[namespace])
        token_secret = k8s.core.v1.Secret(
            child_name("token", name),
            metadata=self._metadata(TOKEN_SECRET_NAME, spec),
            type="Opaque",
            string_data={
                "runner-token": pulumi.Output.secret(runner.token),
                "runner-registration-token": "",
            },
            opts=in_namespace,
        )
        needed: list[pulumi.Resource] = [token_secret]
        if args.registry_docker_config is not None:
            needed.append(
                k8s.core.v1.Secret(
                    child_name("registry-pull", name),
                    metadata=self._metadata(REGISTRY_PULL_SECRET_NAME, spec),
                    type="kubernetes.io/dockerconfigjson",
                    string_data={".dockerconfigjson": pulumi.Output.secret(args.registry_docker_config)},
                    opts=in_namespace,
                )
            )
        if spec.runner.cache is not None:
            needed += self._cache(name, spec, secrets, in_namespace)

        values = runner_helm_values(spec)
        values["podAnnotations"] = {RUNNER_ID_ANNOTATION: runner.id}
        release = k8s.helm.v3.Release(
            child_name("release", name),
            name=RELEASE_NAME,
            chart=CHART_NAME,
            version=spec.runner.chart_version,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=CHART_REPOSITORY),
            namespace=namespace.metadata.name,
            values=values,
            atomic=True,
            cleanup_on_fail=True,
            timeout=HELM_TIMEOUT_SECONDS,
            max_history=10,
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[namespace, *needed]),
        )
        self.runner_id = runner.id
        self.namespace = namespace.metadata.name
        self.release_status = release.status.apply(lambda status: status.status if status else "")
        self.register_outputs(
            {"runner_id": self.runner_id, "namespace": self.namespace, "release_status": self.release_status}
        )

    def _registration(self, name: str, spec: PlatformSpec) -> gitlab.UserRunner:
        """The runner on GitLab: its scope decides which projects' jobs it may take."""
        invoke_opts = pulumi.InvokeOutputOptions(parent=self)
        if spec.gitlab.runner_scope == "group":
            group = gitlab.get_group_output(full_path=spec.gitlab.group, opts=invoke_opts)
            scope = {"runner_type": "group_type", "group_id": group.group_id}
        else:
            project = gitlab.get_project_output(path_with_namespace=spec.gitlab.project, opts=invoke_opts)
            scope = {"runner_type": "project_type", "project_id": project.id.apply(int)}
        return gitlab.UserRunner(
            child_name("registration", name),
            description=spec.runner.description,
            tag_lists=list(spec.runner.tags),
            untagged=False,
            locked=True if spec.gitlab.runner_scope == "project" else None,  # no other project may enable it
            access_level=spec.runner.access_level,
            maximum_timeout=spec.runner.job_timeout_seconds,
            **scope,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _cache(
        self,
        name: str,
        spec: PlatformSpec,
        secrets: Mapping[str, pulumi.Input[str]],
        opts: pulumi.ResourceOptions,
    ) -> list[pulumi.Resource]:
        """The cache bucket (unless adopted) and the Secret with its Object Storage key."""
        cache = spec.runner.cache
        assert cache is not None
        created: list[pulumi.Resource] = []
        if cache.create:
            created.append(
                scw_object.Bucket(
                    child_name("cache-bucket", name),
                    name=cache.bucket,
                    region=spec.region,
                    tags={"managed-by": "pulumi", "part-of": "gpu-ci"},
                    lifecycle_rules=(
                        [
                            scw_object.BucketLifecycleRuleArgs(
                                id="expire-cache",
                                enabled=True,
                                expiration=scw_object.BucketLifecycleRuleExpirationArgs(days=cache.expire_days),
                            )
                        ]
                        if cache.expire_days
                        else None
                    ),
                    opts=pulumi.ResourceOptions(parent=self),
                )
            )
        created.append(
            k8s.core.v1.Secret(
                child_name("cache", name),
                metadata=self._metadata(CACHE_SECRET_NAME, spec),
                type="Opaque",
                string_data={
                    "accesskey": pulumi.Output.secret(secrets[CACHE_ACCESS_KEY_CONFIG]),
                    "secretkey": pulumi.Output.secret(secrets[CACHE_SECRET_KEY_CONFIG]),
                },
                opts=opts,
            )
        )
        return created

    @staticmethod
    def _metadata(secret_name: str, spec: PlatformSpec) -> k8s.meta.v1.ObjectMetaArgs:
        return k8s.meta.v1.ObjectMetaArgs(name=secret_name, namespace=spec.runner.namespace, labels=MANAGED_BY)
