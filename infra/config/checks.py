"""The spec's refusals and warnings: everything `load_spec` checks beyond a field's own type and bounds.

Two homes say "no" in gpu-ci. This is the first: what one section, or a reference between sections, gets wrong,
known from the spec alone. (Types, patterns, bounds and counts sit on the fields themselves, in each section's
model; what only shows once pools, runners and templates are derived is `infra.model.checks`.)

Checked here, each as one `platform.<key>=<value>: <reason>` problem:
- node types: a type that is not built in states every figure (`node_types`);
- cluster: an adopted cluster is in the stack's region, auto-upgrade needs a minor version, the name;
- pools: the name (a DNS label), a known node type (with a close match), a zone of the region that sells the
  type, min_size <= max_size >= 1, a fixed size without autoscaling, the root volume's floor, GPU sharing on a
  GPU pool only, node labels (syntax, reserved prefixes); at least one always-on pool on a Kapsule cluster;
- profiles: the name, an existing GPU pool, limits at or above requests; templates and families unique;
- workload: its profiles exist, the day's jobs within the cap, baseline node types known and GPU;
- runner: `default_pool` exists and is targeted, `manager_pool` (as set or chosen) is an always-on CPU pool;
- gitlab: a group scope names the group, and the project sits in it;
- the GPU operator's namespace is not the runners';
- warm windows: on GPU pools, within max_size, not overlapping each other; the placeholders' priority at or
  above the autoscaler's expendable cutoff and below the jobs', in a namespace of their own;
- ci: variable names GitLab accepts, none that shadows a derived, `KUBERNETES_*`, `CI_*` or `GITLAB_*`
  variable, none that disarms a guard (`NVIDIA_*`, `CUDA_VISIBLE_DEVICES`: GPUs around the device plugin;
  `FF_*`: the runner's feature flags), no credential in clear (CI or profile variables), `image` names the
  configured registry variable.
"""

from __future__ import annotations

import difflib

from infra.catalog import BUILTIN_CATALOG
from infra.config.base import (
    MAX_JOBS_PER_DAY,
    is_ci_variable_name,
    is_dns_label,
    label_key_problem,
    label_value_problem,
)
from infra.config.ci import DEFAULT_REGISTRY_VARIABLE, DERIVED_VARIABLES
from infra.config.credentials import credential_kind, credential_problem
from infra.config.errors import Problem, Redacted, format_value, key_path
from infra.config.platform import MIN_GPU_ROOT_VOLUME_GB, MIN_ROOT_VOLUME_GB, RESERVED_LABEL_PREFIXES, PlatformSpec
from infra.config.pools import POOL_NAME_LABEL


def spec_problems(spec: PlatformSpec) -> list[Problem]:
    """Every rule of this module (listed in its docstring), in the order of the spec's sections."""
    if not spec.profiles:
        return [Problem(key_path("profiles"), {}, "no profile: the runner routes jobs by profile, give at least one")]
    return [
        *_catalog_problems(spec),
        *_cluster_problems(spec),
        *(p for name in sorted(spec.pools) for p in _pool_problems(spec, name)),
        *_always_on_problems(spec),
        *_namespace_problems(spec),
        *(p for name in sorted(spec.pools) for p in _warm_problems(spec, name)),
        *_warm_capacity_problems(spec),
        *(p for name in sorted(spec.profiles) for p in _profile_problems(spec, name)),
        *_uniqueness_problems(spec),
        *_workload_problems(spec),
        *_runner_problems(spec),
        *_gitlab_problems(spec),
        *_ci_problems(spec),
    ]


def _catalog_problems(spec: PlatformSpec) -> list[Problem]:
    problems = []
    for name, override in sorted(spec.node_types.items()):
        if name not in BUILTIN_CATALOG:
            missing = override.missing_for_new_type()
            if missing:
                problems.append(
                    Problem(
                        key_path("node_types", name),
                        name,
                        f"not a built-in node type, so it must state {', '.join(missing)}",
                    )
                )
    return problems


def _cluster_problems(spec: PlatformSpec) -> list[Problem]:
    cluster, problems = spec.cluster, []
    if cluster.existing_id and not cluster.existing_id.startswith(f"{spec.region}/"):
        problems.append(
            Problem(
                key_path("cluster", "existing_id"), cluster.existing_id, f"is not in the stack's region {spec.region!r}"
            )
        )
    if cluster.auto_upgrade and cluster.auto_upgrade.enable and cluster.version.count(".") != 1:
        problems.append(
            Problem(
                key_path("cluster", "version"),
                cluster.version,
                "auto_upgrade needs a minor version (e.g. 1.35): patches are applied by Scaleway",
            )
        )
    if not is_dns_label(cluster.name):
        problems.append(Problem(key_path("cluster", "name"), cluster.name, "must be lower case a-z, 0-9 and '-'"))
    return problems


def _pool_problems(spec: PlatformSpec, name: str) -> list[Problem]:
    pool, path = spec.pools[name], ("pools", name)
    problems = []
    if not is_dns_label(name):
        return [
            Problem(
                key_path(*path),
                name,
                "pool name must be 1-63 of a-z, 0-9 and '-' (it is a label value "
                "and part of the runner's node-selector regex)",
            )
        ]
    if pool.node_type not in spec.catalog:
        close = difflib.get_close_matches(pool.node_type, spec.catalog.names(), n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(spec.catalog.names())}"
        return [
            Problem(
                key_path(*path, "node_type"),
                pool.node_type,
                f"unknown node type; {hint} (add it under platform.node_types)",
            )
        ]
    node = spec.catalog[pool.node_type]
    if not pool.zone.startswith(f"{spec.region}-"):
        problems.append(Problem(key_path(*path, "zone"), pool.zone, f"is not a zone of the region {spec.region!r}"))
    elif node.zones is not None and pool.zone not in node.zones:
        problems.append(
            Problem(
                key_path(*path, "zone"),
                pool.zone,
                f"{pool.node_type} is not sold there (zones: {', '.join(sorted(node.zones))})",
            )
        )
    if pool.min_size > pool.max_size:
        problems.append(Problem(key_path(*path, "min_size"), pool.min_size, f"is above max_size={pool.max_size}"))
    elif pool.max_size < 1:
        problems.append(Problem(key_path(*path, "max_size"), pool.max_size, "must be >= 1"))
    elif not pool.autoscaling and pool.min_size != pool.max_size:
        problems.append(
            Problem(
                key_path(*path, "max_size"),
                pool.max_size,
                f"a pool without autoscaling has a fixed size: set it equal to min_size={pool.min_size}",
            )
        )
    volume = spec.root_volume_gb(name)
    floor = MIN_GPU_ROOT_VOLUME_GB if node.is_gpu else MIN_ROOT_VOLUME_GB
    if volume < floor:
        why = "CUDA images need room" if node.is_gpu else "Kapsule's minimum"
        problems.append(Problem(key_path(*path, "root_volume_size_gb"), volume, f"must be >= {floor} GB ({why})"))
    problems += _sharing_problems(spec, name)
    for key, value in sorted(pool.labels.items()):
        reason = label_key_problem(key) or label_value_problem(value)
        if reason is None and key.startswith(RESERVED_LABEL_PREFIXES):
            reason = f"prefix reserved: {POOL_NAME_LABEL} is set by Kapsule, nvidia.com/ labels by gpu-ci"
        if reason:
            problems.append(Problem(key_path(*path, "labels", key), value, reason))
    return problems


def _sharing_problems(spec: PlatformSpec, name: str) -> list[Problem]:
    """Sharing is a GPU pool's (its replicas are checked by the sharing variant itself)."""
    pool = spec.pools[name]
    if pool.gpu_sharing.strategy == "none" or spec.catalog[pool.node_type].is_gpu:
        return []
    path = key_path("pools", name, "gpu_sharing", "strategy")
    return [Problem(path, pool.gpu_sharing.strategy, f"{pool.node_type} has no GPU to share")]


def _namespace_problems(spec: PlatformSpec) -> list[Problem]:
    """The operator's namespace is not the runners' (its Pod Security and default-deny policies would break
    the operator, and its device-plugin ConfigMap would sit where jobs run)."""
    if spec.gpu_operator.namespace != spec.runner.namespace:
        return []
    return [
        Problem(
            key_path("gpu_operator", "namespace"),
            spec.gpu_operator.namespace,
            "is the runners' namespace (platform.runner.namespace): its Pod Security and default-deny network "
            "policies would break the GPU operator, and the sharing ConfigMap would sit where jobs run",
        )
    ]


MAX_WARM_POOL_NAME = 40
"""A warm pool's CronJobs are named `warm-<pool>-<n>`, and a CronJob's name has at most 52 characters."""


def _warm_capacity_problems(spec: PlatformSpec) -> list[Problem]:
    """The placeholders' priority is one the autoscaler acts on and the jobs' is above it; their namespace is
    their own."""
    if not spec.warm_pools():
        return []
    warm, problems = spec.warm_capacity, []
    cutoff = spec.cluster.autoscaler.expendable_pods_priority_cutoff
    if warm.placeholder_priority < cutoff:
        problems.append(
            Problem(
                key_path("warm_capacity", "placeholder_priority"),
                warm.placeholder_priority,
                f"is below the autoscaler's expendable_pods_priority_cutoff={cutoff}: the autoscaler would ignore "
                "the placeholders (no warm node); raise it to the cutoff or above",
            )
        )
    if warm.job_priority <= warm.placeholder_priority:
        problems.append(
            Problem(
                key_path("warm_capacity", "job_priority"),
                warm.job_priority,
                f"is not above placeholder_priority={warm.placeholder_priority}: a job could not preempt a "
                "placeholder, and would wait Pending beside it",
            )
        )
    if warm.namespace in (spec.runner.namespace, spec.gpu_operator.namespace):
        problems.append(
            Problem(
                key_path("warm_capacity", "namespace"),
                warm.namespace,
                "is the runners' or the GPU operator's namespace: the placeholders and their scalers need their own",
            )
        )
    problems += [
        Problem(
            key_path("pools", name),
            name,
            f"has warm windows: its name must be at most {MAX_WARM_POOL_NAME} "
            "characters (its CronJobs are named warm-<pool>-<n>, at most 52)",
        )
        for name in spec.warm_pools()
        if len(name) > MAX_WARM_POOL_NAME
    ]
    return problems


def _warm_problems(spec: PlatformSpec, name: str) -> list[Problem]:
    """Warm windows: on a GPU pool, within its max_size, not overlapping each other."""
    pool, problems = spec.pools[name], []
    path = ("pools", name, "warm")
    if pool.warm and not spec.is_gpu_pool(name):
        return [
            Problem(key_path(*path), len(pool.warm), "warm capacity is for GPU pools: this pool's nodes run no CI job")
        ]
    seen: list[tuple[int, int, int]] = []
    for index, window in enumerate(pool.warm):
        if window.nodes > pool.max_size:
            problems.append(
                Problem(key_path(*path, index, "nodes"), window.nodes, f"is above the pool's max_size={pool.max_size}")
            )
        for start, end in window.intervals():
            clash = next((other for other in seen if start < other[1] and other[0] < end), None)
            if clash is not None:
                problems.append(
                    Problem(
                        key_path(*path, index),
                        f"{window.days} {window.start}-{window.end}",
                        f"overlaps warm window {clash[2]} of the pool: give each hour once",
                    )
                )
                break
        seen += [(start, end, index) for start, end in window.intervals()]
    return problems


def _always_on_problems(spec: PlatformSpec) -> list[Problem]:
    if spec.always_on_pools() or spec.cluster.type != "kapsule":
        return []
    return [
        Problem(
            key_path("pools"),
            sorted(spec.pools),
            "no pool has min_size >= 1: a mutualized Kapsule cluster needs an always-on pool "
            "(runner manager, kube-system)",
        )
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
    return _guard_variable(name)


def _profile_variable_problems(spec: PlatformSpec) -> list[Problem]:
    """A profile's variables are committed in clear into the templates file: no guard-disarming name, no
    credential."""
    problems = []
    for profile_name, profile in sorted(spec.profiles.items()):
        for name, value in sorted(profile.variables.items()):
            path = key_path("profiles", profile_name, "variables", name)
            if guard := _guard_variable(name):
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


def _guard_variable(name: str) -> str | None:
    """Why a CI or profile variable would disarm a guard of the platform, or None."""
    if name.startswith(GPU_VISIBILITY_PREFIXES) or name in GPU_VISIBILITY_VARIABLES:
        return (
            "would change which GPUs a job sees around the device plugin (NVIDIA_VISIBLE_DEVICES=all shows it every "
            "GPU of its node): the GPU share comes from the pool's gpu_sharing"
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
