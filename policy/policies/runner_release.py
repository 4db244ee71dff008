"""The GitLab runner's Helm release: which release is the runner, what its chart values grant (RBAC in its
namespace, no `*` rule, nor in any Role), and that every Helm release rolls back on failure or, for a runner,
drains. The config.toml the release carries (`values.runners.config`) has rules of its own: `runner_toml`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs

from .inputs import as_list, known, physical_name, show

HELM_RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
ROLE_TYPES = frozenset(
    {"kubernetes:rbac.authorization.k8s.io/v1:Role", "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"}
)
RUNNER_CHART = "gitlab-runner"


def is_runner_chart(chart: Any) -> bool:
    """The gitlab-runner chart, by name, repository path or OCI reference."""
    return isinstance(chart, str) and chart.rstrip("/").rsplit("/", 1)[-1] == RUNNER_CHART


def is_runner_release(args: ResourceValidationArgs) -> bool:
    """A Helm release of the gitlab-runner chart: one per GPU pool."""
    return args.resource_type == HELM_RELEASE_TYPE and is_runner_chart(args.props.get("chart"))


def _wildcard_rules(rules: Any) -> list[str]:
    """`apiGroups/resources/verbs` of RBAC rules that grant `*`, shown as `rules[i].field`."""
    found = []
    for index, rule in enumerate(as_list(rules)):
        if isinstance(rule, Mapping):
            for field in ("apiGroups", "resources", "verbs"):
                if "*" in [str(v) for v in as_list(rule.get(field))]:
                    found.append(f"rules[{index}].{field}")
    return found


def rbac_least_privilege(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """No Role or ClusterRole, and no runner chart's `rbac.rules`, grants `*` (resources, verbs or API groups);
    a runner release that creates RBAC lists its rules (the chart's default is every verb on every resource).

    Why: the manager's token creates job pods; with `*` it also reads every Secret of its namespace and
    creates anything, which a job that reaches the token turns into the cluster.
    """
    if args.resource_type in ROLE_TYPES:
        for field in _wildcard_rules(args.props.get("rules")):
            report_violation(
                f"{args.resource_type.rsplit(':', 1)[-1]} '{known(args.props, 'metadata', 'name') or args.name}': "
                f"{field} contains '*': grant the resources and verbs the workload needs, by name",
                None,
            )
        return
    if not is_runner_release(args):
        return
    values = args.props.get("values")
    rbac = values.get("rbac") if isinstance(values, Mapping) else None
    if not isinstance(rbac, Mapping) or rbac.get("create") is False:
        return
    where = f"Helm release '{physical_name(args)}' ({RUNNER_CHART})"
    if not as_list(rbac.get("rules")):
        report_violation(
            f"{where}: values.rbac.rules=unset: the chart's default Role grants every verb on every core "
            "resource; list the Kubernetes executor's rules",
            None,
        )
    for field in _wildcard_rules(rbac.get("rules")):
        report_violation(
            f"{where}: values.rbac.{field} contains '*': grant the resources and verbs the runner needs, by name",
            None,
        )


def runner_rbac_namespaced(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """The runner's RBAC stops at its namespace (`rbac.clusterWideAccess` is not true).

    Why: the manager holds a token that creates pods and secrets; cluster-wide, a leaked token reaches
    kube-system and the GPU operator.
    """
    if not is_runner_release(args):
        return
    values = args.props.get("values")
    rbac = values.get("rbac") if isinstance(values, Mapping) else None
    wide = rbac.get("clusterWideAccess") if isinstance(rbac, Mapping) else None
    if wide is True:
        report_violation(
            f"Helm release '{physical_name(args)}' ({RUNNER_CHART}): values.rbac.clusterWideAccess=True: the runner's "
            "Role must be limited to its namespace (a ClusterRole lets it create pods and read secrets anywhere)",
            None,
        )


def helm_release_atomic(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Every Helm release is atomic with a timeout: a failed upgrade rolls back instead of leaving it half-done;
    except a runner release that drains: `skipAwait` with the Deployment strategy `Recreate`.

    Why: a non-atomic failed upgrade leaves a broken release until someone runs Helm by hand; the timeout bounds
    how long `pulumi up` waits before rolling back. A runner manager's upgrade is different: with `Recreate`
    the old manager finishes its jobs first (up to the job timeout), which no Helm wait may cut short, and an
    atomic rollback would restart a manager that is still draining.
    """
    if args.resource_type != HELM_RELEASE_TYPE:
        return
    props, where = args.props, f"Helm release '{physical_name(args)}' (chart {show(known(args.props, 'chart'))})"
    strategy = (props.get("values") or {}).get("strategy") or {}
    draining_runner = is_runner_release(args) and props.get("skipAwait") is True and strategy.get("type") == "Recreate"
    if props.get("atomic") is not True and not draining_runner:
        report_violation(
            f"{where}: atomic={show(props.get('atomic'))}: set atomic: true so a failed upgrade rolls back "
            "(a runner release may instead skip the await with strategy Recreate)",
            None,
        )
    timeout = props.get("timeout")
    if not isinstance(timeout, int | float) or timeout <= 0:
        report_violation(
            f"{where}: timeout={show(timeout)}: set a timeout (seconds) after which the release rolls back", None
        )
