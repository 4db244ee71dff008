"""The spec's rules for the jobs: profiles, the workload, the runner's pools, GitLab, CI variables (pure)."""

from __future__ import annotations

from infra.config.base import (
    MAX_JOBS_PER_DAY,
    is_ci_variable_name,
    is_dns_label,
)
from infra.config.ci import DEFAULT_REGISTRY_VARIABLE, DERIVED_VARIABLES
from infra.config.credentials import credential_kind, credential_problem
from infra.config.errors import Problem, Redacted, format_value, key_path
from infra.config.platform import PlatformSpec
from policy.policies import definitions as rules


def job_problems(spec: PlatformSpec) -> list[Problem]:
    """Profiles (one by one, then together), the workload, the runner's pools, GitLab's scope, CI variables."""
    return [
        *(p for name in sorted(spec.profiles) for p in _profile_problems(spec, name)),
        *_uniqueness_problems(spec),
        *_workload_problems(spec),
        *_runner_problems(spec),
        *_sharing_trust_problems(spec),
        *_gitlab_problems(spec),
        *_ci_problems(spec),
    ]


def _profile_problems(spec: PlatformSpec, name: str) -> list[Problem]:
    profile, path = spec.profiles[name], ("profiles", name)
    if not is_dns_label(name):
        return [Problem(key_path(*path), name, "profile name must be 1-63 of a-z, 0-9 and '-'")]
    if profile.pool not in spec.pools:
        return [
            Problem(key_path(*path, "pool"), profile.pool, f"no such pool (pools: {', '.join(sorted(spec.pools))})")
        ]
    pool = spec.pools[profile.pool]
    if spec.pool_node(profile.pool) is not None and not spec.is_gpu_pool(profile.pool):
        return [
            Problem(
                key_path(*path, "pool"),
                profile.pool,
                f"is not a GPU pool ({pool.node_type}); every CI job requests one nvidia.com/gpu",
            )
        ]
    problems = []
    if profile.cpu_limit.cores < profile.cpu_request.cores:
        problems.append(
            Problem(
                key_path(*path, "cpu_limit"), profile.cpu_limit.text, f"is below cpu_request={profile.cpu_request.text}"
            )
        )
    if profile.memory_limit.bytes < profile.memory_request.bytes:
        problems.append(
            Problem(
                key_path(*path, "memory_limit"),
                profile.memory_limit.text,
                f"is below memory_request={profile.memory_request.text}",
            )
        )
    return problems


def _uniqueness_problems(spec: PlatformSpec) -> list[Problem]:
    problems = []
    seen_templates: dict[str, str] = {}
    seen_families: dict[str, str] = {}
    for name, profile in sorted(spec.profiles.items()):
        if profile.template in seen_templates:
            problems.append(
                Problem(
                    key_path("profiles", name, "template"),
                    profile.template,
                    f"already used by profile {seen_templates[profile.template]!r}",
                )
            )
        seen_templates.setdefault(profile.template, name)
        for family in profile.families:
            if family in seen_families:
                problems.append(
                    Problem(
                        key_path("profiles", name, "families"),
                        family,
                        f"already routed by profile {seen_families[family]!r}",
                    )
                )
            seen_families.setdefault(family, name)
    return problems


def _workload_problems(spec: PlatformSpec) -> list[Problem]:
    """References: workload profiles must exist, baseline node types must be in the catalogue."""
    workload = spec.workload
    if workload is None:
        return []
    problems = []
    for name in sorted(workload.profiles):
        if name not in spec.profiles:
            problems.append(
                Problem(
                    key_path("workload", "profiles", name),
                    name,
                    f"no such profile (profiles: {', '.join(sorted(spec.profiles))})",
                )
            )
    total = sum(load.daily_jobs for load in workload.profiles.values())
    if total > MAX_JOBS_PER_DAY:
        problems.append(
            Problem(
                key_path("workload", "profiles"),
                {name: load.daily_jobs for name, load in sorted(workload.profiles.items())},
                f"{total} jobs a day in all, above gpu-ci's limit of {MAX_JOBS_PER_DAY} (the cost model "
                "simulates every job; docs/config-limits.md)",
            )
        )
    baseline = workload.baseline
    if baseline.node_type not in spec.catalog:
        problems.append(Problem(key_path("workload", "baseline", "node_type"), baseline.node_type, "unknown node type"))
    elif not spec.catalog[baseline.node_type].is_gpu:
        problems.append(
            Problem(key_path("workload", "baseline", "node_type"), baseline.node_type, "has no GPU to run the jobs on")
        )
    for node_type in baseline.idle_node_types:
        if node_type not in spec.catalog:
            problems.append(
                Problem(key_path("workload", "baseline", "idle_node_types"), node_type, "unknown node type")
            )
    return problems


def _sharing_trust_problems(spec: PlatformSpec) -> list[Problem]:
    """No GPU sharing that shares the node's IPC (MPS) on a pool whose runner takes jobs of unprotected branches.

    NVIDIA's device plugin mounts the MPS daemon's pipe directory and a node-wide `/dev/shm` into every client:
    a job of any branch could read a protected job's shared memory, or tell the daemon to lift the limits."""
    if rules.may_serve_mps(spec.runner.access_level):  # the pack's mps-pools-protected-runners, said at the key
        return []
    return [
        Problem(
            key_path("pools", name, "gpu_sharing", "strategy"),
            spec.pools[name].gpu_sharing.strategy,
            "shares the MPS daemon's pipe directory and a node-wide /dev/shm with every job on the GPU, and "
            f"runner.access_level={spec.runner.access_level} runs jobs of any branch there: they could read "
            "protected jobs' shared memory or lift the MPS limits (set runner.access_level: "
            f"{rules.MPS_ACCESS_LEVEL}, or use time-slicing)",
            policy=rules.MPS_POOLS_PROTECTED_RUNNERS,
        )
        for name in spec.targeted_pools()
        if spec.pools[name].gpu_sharing.shares_host_ipc
    ]


def _runner_problems(spec: PlatformSpec) -> list[Problem]:
    """The runner's pools exist and suit their role."""
    runner, problems = spec.runner, []
    pools = ", ".join(sorted(spec.pools))
    targeted = spec.targeted_pools()
    # a profile on a missing or CPU pool: reported with the profile, not again here
    dangling = any(not spec.is_gpu_pool(p.pool) for p in spec.profiles.values())
    if runner.default_pool is not None and runner.default_pool not in spec.pools:
        problems.append(Problem(key_path("runner", "default_pool"), runner.default_pool, f"no such pool ({pools})"))
    elif runner.default_pool is not None and runner.default_pool not in targeted and not dangling:
        problems.append(
            Problem(
                key_path("runner", "default_pool"),
                runner.default_pool,
                "no profile targets it: every job of the runner gets one nvidia.com/gpu and a profile's size "
                f"(pools of profiles: {format_value(targeted)})",
            )
        )
    chosen = spec.manager_pool()
    path = key_path("runner", "manager_pool")
    if not spec.always_on_pools() and spec.cluster.type == "kapsule":
        return problems  # reported once, as the cluster's missing always-on pool
    if chosen is None:
        problems.append(
            Problem(path, None, "no always-on pool without a GPU: the runner manager needs one to run all the time")
        )
    elif chosen not in spec.pools:
        problems.append(Problem(path, chosen, f"no such pool ({pools})"))
    elif not spec.pools[chosen].always_on:
        problems.append(
            Problem(
                path,
                chosen,
                f"is not always-on (min_size={spec.pools[chosen].min_size}): the runner manager must run all the "
                "time to pick up jobs",
            )
        )
    elif spec.is_gpu_pool(chosen):
        problems.append(
            Problem(
                path,
                chosen,
                "is a GPU pool: its nvidia.com/gpu taint keeps the manager off, and a GPU node would bill around "
                "the clock",
            )
        )
    return problems


def _gitlab_problems(spec: PlatformSpec) -> list[Problem]:
    """A group scope needs the group, and the training project must sit in it."""
    gitlab, problems = spec.gitlab, []
    needs_group = [
        (scope_key, value)
        for scope_key, value in (
            ("gitlab.runner_scope", gitlab.runner_scope),
            ("ci.variables_scope", spec.ci.variables_scope),
        )
        if value == "group"
    ]
    if not needs_group:
        return []
    if gitlab.group is None:
        return [
            Problem(key_path("gitlab", "group"), None, f"{key} 'group' needs the group's full path")
            for key, _ in needs_group[:1]
        ]
    if not gitlab.project.startswith(f"{gitlab.group}/"):
        why = {
            "gitlab.runner_scope": "a group runner serves only the group's projects",
            "ci.variables_scope": "group variables reach only the group's projects",
        }[needs_group[0][0]]
        problems.append(
            Problem(key_path("gitlab", "project"), gitlab.project, f"is not in group {gitlab.group!r}: {why}")
        )
    return problems


GPU_VISIBILITY_PREFIXES = ("NVIDIA_",)
GPU_VISIBILITY_VARIABLES = ("CUDA_VISIBLE_DEVICES",)
MPS_PREFIX = "CUDA_MPS_"
FEATURE_FLAG_PREFIX = "FF_"


def _ci_variable_reason(name: str, derived: set[str]) -> str | None:
    if not is_ci_variable_name(name):
        return "not a valid CI variable name (letters, digits, '_')"
    if name in derived:
        return f"{name} is derived by gpu-ci; do not set it here"
    if name.startswith("KUBERNETES_"):
        return "would size or route every job; routing comes from the profiles' templates"
    if name.startswith(("CI_", "GITLAB_")):
        return "would shadow a GitLab predefined variable"
    return guard_variable_reason(name)


def _profile_variable_problems(spec: PlatformSpec) -> list[Problem]:
    """A profile's variables are committed in clear into the templates file: no guard-disarming name, no
    credential."""
    problems = []
    for profile_name, profile in sorted(spec.profiles.items()):
        for name, value in sorted(profile.variables.items()):
            path = key_path("profiles", profile_name, "variables", name)
            if guard := guard_variable_reason(name):
                problems.append(Problem(path, value, guard))
            elif what := credential_kind(name, value):
                problems.append(
                    Problem(
                        path,
                        Redacted(value),
                        f"looks like {what}: profile variables are committed in clear into the templates file; "
                        f"make it a platform.ci.variables entry with {{secret: {name.lower()}}}",
                    )
                )
    return problems


def guard_variable_reason(name: str) -> str | None:
    """Why a variable of the jobs (CI, profile, or one a training job sets: check-ci) would disarm a guard of
    the platform, or None. Names are case-sensitive, as the jobs' environment is: `nvidia_visible_devices` is
    harmless."""
    if name.startswith(GPU_VISIBILITY_PREFIXES) or name in GPU_VISIBILITY_VARIABLES:
        return (
            "would change which GPUs a job sees around the device plugin (NVIDIA_VISIBLE_DEVICES=all shows it every "
            "GPU of its node): the GPU share comes from the pool's gpu_sharing"
        )
    if name.startswith(MPS_PREFIX):
        return (
            "would change the job's MPS client settings (its pipe, its share of the GPU's threads or memory), which "
            "the device plugin sets for each replica: the GPU share comes from the pool's gpu_sharing"
        )
    if name.startswith(FEATURE_FLAG_PREFIX):
        return (
            "a job variable overrides the runner's feature flags (FF_USE_ADVANCED_POD_SPEC_CONFIGURATION=false drops "
            "the GPU request): gpu-ci sets them in each runner's config"
        )
    return None


def _ci_problems(spec: PlatformSpec) -> list[Problem]:
    """Variable names GitLab would refuse, that would shadow what gpu-ci or GitLab set, that would disarm a
    guard, or credentials in clear."""
    problems = []
    derived = {*DERIVED_VARIABLES, spec.ci.registry_variable}
    for name, variable in sorted(spec.ci.variables.items()):
        shown: object = variable.value if variable.value is not None else {"secret": variable.secret}
        reason = _ci_variable_reason(name, derived)
        if reason is None and variable.value is not None and (reason := credential_problem(name, variable.value)):
            shown = Redacted(variable.value)
        if reason:
            problems.append(Problem(key_path("ci", "variables", name), shown, reason))
    problems += _profile_variable_problems(spec)
    ci = spec.ci
    if ci.registry_variable != DEFAULT_REGISTRY_VARIABLE and "${REGISTRY}" in ci.image:
        problems.append(
            Problem(
                key_path("ci", "image"),
                ci.image,
                f"uses ${{REGISTRY}}, but ci.registry_variable is {ci.registry_variable}: "
                f"write ${{{ci.registry_variable}}}",
            )
        )
    return problems
