"""Each GitLab runner's config.toml template and Helm values, from the derived platform (pure: no Pulumi import).

One runner per GPU pool (`infra.model.Runner`), one Helm release each. `runner_config(platform, runner)` is
the `[[runners]]` entry the chart registers from (`runners.config`), built as a dict and written with
tomli_w. The chart passes that text through Helm's `tpl`, so it must hold no `{{` (nothing here is
templated: the namespace is written out, the GPU patch is block YAML). `runner_helm_values(platform, runner)`
is the chart's values: only keys the chart's templates read
(tests/data/upstream/gitlab-runner-chart-0.86-values-paths.txt), and never the runner token: the token
reaches the manager through the `runners.secret` Secret, which the runner component creates.

What keeps a GPU node from billing for nothing:
- job pods get `activeDeadlineSeconds` = the job's timeout (FF_USE_POD_ACTIVE_DEADLINE_SECONDS), so a
  pod orphaned by a crashed manager is killed by the kubelet at the latest when its job would time out;
- a job pod's deletion grace is short (`pod_termination_grace_period_seconds`, `cleanup_*`), so a
  finished or cancelled job frees its GPU replica at once and the autoscaler can remove the node;
- job pods are annotated `safe-to-evict: false`: the autoscaler never evicts a running job to consolidate;
  from chart 0.88.0 (runner 18.11) each job pod also gets a PodDisruptionBudget (`pod_disruption_budget`), so
  a node drained by an upgrade waits for its jobs.
What keeps an upgrade from losing jobs: the Deployment's strategy is `Recreate`, so the old manager stops
taking jobs (preStop: SIGQUIT, finish the running ones, within a grace period of the job timeout plus a
margin) before the new one starts; jobs queued meanwhile wait in GitLab, and the pool is never
oversubscribed by two managers. (A RollingUpdate would start the new manager while the old one drains: up to
twice the pool's slots of pods, the excess Pending until `poll_timeout` fails them.)
What keeps a job in its pod: job pods are unprivileged, drop every capability, mount no API token, may only
use the platform registry's images (`allowed_images`/`allowed_services`), and carry `gpu-ci/role: job`, which
the namespace's NetworkPolicies select.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import tomli_w
import yaml

from infra.capacity import MANAGER_CPU_REQUEST, MANAGER_MEMORY_REQUEST
from infra.config.pools import POOL_NAME_LABEL
from infra.job_overrides import JOB_RESOURCES
from infra.model.pools import GPU_TAINT
from infra.model.runners import CACHE_SECRET_NAME, REGISTRY_PULL_SECRET_NAME, ROLE_LABEL
from infra.render.yaml_text import dump_yaml

if TYPE_CHECKING:
    from infra.model.platform import Platform
    from infra.model.runners import Runner

SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
"""Set to "false" on manager and job pods: the autoscaler does not evict them to scale a node down."""

FEATURE_FLAGS = {
    "FF_USE_ADVANCED_POD_SPEC_CONFIGURATION": True,
    "FF_USE_POD_ACTIVE_DEADLINE_SECONDS": True,
    "FF_PRINT_POD_EVENTS": True,
    "FF_WAIT_FOR_POD_TO_BE_REACHABLE": True,
}
"""pod_spec patches need the first; the second bounds an orphaned pod's life; the third shows scale-up
events in the job log while a job waits for a GPU node; the fourth waits until a freshly scheduled pod on a
node that just joined is reachable before attaching (without it, jobs on nodes scaled from zero fail at
attach: gitlab-runner MR 3556)."""
POOL_LABEL = "gpu-ci/pool"
"""Label on job and manager pods: their pool (beside `ROLE_LABEL`, `job` or `manager`, which the NetworkPolicies
select)."""

RBAC_RULES = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "delete", "get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods/attach"], "verbs": ["create", "delete", "get", "patch"]},
    {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create", "delete", "get", "patch"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get", "list"]},
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create", "delete", "get", "update"]},
    {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["services"], "verbs": ["create", "get"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["list", "watch"]},
]
"""The manager's Role in its namespace: the Kubernetes executor's documented minimum ("Configure runner API
permissions"; pods list/watch for informers, events for FF_PRINT_POD_EVENTS), instead of the chart's
default of every verb on every core resource."""
PDB_RULE = {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["create", "get"]}
"""What `pod_disruption_budget = true` needs besides (the executor's documented permissions); each budget is
owned by its job pod, so Kubernetes deletes it with the pod."""

GPU_PATCH_NAME = "gpu"
JOB_POD_TERMINATION_GRACE_SECONDS = 30
CLEANUP_GRACE_SECONDS = 30
CLEANUP_RESOURCES_TIMEOUT = "5m"
DRAIN_MARGIN_SECONDS = 300
"""Added to the job timeout for the manager's termination grace: time to upload the last job's artifacts."""
SCALEWAY_S3_HOST = "s3.{region}.scw.cloud"

_DRAIN = "kill -QUIT $(pgrep -x gitlab-runner) 2>/dev/null; while pgrep -x gitlab-runner >/dev/null; do sleep 5; done"
"""preStop of the manager: SIGQUIT is gitlab-runner's graceful shutdown (finish running jobs, take no
new one); Kubernetes' SIGTERM would abort them. pgrep -x matches the process name, not this shell."""


def gpu_pod_spec_patch() -> str:
    """Strategic-merge patch giving the build container one `nvidia.com/gpu` (one replica of a shared GPU)."""
    patch = {
        "containers": [
            {"name": "build", "resources": {"requests": {"nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 1}}}
        ]
    }
    return yaml.safe_dump(patch, sort_keys=True, default_flow_style=False)


def runner_config(platform: Platform, runner: Runner) -> dict[str, Any]:
    """A runner's config.toml template (one `[[runners]]` entry), as a dict."""
    spec = platform.spec
    kubernetes: dict[str, Any] = {
        "namespace": spec.runner.namespace,
        "image": spec.runner.default_image,
        "poll_timeout": runner.poll_timeout_seconds,
        **{r.field: runner.defaults[r.field].text for r in JOB_RESOURCES},
        **{r.max_key: runner.maxima[r.field].text for r in JOB_RESOURCES},
        "node_selector": runner.node_selector,
        "node_selector_overwrite_allowed": runner.node_selector_regex,
        "node_tolerations": {f"{GPU_TAINT.key}={GPU_TAINT.value}": GPU_TAINT.effect},
        "pod_labels": {ROLE_LABEL: "job", POOL_LABEL: runner.pool},
        "pod_annotations": {SAFE_TO_EVICT: "false"},
        # Least privilege for job pods: never privileged, no setuid escalation, no capability, no API token,
        # images from the platform registry (and the configured list) only.
        "privileged": False,
        "allow_privilege_escalation": False,
        "cap_drop": ["ALL"],
        "automount_service_account_token": False,
        "allowed_images": list(platform.allowed_images),
        "allowed_services": list(platform.allowed_images),
        "pod_termination_grace_period_seconds": JOB_POD_TERMINATION_GRACE_SECONDS,
        "cleanup_grace_period_seconds": CLEANUP_GRACE_SECONDS,
        "cleanup_resources_timeout": CLEANUP_RESOURCES_TIMEOUT,
        "pod_spec": [{"name": GPU_PATCH_NAME, "patch_type": "strategic", "patch": gpu_pod_spec_patch()}],
    }
    if spec.runner.protects_job_pods:  # a drain (an upgrade) waits for the job instead of evicting it
        kubernetes["pod_disruption_budget"] = True
    if spec.registry.needs_pull_secret:
        kubernetes["image_pull_secrets"] = [REGISTRY_PULL_SECRET_NAME]
    if priority := platform.job_priority_class(runner):  # above the warm placeholders': a job preempts one
        kubernetes["priority_class_name"] = priority
    entry: dict[str, Any] = {
        "executor": "kubernetes",
        "feature_flags": dict(FEATURE_FLAGS),
        "kubernetes": kubernetes,
    }
    cache = spec.runner.cache
    if cache is not None:
        entry["cache"] = {
            "Type": "s3",
            "Path": cache.path,
            "Shared": cache.shared,
            "s3": {
                "ServerAddress": SCALEWAY_S3_HOST.format(region=spec.region),
                "BucketName": cache.bucket,
                "BucketLocation": spec.region,
                "AuthenticationType": "access-key",
                "Insecure": False,
            },
        }
    return {"runners": [entry]}


def render_runner_config(platform: Platform, runner: Runner) -> str:
    """The config.toml template as text (what the chart's `runners.config` receives)."""
    text = tomli_w.dumps(runner_config(platform, runner), multiline_strings=True)
    if "{{" in text:  # the chart runs this through Helm's tpl; a `{{` would be executed as a template
        raise ValueError("runner config must not contain '{{' (Helm's tpl would interpret it)")
    return text


def runner_helm_values(platform: Platform, runner: Runner) -> dict[str, Any]:
    """Values of a runner's gitlab-runner release (no token: it comes from the `runners.secret` Secret)."""
    spec = platform.spec
    runners: dict[str, Any] = {"config": render_runner_config(platform, runner), "secret": runner.token_secret_name}
    if spec.runner.cache is not None:
        runners["cache"] = {"secretName": CACHE_SECRET_NAME}
    return {
        "gitlabUrl": spec.gitlab.url,
        "concurrent": runner.concurrent,
        "rbac": {
            "create": True,
            "clusterWideAccess": False,
            "rules": [*RBAC_RULES, PDB_RULE] if spec.runner.protects_job_pods else RBAC_RULES,
        },
        "serviceAccount": {"create": True},
        "nodeSelector": {POOL_NAME_LABEL: platform.manager_pool},
        "strategy": {"type": "Recreate"},
        "terminationGracePeriodSeconds": spec.runner.job_timeout_seconds + DRAIN_MARGIN_SECONDS,
        "deploymentLifecycle": {"preStop": {"exec": {"command": ["/bin/sh", "-c", _DRAIN]}}},
        "podLabels": {ROLE_LABEL: "manager", POOL_LABEL: runner.pool},
        # The autoscaler would cut a drain short (max_graceful_termination_sec) on an autoscaled manager pool.
        "podAnnotations": {SAFE_TO_EVICT: "false"},
        "resources": {"requests": {"cpu": MANAGER_CPU_REQUEST.text, "memory": MANAGER_MEMORY_REQUEST.text}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "runAsNonRoot": True,
            "privileged": False,
        },
        "runners": runners,
    }


def render_runner_values(platform: Platform, runner: Runner) -> str:
    """The Helm values as YAML, for reviewers (the manager pod's runner-id annotation is added at deploy)."""
    return dump_yaml(runner_helm_values(platform, runner))
