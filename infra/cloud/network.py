"""Kubernetes objects the runner namespace and the warm-capacity namespace both make: object metadata, the
egress rule to the cluster's DNS, the Cilium policy that lets selected pods reach the API server, and the
security context of gpu-ci's own small pods (the warm placeholders and scalers, the operator wait)."""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
import pulumi_kubernetes as k8s

from infra.cloud.names import MANAGED_BY

KUBE_DNS = {"namespace": "kube-system", "k8s-app": "kube-dns"}


def restricted(*, read_only_root: bool = True) -> k8s.core.v1.SecurityContextArgs:
    """What Pod Security `restricted` asks of every container (65534: nobody; pause and curl need nothing more),
    with a read-only root file system unless the container gets a GPU (`GPU_SECURITY_CONTEXT`)."""
    return k8s.core.v1.SecurityContextArgs(
        allow_privilege_escalation=False,
        capabilities=k8s.core.v1.CapabilitiesArgs(drop=["ALL"]),
        read_only_root_filesystem=read_only_root,
        run_as_non_root=True,
        run_as_user=65534,
        seccomp_profile=k8s.core.v1.SeccompProfileArgs(type="RuntimeDefault"),
    )


RESTRICTED = restricted()
GPU_SECURITY_CONTEXT = restricted(read_only_root=False)
"""A container that asks for a GPU keeps a writable root: nvidia-container-toolkit 1.20.0's CDI hook
(`update-application-profile`) writes into it and fails the container's creation on a read-only one
(NVIDIA/nvidia-container-toolkit#2026, kserve#5711; fixed by #2028 after 1.20.0, and the toolkit version Kapsule
runs is not known). Pod Security `restricted` does not ask for a read-only root."""


def object_meta(
    object_name: str, namespace: pulumi.Input[str], annotations: dict[str, str] | None = None
) -> k8s.meta.v1.ObjectMetaArgs:
    """An object of gpu-ci's in `namespace`, labelled as managed by Pulumi."""
    return k8s.meta.v1.ObjectMetaArgs(
        name=object_name, namespace=namespace, labels=dict(MANAGED_BY), annotations=annotations
    )


def dns_egress() -> k8s.networking.v1.NetworkPolicyEgressRuleArgs:
    """Egress to kube-dns on port 53 (UDP and TCP), and nowhere else."""
    return k8s.networking.v1.NetworkPolicyEgressRuleArgs(
        to=[
            k8s.networking.v1.NetworkPolicyPeerArgs(
                namespace_selector=k8s.meta.v1.LabelSelectorArgs(
                    match_labels={"kubernetes.io/metadata.name": KUBE_DNS["namespace"]}
                ),
                pod_selector=k8s.meta.v1.LabelSelectorArgs(match_labels={"k8s-app": KUBE_DNS["k8s-app"]}),
            )
        ],
        ports=[k8s.networking.v1.NetworkPolicyPortArgs(protocol=protocol, port=53) for protocol in ("UDP", "TCP")],
    )


def apiserver_entity_policy(
    resource_name: str,
    object_name: str,
    namespace: pulumi.Input[str],
    selector: Mapping[str, str],
    opts: pulumi.ResourceOptions,
) -> k8s.apiextensions.CustomResource:
    """A CiliumNetworkPolicy that lets the pods of `selector` reach the API server. Cilium gives the API server
    its own identity, which an ipBlock may not match (cilium#33525): the `kube-apiserver` entity does."""
    return k8s.apiextensions.CustomResource(
        resource_name,
        api_version="cilium.io/v2",
        kind="CiliumNetworkPolicy",
        metadata=object_meta(object_name, namespace),
        spec={"endpointSelector": {"matchLabels": dict(selector)}, "egress": [{"toEntities": ["kube-apiserver"]}]},
        opts=opts,
    )


def dns_egress_policy(
    resource_name: str,
    object_name: str,
    namespace: pulumi.Input[str],
    selector: Mapping[str, str],
    opts: pulumi.ResourceOptions,
) -> k8s.networking.v1.NetworkPolicy:
    """A NetworkPolicy letting the pods of `selector` reach the cluster's DNS (beside a default deny)."""
    return k8s.networking.v1.NetworkPolicy(
        resource_name,
        metadata=object_meta(object_name, namespace),
        spec=k8s.networking.v1.NetworkPolicySpecArgs(
            pod_selector=k8s.meta.v1.LabelSelectorArgs(match_labels=dict(selector)),
            policy_types=["Egress"],
            egress=[dns_egress()],
        ),
        opts=opts,
    )


def apiserver_egress_policy(
    resource_name: str,
    object_name: str,
    namespace: pulumi.Input[str],
    selector: Mapping[str, str],
    opts: pulumi.ResourceOptions,
    *,
    cilium: bool,
) -> pulumi.CustomResource:
    """The way to the API server for the pods of `selector`: Cilium's `kube-apiserver` entity, or without
    Cilium any HTTPS address (a NetworkPolicy cannot name the API server)."""
    if cilium:
        return apiserver_entity_policy(resource_name, object_name, namespace, selector, opts)
    return k8s.networking.v1.NetworkPolicy(
        resource_name,
        metadata=object_meta(object_name, namespace),
        spec=k8s.networking.v1.NetworkPolicySpecArgs(
            pod_selector=k8s.meta.v1.LabelSelectorArgs(match_labels=dict(selector)),
            policy_types=["Egress"],
            egress=[
                k8s.networking.v1.NetworkPolicyEgressRuleArgs(
                    ports=[k8s.networking.v1.NetworkPolicyPortArgs(protocol="TCP", port=443)]
                )
            ],
        ),
        opts=opts,
    )
