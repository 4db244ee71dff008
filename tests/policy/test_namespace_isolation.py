"""Namespaces: Pod Security and default-deny (policy/policies/namespace_isolation.py), each rule called directly."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi_policy import PolicyResource, StackValidationArgs
from support.policy import RELEASE, recorder, resource_args, runner_release, stack_resource, violations

from policy.policies import namespace_isolation as pol
from policy.policies.inputs import show

K8S_NAMESPACE = "kubernetes:core/v1:Namespace"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"


@pytest.mark.parametrize(
    ("level", "ok"), [("baseline", True), ("restricted", True), ("privileged", False), (None, False)]
)
def test_namespaces_enforce_baseline_pod_security(level: str | None, ok: bool) -> None:
    labels = {"app.kubernetes.io/part-of": "gpu-ci", **({pol.POD_SECURITY_ENFORCE_LABEL: level} if level else {})}
    props = {"metadata": {"name": "gitlab-runner", "labels": labels}}
    args = resource_args(K8S_NAMESPACE, props)
    found = violations(pol.namespace_pod_security, args)
    assert found == (
        []
        if ok
        else [
            f"namespace 'gitlab-runner': label pod-security.kubernetes.io/enforce={show(level)}: set it to "
            "'baseline' or 'restricted' so the API server refuses privileged job pods"
        ]
    )
    exempt = resource_args(K8S_NAMESPACE, props, config={"exempt_namespaces": ["gitlab-runner"]})
    assert violations(pol.namespace_pod_security, exempt) == []


DENY_ALL = {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}


def _namespace_stack(spec: dict[str, Any] | None, namespace: str = "gitlab-runner") -> list[PolicyResource]:
    resources = [stack_resource(K8S_NAMESPACE, "runner-namespace", {"metadata": {"name": "gitlab-runner"}})]
    if spec is not None:
        props = {"metadata": {"name": "default-deny", "namespace": namespace}, "spec": spec}
        resources.append(stack_resource(NETWORK_POLICY, "deny", props))
    return resources


def test_a_default_deny_network_policy_in_the_runner_namespace_passes() -> None:
    assert violations(pol.runner_namespace_default_deny, StackValidationArgs(_namespace_stack(DENY_ALL))) == []
    selector = {**DENY_ALL, "podSelector": {"matchLabels": {}}}
    assert violations(pol.runner_namespace_default_deny, StackValidationArgs(_namespace_stack(selector))) == []


@pytest.mark.parametrize(
    ("spec", "namespace"),
    [
        (None, "gitlab-runner"),
        (DENY_ALL, "other"),
        ({**DENY_ALL, "policyTypes": ["Ingress"]}, "gitlab-runner"),
        ({**DENY_ALL, "egress": [{}]}, "gitlab-runner"),  # allow-all egress
        ({**DENY_ALL, "podSelector": {"matchLabels": {"job": "x"}}}, "gitlab-runner"),
    ],
    ids=["none", "elsewhere", "ingress-only", "allows-egress", "some-pods"],
)
def test_a_runner_namespace_without_default_deny_fails_on_the_namespace(
    spec: dict[str, Any] | None, namespace: str
) -> None:
    resources = _namespace_stack(spec, namespace)
    reported: list[tuple[str, str | None]] = []
    pol.runner_namespace_default_deny(StackValidationArgs(resources), recorder(reported))
    assert reported == [
        (
            "namespace 'gitlab-runner': no default-deny NetworkPolicy (empty podSelector, policyTypes [Ingress, "
            "Egress], no rule): job pods could reach the whole cluster and the internet",
            f"urn:pulumi:dev::gpu-ci::{K8S_NAMESPACE}::runner-namespace",
        )
    ]


def test_a_runner_release_namespace_the_stack_does_not_create_is_checked_too() -> None:
    release = stack_resource(RELEASE, "runner-release", {**runner_release(), "namespace": "ci-jobs"})
    (found,) = violations(pol.runner_namespace_default_deny, StackValidationArgs([release]))
    assert found.startswith("namespace 'ci-jobs': no default-deny NetworkPolicy")
