"""WarmCapacity: placeholder pods that keep GPU nodes up in the pools' warm windows, and the CronJobs that scale
them (the cluster-autoscaler's overprovisioning pattern).

Fed by the derived warm pools (`infra.model.warm`) and `platform.warm_capacity`. It creates:
- a namespace of its own: Pod Security `restricted` enforced, a default-deny NetworkPolicy, and egress to DNS
  and the Kubernetes API for the scalers only;
- two PriorityClasses: the placeholders' (at or above the autoscaler's expendable cutoff, so a Pending
  placeholder scales a pool up and a running one keeps its node; `preemptionPolicy: Never`) and the jobs'
  (above it: the runners of warm pools give it to their job pods, which then preempt a placeholder), each
  named with its value (`gpu-ci-job-1000`: `infra.model.warm.priority_class_name`);
- per warm pool a Deployment of `pause` pods on the pool's nodes (its selector and the GPU toleration), one
  per node (anti-affinity), each asking one `nvidia.com/gpu` replica: the autoscaler scales a GPU pool for a
  pod that asks for a GPU, and sees the node as used;
- a ServiceAccount that may only read and patch the `scale` of those Deployments, and per scale time of the
  week a CronJob (`timeZone`: the workload's) that patches it.

Safe updates: each Deployment is created at the size of the window open at that moment (0 outside one: a window
already open would otherwise warm nothing until its next scale-up) and Pulumi ignores `spec.replicas`
afterwards, so an `up` never fights the CronJobs (nor kills a warm node in a window); placeholders never evict
a job. Pulumi does not wait for the placeholders to run (`pulumi.com/skipAwait`): a Pending one is warm capacity
asking the autoscaler for a node, which takes a boot (longer than the provider's 10 min wait, on a cold pool),
or waiting for a job to end. A new pod template replaces them one at a time and never beside the old ones
(`maxSurge: 0`): on a pool full of jobs an extra placeholder could not run, and would only ask for a node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from infra.cloud.names import MANAGED_BY, WARM_TOKEN, child_name
from infra.cloud.network import (
    GPU_SECURITY_CONTEXT,
    RESTRICTED,
    apiserver_egress_policy,
    dns_egress_policy,
    object_meta,
)
from infra.config.pools import GPU_TAINT_EFFECT, GPU_TAINT_KEY, GPU_TAINT_VALUE
from infra.config.warm import WarmCapacitySpec
from infra.model.warm import JOB_CLASS, PLACEHOLDER_CLASS, Scale, WarmPool, priority_class_name, replicas_at

PLACEHOLDER_LABEL = "gpu-ci/placeholder"
"""Label of a pool's placeholder pods (its value: the pool), which their anti-affinity selects."""
SCALER_LABEL = {"gpu-ci/role": "warm-scaler"}
SCALER_ACCOUNT = "warm-scaler"
POD_SECURITY = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
}
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
SKIP_AWAIT = {"pulumi.com/skipAwait": "true"}
"""Pulumi's Kubernetes provider creates or updates the object without waiting for it to be ready."""
_SCALE = (
    'curl --fail --silent --show-error --cacert "$SA/ca.crt" -H "Authorization: Bearer $(cat "$SA/token")" '
    '-H "Content-Type: application/merge-patch+json" -X PATCH -d "{\\"spec\\":{\\"replicas\\":$REPLICAS}}" '
    '"https://kubernetes.default.svc/apis/apps/v1/namespaces/$NAMESPACE/deployments/$DEPLOYMENT/scale"'
)
"""The scaler's one command: patch the Deployment's scale subresource with its service account's token."""


@dataclass(frozen=True)
class WarmCapacityArgs:
    """The warm pools and `platform.warm_capacity`; the Kubernetes provider comes through `opts.providers`."""

    pools: Sequence[WarmPool]
    settings: WarmCapacitySpec
    cilium: bool = True
    """The cluster's CNI is Cilium: the scalers' way to the API server is a CiliumNetworkPolicy entity."""
    opened_at: int | None = None
    """The minute of the week (in the workload's time zone) this `up` runs at: each Deployment is created at the
    size of the span open then (`infra.model.warm.replicas_at`); None: at 0."""


class WarmCapacity(pulumi.ComponentResource):
    """Placeholder Deployments per warm pool, the CronJobs that scale them, and what they need."""

    deployments: dict[str, pulumi.Output[str]]
    """`<namespace>/<name>` of each pool's placeholder Deployment, by pool."""
    schedules: dict[str, list[str]]
    """Each pool's CronJob schedules (`<cron> -> <replicas>`, in the workload's time zone)."""
    priority_classes: dict[str, k8s.scheduling.v1.PriorityClass]
    """The placeholders' and the jobs' PriorityClasses, by their names."""

    def __init__(self, name: str, args: WarmCapacityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(WARM_TOKEN, name, {}, opts)
        settings = args.settings
        namespace = settings.namespace
        child = pulumi.ResourceOptions(parent=self)
        space = k8s.core.v1.Namespace(
            child_name("namespace", name),
            metadata=k8s.meta.v1.ObjectMetaArgs(name=namespace, labels={**MANAGED_BY, **POD_SECURITY}),
            opts=child,
        )
        inside = pulumi.ResourceOptions(parent=self, depends_on=[space])
        self.priority_classes = {}
        for base, value, description, preemption in (
            (PLACEHOLDER_CLASS, settings.placeholder_priority, "gpu-ci placeholders: keep warm GPU nodes", "Never"),
            (JOB_CLASS, settings.job_priority, "gpu-ci CI jobs of warm pools: preempt a placeholder", None),
        ):
            # Named with its value: a new value is a new class, created before the old one goes.
            self.priority_classes[priority_class_name(base, value)] = k8s.scheduling.v1.PriorityClass(
                child_name(base, name),
                metadata=k8s.meta.v1.ObjectMetaArgs(name=priority_class_name(base, value), labels=dict(MANAGED_BY)),
                value=value,
                global_default=False,
                preemption_policy=preemption,
                description=description,
                opts=child,
            )
        self._network_policies(name, namespace, inside, args.cilium)
        account = k8s.core.v1.ServiceAccount(
            child_name("scaler", name),
            metadata=object_meta(SCALER_ACCOUNT, namespace),
            automount_service_account_token=False,
            opts=inside,
        )
        role = k8s.rbac.v1.Role(
            child_name("scaler-role", name),
            metadata=object_meta(SCALER_ACCOUNT, namespace),
            rules=[
                k8s.rbac.v1.PolicyRuleArgs(
                    api_groups=["apps"],
                    resources=["deployments/scale"],
                    resource_names=[pool.deployment for pool in args.pools],
                    verbs=["get", "patch"],
                )
            ],
            opts=inside,
        )
        k8s.rbac.v1.RoleBinding(
            child_name("scaler-binding", name),
            metadata=object_meta(SCALER_ACCOUNT, namespace),
            role_ref=k8s.rbac.v1.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="Role", name=SCALER_ACCOUNT),
            subjects=[k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=SCALER_ACCOUNT, namespace=namespace)],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[role, account]),
        )
        self.deployments, self.schedules = {}, {}
        for pool in args.pools:
            replicas = 0 if args.opened_at is None else replicas_at(pool, args.opened_at)
            deployment = self._placeholders(name, pool, settings, space, replicas)
            self.deployments[pool.pool] = pulumi.Output.concat(
                deployment.metadata.namespace, "/", deployment.metadata.name
            )
            self.schedules[pool.pool] = [f"{scale.schedule} -> {scale.replicas}" for scale in pool.scales]
            for index, scale in enumerate(pool.scales):
                self._scaler(child_name(f"cron-{pool.pool}-{index}", name), pool, scale, settings, inside)
        self.register_outputs({"deployments": self.deployments, "schedules": self.schedules})

    def _placeholders(
        self, name: str, pool: WarmPool, settings: WarmCapacitySpec, space: k8s.core.v1.Namespace, replicas: int
    ) -> k8s.apps.v1.Deployment:
        labels = {PLACEHOLDER_LABEL: pool.pool}
        gpu = {"nvidia.com/gpu": "1"}
        return k8s.apps.v1.Deployment(
            child_name(f"placeholders-{pool.pool}", name),
            metadata=object_meta(pool.deployment, settings.namespace, annotations=dict(SKIP_AWAIT)),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=replicas,
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=labels),
                strategy=k8s.apps.v1.DeploymentStrategyArgs(
                    type="RollingUpdate",
                    rolling_update=k8s.apps.v1.RollingUpdateDeploymentArgs(max_surge=0, max_unavailable=1),
                ),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(
                        labels={**MANAGED_BY, **labels},
                        # Kept off scale-down while it runs: a window's node stays until the window ends.
                        annotations={SAFE_TO_EVICT: "false"},
                    ),
                    spec=k8s.core.v1.PodSpecArgs(
                        priority_class_name=priority_class_name(PLACEHOLDER_CLASS, settings.placeholder_priority),
                        node_selector=dict(pool.node_selector),
                        tolerations=[
                            k8s.core.v1.TolerationArgs(
                                key=GPU_TAINT_KEY, operator="Equal", value=GPU_TAINT_VALUE, effect=GPU_TAINT_EFFECT
                            )
                        ],
                        affinity=k8s.core.v1.AffinityArgs(
                            pod_anti_affinity=k8s.core.v1.PodAntiAffinityArgs(
                                required_during_scheduling_ignored_during_execution=[
                                    k8s.core.v1.PodAffinityTermArgs(
                                        label_selector=k8s.meta.v1.LabelSelectorArgs(match_labels=labels),
                                        topology_key="kubernetes.io/hostname",
                                    )
                                ]
                            )
                        ),
                        automount_service_account_token=False,
                        termination_grace_period_seconds=0,
                        containers=[
                            k8s.core.v1.ContainerArgs(
                                name="pause",
                                image=settings.pause_image,
                                resources=k8s.core.v1.ResourceRequirementsArgs(
                                    requests={"cpu": "10m", "memory": "16Mi", **gpu}, limits={"memory": "16Mi", **gpu}
                                ),
                                security_context=GPU_SECURITY_CONTEXT,  # it gets a GPU: a writable root
                            )
                        ],
                    ),
                ),
            ),
            # The CronJobs own the replica count: an `up` must not scale the placeholders back to 0.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[space], ignore_changes=["spec.replicas"]),
        )

    def _scaler(
        self, resource_name: str, pool: WarmPool, scale: Scale, settings: WarmCapacitySpec, opts: pulumi.ResourceOptions
    ) -> None:
        env = {
            "SA": "/var/run/secrets/kubernetes.io/serviceaccount",
            "NAMESPACE": settings.namespace,
            "DEPLOYMENT": pool.deployment,
            "REPLICAS": str(scale.replicas),
        }
        k8s.batch.v1.CronJob(
            resource_name,
            metadata=object_meta(scale.name, settings.namespace),
            spec=k8s.batch.v1.CronJobSpecArgs(
                schedule=scale.schedule,
                time_zone=pool.time_zone,
                concurrency_policy="Replace",
                starting_deadline_seconds=600,
                successful_jobs_history_limit=1,
                failed_jobs_history_limit=3,
                job_template=k8s.batch.v1.JobTemplateSpecArgs(
                    spec=k8s.batch.v1.JobSpecArgs(
                        backoff_limit=3,
                        active_deadline_seconds=300,
                        template=k8s.core.v1.PodTemplateSpecArgs(
                            metadata=k8s.meta.v1.ObjectMetaArgs(labels={**MANAGED_BY, **SCALER_LABEL}),
                            spec=k8s.core.v1.PodSpecArgs(
                                service_account_name=SCALER_ACCOUNT,
                                automount_service_account_token=True,
                                restart_policy="OnFailure",
                                containers=[
                                    k8s.core.v1.ContainerArgs(
                                        name="scale",
                                        image=settings.scaler_image,
                                        command=["/bin/sh", "-c", _SCALE],
                                        env=[k8s.core.v1.EnvVarArgs(name=k, value=v) for k, v in env.items()],
                                        resources=k8s.core.v1.ResourceRequirementsArgs(
                                            requests={"cpu": "10m", "memory": "16Mi"}, limits={"memory": "32Mi"}
                                        ),
                                        security_context=RESTRICTED,
                                    )
                                ],
                            ),
                        ),
                    )
                ),
            ),
            opts=opts,
        )

    def _network_policies(self, name: str, namespace: str, opts: pulumi.ResourceOptions, cilium: bool) -> None:
        """Deny everything; the scalers may reach DNS and the Kubernetes API (a Cilium entity on Kapsule)."""
        k8s.networking.v1.NetworkPolicy(
            child_name("netpol-default-deny", name),
            metadata=object_meta("gpu-ci-default-deny", namespace),
            spec=k8s.networking.v1.NetworkPolicySpecArgs(
                pod_selector=k8s.meta.v1.LabelSelectorArgs(), policy_types=["Ingress", "Egress"]
            ),
            opts=opts,
        )
        dns_egress_policy(child_name("netpol-scalers-dns", name), "gpu-ci-scalers-dns", namespace, SCALER_LABEL, opts)
        apiserver_egress_policy(
            child_name("netpol-scalers-apiserver", name),
            "gpu-ci-scalers-apiserver",
            namespace,
            SCALER_LABEL,
            opts,
            cilium=cilium,
        )
