"""The runner's Helm release and RBAC (policy/policies/runner_release.py): each rule called directly."""

from __future__ import annotations

from support.policy import RELEASE, resource_args, runner_release, violations

from policy.policies import runner_release as pol

# ---------------------------------------------------------------------------------------------------------
# The runner's release


def test_runner_rbac_in_its_namespace_passes_and_cluster_wide_fails() -> None:
    namespaced = resource_args(RELEASE, runner_release(rbac={"create": True, "clusterWideAccess": False}))
    assert violations(pol.runner_rbac_namespaced, namespaced) == []
    wide = resource_args(RELEASE, runner_release(rbac={"create": True, "clusterWideAccess": True}))
    assert violations(pol.runner_rbac_namespaced, wide) == [
        "Helm release 'gitlab-runner' (gitlab-runner): values.rbac.clusterWideAccess=True: the runner's Role must "
        "be limited to its namespace (a ClusterRole lets it create pods and read secrets anywhere)"
    ]


def test_an_atomic_release_with_a_timeout_passes_and_others_fail() -> None:
    assert violations(pol.helm_release_atomic, resource_args(RELEASE, runner_release())) == []
    props = {"name": "ingress", "chart": "ingress-nginx", "timeout": 0}
    assert violations(pol.helm_release_atomic, resource_args(RELEASE, props)) == [
        "Helm release 'ingress' (chart 'ingress-nginx'): atomic=unset: set atomic: true so a failed upgrade rolls back "
        "(a runner release may instead skip the await with strategy Recreate)",
        "Helm release 'ingress' (chart 'ingress-nginx'): timeout=0: set a timeout (seconds) after which the "
        "release rolls back",
    ]


def test_a_runner_release_may_drain_instead_of_being_atomic() -> None:
    """skipAwait + Recreate: the old manager finishes its jobs before the new one starts; Helm must not wait."""
    draining = {**runner_release(strategy={"type": "Recreate"}), "skipAwait": True}
    del draining["atomic"]
    assert violations(pol.helm_release_atomic, resource_args(RELEASE, draining)) == []
    rolling = {**draining, "values": {**draining["values"], "strategy": {"type": "RollingUpdate"}}}
    not_runner = {**draining, "chart": "ingress-nginx"}
    for props in (rolling, not_runner, {**draining, "skipAwait": False}):
        assert len(violations(pol.helm_release_atomic, resource_args(RELEASE, props))) == 1


# ---------------------------------------------------------------------------------------------------------
# RBAC


ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"


PODS_RULE = {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "delete", "get"]}


def test_a_role_granting_a_wildcard_fails_and_a_named_one_passes() -> None:
    named = {"metadata": {"name": "runner"}, "rules": [PODS_RULE]}
    assert violations(pol.rbac_least_privilege, resource_args(ROLE, named)) == []
    wide = {"metadata": {"name": "runner"}, "rules": [PODS_RULE, {**PODS_RULE, "resources": ["*"]}]}
    assert violations(pol.rbac_least_privilege, resource_args(ROLE, wide)) == [
        "Role 'runner': rules[1].resources contains '*': grant the resources and verbs the workload needs, by name"
    ]


def test_runner_chart_rbac_rules_are_listed_and_named() -> None:
    listed = runner_release(rbac={"create": True, "rules": [PODS_RULE]})
    assert violations(pol.rbac_least_privilege, resource_args(RELEASE, listed)) == []
    default = runner_release(rbac={"create": True})
    assert (
        "values.rbac.rules=unset: the chart's default Role"
        in violations(pol.rbac_least_privilege, resource_args(RELEASE, default))[0]
    )
    wide = runner_release(rbac={"create": True, "rules": [{**PODS_RULE, "verbs": ["*"]}]})
    (found,) = violations(pol.rbac_least_privilege, resource_args(RELEASE, wide))
    assert "values.rbac.rules[0].verbs contains '*'" in found
