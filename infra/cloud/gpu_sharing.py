"""GpuSharing: the device-plugin ConfigMap in the GPU operator's namespace, and the ClusterPolicy pointed at it.

Fed by `platform.pools.<name>.gpu_sharing` and `platform.gpu_operator`. The pool label that selects each
pool's key is set on the pool by KapsuleCluster (`extra_pool_labels`, from the same renderer).

The first deploy: Kapsule installs the operator (its CRD and its ClusterPolicy, by Helm) after a GPU pool is
created, while Pulumi creates the pools in parallel. A patch applied before would fail ("no matches for kind"
once the provider's few retries, about 30 s, are spent), and one applied when the CRD exists but the
ClusterPolicy does not would create a ClusterPolicy of its own (server-side apply creates what it finds
missing), which the CRD's required fields refuse. So the patch waits for a Job in the runner namespace, after
the GPU pools, that polls the API for the ClusterPolicy by name (`gpu_operator.wait_minutes`, then it fails
and so does `up`, naming the Job); the engine awaits the Job's completion. On later `up`s the Job is done and
nothing runs. Its service account may only `get` that one ClusterPolicy.

Safe updates: the ConfigMap keeps one name, and the ClusterPolicy patch only names it, so a sharing
change rewrites the ConfigMap's data and nothing else. The operator does not watch that data: GPU nodes
already up keep their config until they scale down, and nodes that start later read the new one. Renaming
the ConfigMap instead would change the device-plugin, GFD and MPS-daemon DaemonSets' pod templates and
restart them on every GPU node, jobs or not. (docs/routing-and-sharing.md, "How a sharing change takes effect".)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from infra.cloud.names import GPU_SHARING_TOKEN, MANAGED_BY, child_name
from infra.cloud.network import RESTRICTED, apiserver_egress_policy, dns_egress_policy, object_meta
from infra.config.gpu_operator import GpuOperatorSpec
from infra.config.pools import POOL_NAME_LABEL
from infra.model.runners import ROLE_LABEL

PATCH_FIELD_MANAGER = "gpu-ci"
"""Server-side-apply field manager of the ClusterPolicy patch (stable, so `--show-managed-fields` names us)."""
CLUSTER_POLICY_API = ("nvidia.com/v1", "ClusterPolicy")
WAIT_NAME = "gpu-ci-operator-wait"
"""The Job that waits for the operator's ClusterPolicy, its service account, ClusterRole and binding."""
WAIT_LABEL = {ROLE_LABEL: "operator-wait"}
WAIT_MARGIN_MINUTES = 5
"""The engine awaits the Job this much longer than the Job's own deadline: the Job's failure is the message."""
_WAIT = (
    'echo "waiting for ClusterPolicy $POLICY (Kapsule installs the GPU operator after the first GPU pool)"; '
    'until curl --fail --silent --show-error --output /dev/null --cacert "$SA/ca.crt" '
    '-H "Authorization: Bearer $(cat "$SA/token")" '
    '"https://kubernetes.default.svc/apis/nvidia.com/v1/clusterpolicies/$POLICY"; do sleep 10; done; '
    'echo "ClusterPolicy $POLICY is there"'
)
"""The Job's one command: GET the ClusterPolicy until it answers 200 (404 until the CRD and the object exist)."""


@dataclass(frozen=True)
class GpuSharingArgs:
    """The operator's settings and the rendered configs; the Kubernetes provider comes through `opts.providers`."""

    operator: GpuOperatorSpec
    configs: Mapping[str, str]
    """The ConfigMap's data: one device-plugin config per key (`infra.render.device_plugin`)."""
    cluster_policy_patch: Mapping[str, Any]
    """The ClusterPolicy fields gpu-ci owns (`spec.devicePlugin.config`)."""
    pool_keys: Mapping[str, str]
    """Per GPU pool, its key in the ConfigMap."""
    wait_namespace: pulumi.Input[str] = ""
    """Namespace of the Job that waits for the ClusterPolicy (the runners'; its output orders the Job after it)."""
    wait_node_pool: str = ""
    """The always-on pool the Job runs on."""
    gpu_pools: Sequence[pulumi.Resource] = field(default_factory=tuple)
    """The GPU pools: Kapsule installs the operator once one exists, so the wait starts after them."""
    cilium: bool = True
    """The cluster's CNI is Cilium: the Job reaches the API server through its `kube-apiserver` entity."""


class GpuSharing(pulumi.ComponentResource):
    """One ConfigMap of device-plugin configs (a key per GPU pool) and the ClusterPolicy patch that mounts it."""

    config_map: pulumi.Output[str]
    """`<namespace>/<name>` of the ConfigMap, once created."""
    pool_keys: dict[str, str]
    """Per GPU pool, its key in the ConfigMap (the value of its nodes' `nvidia.com/device-plugin.config`)."""
    cluster_policy_patch: k8s.apiextensions.CustomResourcePatch | None
    """The patch of the operator's ClusterPolicy (None with `gpu_operator.patch_cluster_policy: false`)."""
    operator_wait: k8s.batch.v1.Job | None
    """The Job the patch waits for: done once the operator's ClusterPolicy exists (None without a patch)."""

    def __init__(self, name: str, args: GpuSharingArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(GPU_SHARING_TOKEN, name, {}, opts)
        operator = args.operator
        config_map = k8s.core.v1.ConfigMap(
            child_name("config", name),
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=operator.config_map, namespace=operator.namespace, labels=dict(MANAGED_BY)
            ),
            data=dict(args.configs),
            # Its name is fixed, so a data change (a replacement for pulumi-kubernetes) must delete first.
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
        )
        self.cluster_policy_patch, self.operator_wait = None, None
        if operator.patch_cluster_policy:
            self.operator_wait = self._operator_wait(name, args)
            api_version, kind = CLUSTER_POLICY_API
            self.cluster_policy_patch = k8s.apiextensions.CustomResourcePatch(
                child_name("cluster-policy", name),
                api_version=api_version,
                kind=kind,
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=operator.cluster_policy,
                    annotations={
                        # The operator's Helm release may own devicePlugin.config: gpu-ci takes these two fields.
                        "pulumi.com/patchForce": "true",
                        "pulumi.com/patchFieldManager": PATCH_FIELD_MANAGER,
                    },
                ),
                spec=args.cluster_policy_patch["spec"],
                # The ConfigMap's name is passed as plain text, not as its output: replacing the ConfigMap
                # must not make the engine replace (drop and re-apply) this patch.
                opts=pulumi.ResourceOptions(parent=self, depends_on=[config_map, self.operator_wait]),
            )
        self.config_map = pulumi.Output.concat(config_map.metadata.namespace, "/", config_map.metadata.name)
        self.pool_keys = dict(args.pool_keys)
        self.register_outputs({"config_map": self.config_map, "pool_keys": self.pool_keys})

    def _operator_wait(self, name: str, args: GpuSharingArgs) -> k8s.batch.v1.Job:
        """The Job that completes once the operator's ClusterPolicy exists, after the GPU pools, with a service
        account that may read that one object and the egress (DNS, the API server) it needs."""
        operator, namespace = args.operator, args.wait_namespace
        opts = pulumi.ResourceOptions(parent=self)
        account = k8s.core.v1.ServiceAccount(
            child_name("operator-wait", name), metadata=object_meta(WAIT_NAME, namespace), opts=opts
        )
        role = k8s.rbac.v1.ClusterRole(
            child_name("operator-wait-role", name),
            metadata=k8s.meta.v1.ObjectMetaArgs(name=WAIT_NAME, labels=dict(MANAGED_BY)),
            rules=[
                k8s.rbac.v1.PolicyRuleArgs(
                    api_groups=["nvidia.com"],
                    resources=["clusterpolicies"],
                    resource_names=[operator.cluster_policy],
                    verbs=["get"],
                )
            ],
            opts=opts,
        )
        binding = k8s.rbac.v1.ClusterRoleBinding(
            child_name("operator-wait-binding", name),
            metadata=k8s.meta.v1.ObjectMetaArgs(name=WAIT_NAME, labels=dict(MANAGED_BY)),
            role_ref=k8s.rbac.v1.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=WAIT_NAME),
            subjects=[k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=WAIT_NAME, namespace=namespace)],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[role]),
        )
        egress = [
            dns_egress_policy(child_name("operator-wait-dns", name), f"{WAIT_NAME}-dns", namespace, WAIT_LABEL, opts),
            apiserver_egress_policy(
                child_name("operator-wait-apiserver", name),
                f"{WAIT_NAME}-apiserver",
                namespace,
                WAIT_LABEL,
                opts,
                cilium=args.cilium,
            ),
        ]
        env = {"SA": "/var/run/secrets/kubernetes.io/serviceaccount", "POLICY": operator.cluster_policy}
        return k8s.batch.v1.Job(
            child_name("operator-wait-job", name),
            metadata=object_meta(WAIT_NAME, namespace),
            spec=k8s.batch.v1.JobSpecArgs(
                backoff_limit=0,
                active_deadline_seconds=60 * operator.wait_minutes,
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels={**MANAGED_BY, **WAIT_LABEL}),
                    spec=k8s.core.v1.PodSpecArgs(
                        service_account_name=WAIT_NAME,
                        automount_service_account_token=True,
                        restart_policy="Never",
                        node_selector={POOL_NAME_LABEL: args.wait_node_pool},
                        containers=[
                            k8s.core.v1.ContainerArgs(
                                name="wait",
                                image=operator.wait_image,
                                command=["/bin/sh", "-c", _WAIT],
                                env=[k8s.core.v1.EnvVarArgs(name=k, value=v) for k, v in env.items()],
                                resources=k8s.core.v1.ResourceRequirementsArgs(
                                    requests={"cpu": "10m", "memory": "16Mi"}, limits={"memory": "32Mi"}
                                ),
                                security_context=RESTRICTED,
                            )
                        ],
                    ),
                ),
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[*args.gpu_pools, account, binding, *egress],
                # The engine waits for the Job to complete; the Job's deadline, a little earlier, says why it failed.
                custom_timeouts=pulumi.CustomTimeouts(create=f"{operator.wait_minutes + WAIT_MARGIN_MINUTES}m"),
                delete_before_replace=True,  # its name is fixed, and a Job's spec cannot change in place
            ),
        )
