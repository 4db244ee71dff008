"""RunnerFleet: one GitLab runner per GPU pool (registration and Helm release), in one isolated namespace.

Fed by the derived runners (`infra.model.Runner`), their rendered Helm values (`infra.render.runner`) and the
`platform.runner` / `platform.gitlab` sections. It creates:
- the runner namespace, with Pod Security Admission `baseline` enforced (no privileged, hostPath, hostNetwork
  or hostPID pod, whatever the manager's service account asks for) and `restricted` warned and audited;
- NetworkPolicies: deny everything by default; job pods (`gpu-ci/role: job`) reach cluster DNS and the
  internet (registry, GitLab, package indexes) but no private range, no node, no other pod and not the
  instance metadata service; managers reach DNS, GitLab and the Kubernetes API, never the metadata service;
  nothing may connect to either;
- the image-pull Secret (registry) and the cache Secret and bucket (Object Storage), shared by the runners;
- per runner: a `gitlab.UserRunner` (the runner's tags, no untagged jobs) whose `glrt-` token travels only as
  a Pulumi secret into the runner's own token Secret, and a `gitlab-runner` Helm release (pinned chart).

Names: the default pool's runner keeps the names of the single-runner layout (`runner-registration`,
`runner-token`, `runner-release`, release `gitlab-runner`), and the component keeps its type token, so an
existing stack keeps that registration, token and release; the other pools' runners are added beside it.

Safe updates: the manager Deployment uses `strategy: Recreate` with the SIGQUIT drain (see
`infra.render.runner`), so an upgrade never runs two managers over one pool. Helm does not wait for the new
manager (`skip_await`): a drain may last up to the job timeout, and `pulumi up` must neither block for hours
nor roll back a release whose old pod is still finishing jobs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_gitlab as gitlab
import pulumi_kubernetes as k8s
from pulumiverse_scaleway import object as scw_object

from infra.cloud.names import MANAGED_BY, RUNNER_TOKEN, child_name
from infra.cloud.network import apiserver_entity_policy, dns_egress, object_meta
from infra.config.gitlab import GitlabSpec
from infra.config.runner import (
    CACHE_ACCESS_KEY_CONFIG,
    CACHE_SECRET_KEY_CONFIG,
    CHART_NAME,
    RunnerSpec,
)
from infra.model.runners import CACHE_SECRET_NAME, REGISTRY_PULL_SECRET_NAME, ROLE_LABEL, Runner

HELM_TIMEOUT_SECONDS = 600
RUNNER_ID_ANNOTATION = "gpu-ci/runner-id"
"""Manager pod annotation set to the GitLab runner id: a new runner (new token) rolls the pod."""
CACHE_SECRET_ANNOTATION = "gpu-ci/cache-secret-uid"
"""Manager pod annotation set to the cache Secret's uid: a new cache key (a replaced Secret) rolls the pod."""
POD_SECURITY = {
    "pod-security.kubernetes.io/enforce": "baseline",
    "pod-security.kubernetes.io/enforce-version": "latest",
    "pod-security.kubernetes.io/warn": "restricted",
    "pod-security.kubernetes.io/audit": "restricted",
}
"""Pod Security Admission on the runner namespace: `baseline` is enforced (job pods run training images as
root, which `restricted` forbids); `restricted` is reported, so a job that could be tightened shows up."""
METADATA_RANGE = "169.254.0.0/16"
PRIVATE_RANGES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", METADATA_RANGE)
"""What job pods may not reach: RFC 1918, carrier-grade NAT (Kapsule's pod range), link-local (the instance
metadata service at 169.254.42.42)."""


@dataclass(frozen=True)
class RunnerRelease:
    """One runner of the fleet: its derived settings and its rendered Helm values (token excluded)."""

    runner: Runner
    values: Mapping[str, Any]
    """`infra.render.runner.runner_helm_values`, rendered by `build_platform`; the fleet adds only the manager
    pod's annotations that hold other resources' outputs (`RUNNER_ID_ANNOTATION`, `CACHE_SECRET_ANNOTATION`)."""
    priority_class: str | None = None
    """The PriorityClass its config gives the job pods (`Platform.job_priority_class`), if any."""


@dataclass(frozen=True)
class RunnerFleetArgs:
    """The runners, the sections they share, the cluster's provider and the secrets they need."""

    runners: Sequence[RunnerRelease]
    settings: RunnerSpec
    gitlab: GitlabSpec
    region: str
    provider: k8s.Provider
    pull_secret_required: bool
    """Whether the runners' config.toml names the image-pull Secret (a private registry)."""
    cilium: bool = True
    """The cluster's CNI is Cilium: the managers' way to the API server is a CiliumNetworkPolicy entity."""
    registry_docker_config: pulumi.Input[str] | None = None
    """`.dockerconfigjson` for pulling training images (None: public registry, no pull secret)."""
    secrets: Mapping[str, pulumi.Input[str]] | None = None
    """Stack secrets by config key; the cache keys when the spec has a cache."""
    priority_classes: Mapping[str, pulumi.Resource] = field(default_factory=dict)
    """The PriorityClasses the runners' configs may name, by name: a release waits for its own (a job pod that
    names a class the API server does not have yet is refused)."""


class RunnerFleet(pulumi.ComponentResource):
    """The runners' namespace and policies, and per GPU pool a registration and a manager release."""

    runner_ids: dict[str, pulumi.Output[str]]
    """GitLab's id of each runner, by runner name (not secret; the tokens are)."""
    namespace: pulumi.Output[str]
    """Namespace of the managers and the job pods."""
    release_statuses: dict[str, pulumi.Output[str]]
    """Helm release status by runner name (`deployed`)."""

    def __init__(self, name: str, args: RunnerFleetArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        # The token is the single-runner layout's: it is part of every child's URN, and changing it would make
        # the engine replace the default runner's registration and release (a new token, a killed drain).
        super().__init__(RUNNER_TOKEN, name, {}, opts)
        settings = args.settings
        if args.pull_secret_required != (args.registry_docker_config is not None):
            raise ValueError("the registry pull credential must be given exactly when the registry is private")
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args.provider)
        namespace = k8s.core.v1.Namespace(
            child_name("namespace", name),
            metadata=k8s.meta.v1.ObjectMetaArgs(name=settings.namespace, labels={**MANAGED_BY, **POD_SECURITY}),
            opts=k8s_opts,
        )
        in_namespace = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[namespace])
        shared: list[pulumi.Resource] = self._network_policies(name, settings.namespace, in_namespace, args.cilium)
        if args.registry_docker_config is not None:
            shared.append(
                k8s.core.v1.Secret(
                    child_name("registry-pull", name),
                    metadata=object_meta(REGISTRY_PULL_SECRET_NAME, settings.namespace),
                    type="kubernetes.io/dockerconfigjson",
                    string_data={".dockerconfigjson": pulumi.Output.secret(args.registry_docker_config)},
                    opts=in_namespace,
                )
            )
        restart_on: dict[str, pulumi.Input[str]] = {}
        if settings.cache is not None:
            cache, cache_secret = self._cache(name, args, in_namespace)
            shared += cache
            # The chart reads the cache key at start only: a new key (a replaced Secret, new uid) rolls the pod.
            restart_on[CACHE_SECRET_ANNOTATION] = cache_secret.metadata.uid

        self.runner_ids, self.release_statuses = {}, {}
        for release in args.runners:
            runner_id, status = self._runner(name, args, release, namespace, shared, restart_on=restart_on)
            self.runner_ids[release.runner.name] = runner_id
            self.release_statuses[release.runner.name] = status
        self.namespace = namespace.metadata.name
        self.register_outputs(
            {"runner_ids": self.runner_ids, "namespace": self.namespace, "release_statuses": self.release_statuses}
        )

    def _runner(
        self,
        name: str,
        args: RunnerFleetArgs,
        release: RunnerRelease,
        namespace: k8s.core.v1.Namespace,
        shared: list[pulumi.Resource],
        *,
        restart_on: Mapping[str, pulumi.Input[str]],
    ) -> tuple[pulumi.Output[str], pulumi.Output[str]]:
        """A runner's registration, its token Secret and its manager release."""
        runner, prefix = release.runner, release.runner.resource_prefix
        registration = self._registration(child_name(f"{prefix}registration", name), args, runner)
        token_secret = k8s.core.v1.Secret(
            child_name(f"{prefix}token", name),
            metadata=object_meta(runner.token_secret_name, args.settings.namespace),
            type="Opaque",
            string_data={"runner-token": _secret_token(registration), "runner-registration-token": ""},
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[namespace]),
        )
        values = dict(release.values)
        # A new registration (new token) rolls the manager pod: the chart's checksums do not see the Secret.
        values["podAnnotations"] = {
            **release.values.get("podAnnotations", {}),
            RUNNER_ID_ANNOTATION: registration.id,
            **restart_on,
        }
        priority = [args.priority_classes[release.priority_class]] if release.priority_class else []
        helm = k8s.helm.v3.Release(
            child_name(f"{prefix}release", name),
            name=runner.release_name,
            chart=CHART_NAME,
            version=args.settings.chart_version,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=args.settings.chart_repository),
            namespace=namespace.metadata.name,
            values=values,
            skip_await=True,  # (so `timeout` bounds only the API calls, not a drain)
            cleanup_on_fail=True,
            timeout=HELM_TIMEOUT_SECONDS,
            max_history=10,
            opts=pulumi.ResourceOptions(
                parent=self, provider=args.provider, depends_on=[namespace, token_secret, *shared, *priority]
            ),
        )
        return registration.id, helm.status.apply(lambda status: status.status if status else "")

    def _registration(self, resource_name: str, args: RunnerFleetArgs, runner: Runner) -> gitlab.UserRunner:
        """The runner on GitLab: its scope decides which projects' jobs it may take, its tags which jobs."""
        invoke_opts = pulumi.InvokeOutputOptions(parent=self)
        scope: dict[str, Any]
        if args.gitlab.runner_scope == "group":
            group = gitlab.get_group_output(full_path=args.gitlab.group, opts=invoke_opts)
            scope = {"runner_type": "group_type", "group_id": group.group_id}
        else:
            project = gitlab.get_project_output(path_with_namespace=args.gitlab.project, opts=invoke_opts)
            scope = {"runner_type": "project_type", "project_id": project.id.apply(int)}
        return gitlab.UserRunner(
            resource_name,
            description=runner.description,
            tag_lists=list(runner.tags),
            untagged=False,
            locked=True if args.gitlab.runner_scope == "project" else None,  # no other project may enable it
            access_level=args.settings.access_level,
            maximum_timeout=runner.job_timeout_seconds,
            **scope,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _network_policies(
        self, name: str, namespace: str, opts: pulumi.ResourceOptions, cilium: bool
    ) -> list[pulumi.Resource]:
        """Default deny, then the egress jobs and managers need (Cilium enforces NetworkPolicies on Kapsule)."""
        dns = dns_egress()

        def internet(excepted: Sequence[str]) -> k8s.networking.v1.NetworkPolicyEgressRuleArgs:
            return k8s.networking.v1.NetworkPolicyEgressRuleArgs(
                to=[
                    k8s.networking.v1.NetworkPolicyPeerArgs(
                        ip_block=k8s.networking.v1.IPBlockArgs(cidr="0.0.0.0/0", except_=list(excepted))
                    )
                ]
            )

        def policy(suffix: str, role: str | None, egress: list[Any]) -> k8s.networking.v1.NetworkPolicy:
            return k8s.networking.v1.NetworkPolicy(
                child_name(f"netpol-{suffix}", name),
                metadata=object_meta(f"gpu-ci-{suffix}", namespace),
                spec=k8s.networking.v1.NetworkPolicySpecArgs(
                    pod_selector=k8s.meta.v1.LabelSelectorArgs(match_labels={ROLE_LABEL: role} if role else None),
                    policy_types=["Ingress", "Egress"],
                    egress=egress or None,
                ),
                opts=opts,
            )

        policies: list[pulumi.Resource] = [
            policy("default-deny", None, []),
            policy("jobs-egress", "job", [dns, internet(PRIVATE_RANGES)]),
            # The manager talks to GitLab and to the Kubernetes API, which may sit on a private address.
            policy("managers-egress", "manager", [dns, internet((METADATA_RANGE,))]),
        ]
        if cilium:  # the managers reach the API server through Cilium's `kube-apiserver` entity
            policies.append(
                apiserver_entity_policy(
                    child_name("netpol-managers-apiserver", name),
                    "gpu-ci-managers-apiserver",
                    namespace,
                    {ROLE_LABEL: "manager"},
                    opts,
                )
            )
        return policies

    def _cache(
        self, name: str, args: RunnerFleetArgs, opts: pulumi.ResourceOptions
    ) -> tuple[list[pulumi.Resource], k8s.core.v1.Secret]:
        """The cache bucket (unless adopted) and the Secret with its Object Storage key; the Secret apart."""
        cache, secrets = args.settings.cache, args.secrets or {}
        assert cache is not None
        created: list[pulumi.Resource] = []
        if cache.create:
            created.append(
                scw_object.Bucket(
                    child_name("cache-bucket", name),
                    name=cache.bucket,
                    region=args.region,
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
        secret = k8s.core.v1.Secret(
            child_name("cache", name),
            metadata=object_meta(CACHE_SECRET_NAME, args.settings.namespace),
            type="Opaque",
            string_data={
                "accesskey": pulumi.Output.secret(secrets[CACHE_ACCESS_KEY_CONFIG]),
                "secretkey": pulumi.Output.secret(secrets[CACHE_SECRET_KEY_CONFIG]),
            },
            opts=opts,
        )
        return [*created, secret], secret


def _secret_token(registration: gitlab.UserRunner) -> pulumi.Output[str]:
    """The registration's `glrt-` token, kept a Pulumi secret on its way into the token Secret."""
    token: pulumi.Output[str] = pulumi.Output.secret(registration.token)
    return token
