"""Kubernetes namespaces: each the stack creates enforces the Pod Security Standard `baseline` or
`restricted`, and each (with each runner release's) has a default-deny NetworkPolicy (a stack rule)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs, StackValidationArgs

from .inputs import as_list, config_value, known, show
from .runner_release import HELM_RELEASE_TYPE, is_runner_chart

NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"
NETWORK_POLICY_TYPE = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
POD_SECURITY_ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
POD_SECURITY_LEVELS = frozenset({"baseline", "restricted"})


def namespace_pod_security(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Every namespace the stack creates enforces the Pod Security Standard `baseline` or `restricted`.

    Why: the admission controller then refuses privileged pods, host namespaces and hostPath mounts in
    it, whatever a runner config or a pod_spec patch asks for: a second wall behind the runner's own.
    """
    if args.resource_type != NAMESPACE_TYPE:
        return
    name = known(args.props, "metadata", "name") or args.name
    if name in as_list(config_value(args, "exempt_namespaces", [])):
        return
    level = known(args.props, "metadata", "labels", POD_SECURITY_ENFORCE_LABEL)
    if level not in POD_SECURITY_LEVELS:
        report_violation(
            f"namespace '{name}': label {POD_SECURITY_ENFORCE_LABEL}={show(level)}: set it to 'baseline' or "
            "'restricted' so the API server refuses privileged job pods",
            None,
        )


# ---------------------------------------------------------------------------------------------------------
# Stack: a default-deny NetworkPolicy in every namespace


def _default_deny(props: Mapping[str, Any]) -> bool:
    """A NetworkPolicy that selects every pod of its namespace and allows nothing, in and out."""
    selector = known(props, "spec", "podSelector")
    every_pod = not selector or not any(as_list(known(selector, k)) or known(selector, k) for k in selector)
    types = {str(t) for t in as_list(known(props, "spec", "policyTypes"))}
    rules = as_list(known(props, "spec", "ingress")) + as_list(known(props, "spec", "egress"))
    return every_pod and {"Ingress", "Egress"} <= types and not rules


def runner_namespace_default_deny(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Each namespace the stack creates, and each runner release's namespace, has a default-deny
    NetworkPolicy (empty podSelector, policyTypes Ingress and Egress, no rule); other policies then
    allow what the runner needs.

    Why: without it a job pod reaches every pod and service of the cluster (the GPU operator's, the
    kubelet's metrics, other runners' jobs) and anything on the internet; one compromised job then
    scans and attacks from inside the private network.
    """
    exempt = set(map(str, as_list(config_value(args, "exempt_namespaces", []))))
    wanted: dict[str, str | None] = {}
    for resource in args.resources:
        if resource.resource_type == NAMESPACE_TYPE:
            name = known(resource.props, "metadata", "name")
            if isinstance(name, str):
                wanted[name] = resource.urn
        elif resource.resource_type == HELM_RELEASE_TYPE:
            namespace = known(resource.props, "namespace")
            if is_runner_chart(known(resource.props, "chart")) and isinstance(namespace, str) and namespace:
                wanted.setdefault(namespace, resource.urn)
    denied = {
        known(r.props, "metadata", "namespace")
        for r in args.resources
        if r.resource_type == NETWORK_POLICY_TYPE and _default_deny(r.props)
    }
    for namespace, urn in sorted(wanted.items()):
        if namespace not in denied and namespace not in exempt:
            report_violation(
                f"namespace '{namespace}': no default-deny NetworkPolicy (empty podSelector, policyTypes "
                "[Ingress, Egress], no rule): job pods could reach the whole cluster and the internet",
                urn,
            )
