"""The spec's rules for what it builds: node types, the cluster, the pools, their warm capacity (pure)."""

from __future__ import annotations

import difflib

from infra.catalog import BUILTIN_CATALOG, NODE_TYPE_NAME
from infra.config.base import (
    is_dns_label,
    label_key_problem,
    label_value_problem,
)
from infra.config.errors import Problem, key_path
from infra.config.platform import MIN_GPU_ROOT_VOLUME_GB, MIN_ROOT_VOLUME_GB, RESERVED_LABEL_PREFIXES, PlatformSpec
from infra.config.pools import POOL_NAME_LABEL


def infrastructure_problems(spec: PlatformSpec) -> list[Problem]:
    """Node types, cluster, pools (one by one, then together), the operator's namespace, warm capacity."""
    return [
        *_catalog_problems(spec),
        *_cluster_problems(spec),
        *(p for name in sorted(spec.pools) for p in _pool_problems(spec, name)),
        *_always_on_problems(spec),
        *_namespace_problems(spec),
        *(p for name in sorted(spec.pools) for p in _warm_problems(spec, name)),
        *_warm_capacity_problems(spec),
    ]


def _catalog_problems(spec: PlatformSpec) -> list[Problem]:
    problems = []
    for name, override in sorted(spec.node_types.items()):
        if not NODE_TYPE_NAME.fullmatch(name):
            problems.append(
                Problem(key_path("node_types", name), name, "not a node type name (letters, digits, '-' and '_')")
            )
        elif known := BUILTIN_CATALOG.spelled(name):
            problems.append(_spelled_otherwise(("node_types", name), name, known))
        elif (known := spec.catalog.spelled(name)) and known < name:  # two new types, one to Scaleway: said once
            problems.append(_spelled_otherwise(("node_types", name), name, f"node_types.{known}", "keep one"))
        elif name not in BUILTIN_CATALOG:
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


def _spelled_otherwise(path: tuple[str, ...], name: str, known: str, fix: str = "") -> Problem:
    """`name` is the node type `known` to Scaleway (case and `-`/`_` aside): one type, one spelling, so that
    its figures are never defined twice (docs/config-limits.md)."""
    return Problem(
        key_path(*path),
        name,
        f"is {known} to Scaleway, which compares node types ignoring case, and '-' and '_' alike: "
        f"{fix or 'write ' + known}",
    )


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
    if pool.node_type not in spec.catalog and (known := spec.catalog.spelled(pool.node_type)):
        return [_spelled_otherwise((*path, "node_type"), pool.node_type, known)]
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
    problems += _cold_start_problems(spec, name)
    for key, value in sorted(pool.labels.items()):
        reason = label_key_problem(key) or label_value_problem(value)
        if reason is None and key.startswith(RESERVED_LABEL_PREFIXES):
            reason = f"prefix reserved: {POOL_NAME_LABEL} is set by Kapsule, nvidia.com/ labels by gpu-ci"
        if reason:
            problems.append(Problem(key_path(*path, "labels", key), value, reason))
    return problems


def _cold_start_problems(spec: PlatformSpec, name: str) -> list[Problem]:
    """The cold-start figures in order: median <= p90 <= max (a max alone: >= the median)."""
    pool, path = spec.pools[name], ("pools", name)
    median, p90, most = pool.cold_start_minutes, pool.cold_start_p90_minutes, pool.cold_start_max_minutes
    problems = []
    if p90 is not None and p90 < median:
        problems.append(
            Problem(
                key_path(*path, "cold_start_p90_minutes"), p90, f"is below cold_start_minutes={median} (the median)"
            )
        )
    floor, floor_key = (
        (p90, "cold_start_p90_minutes") if p90 is not None and p90 >= median else (median, "cold_start_minutes")
    )
    if most is not None and most < floor:
        problems.append(Problem(key_path(*path, "cold_start_max_minutes"), most, f"is below {floor_key}={floor}"))
    return problems


def _sharing_problems(spec: PlatformSpec, name: str) -> list[Problem]:
    """Sharing is a GPU pool's (its replicas are checked by the sharing variant itself)."""
    pool = spec.pools[name]
    if pool.gpu_sharing.strategy == "none" or spec.catalog[pool.node_type].is_gpu:
        return []
    path = key_path("pools", name, "gpu_sharing", "strategy")
    return [Problem(path, pool.gpu_sharing.strategy, f"{pool.node_type} has no GPU to share")]


SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
"""Namespaces of the cluster itself: gpu-ci creates the runners' and the placeholders' namespaces, with Pod
Security `restricted` and default-deny policies, so neither may be one of these (an `up` would take it over)."""


def _namespace_problems(spec: PlatformSpec) -> list[Problem]:
    """The namespaces gpu-ci creates are not the cluster's own; the operator's namespace is not the runners'
    (its Pod Security and default-deny policies would break the operator, and its device-plugin ConfigMap
    would sit where jobs run)."""
    created = [(("runner", "namespace"), spec.runner.namespace)]
    if spec.warm_pools():
        created.append((("warm_capacity", "namespace"), spec.warm_capacity.namespace))
    problems = [
        Problem(
            key_path(*path),
            namespace,
            "is one of the cluster's own namespaces: gpu-ci creates this one, with Pod Security restricted and "
            "default-deny network policies that would break what runs there; give it its own",
        )
        for path, namespace in created
        if namespace in SYSTEM_NAMESPACES
    ]
    if problems or spec.gpu_operator.namespace != spec.runner.namespace:
        return problems
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
    if (
        warm.namespace in (spec.runner.namespace, spec.gpu_operator.namespace)
        and warm.namespace not in SYSTEM_NAMESPACES
    ):
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
    """Held slots and warm windows: on a GPU pool; windows within its max_size, not overlapping each other."""
    pool, problems = spec.pools[name], []
    if pool.merge_request_slots and spec.pool_node(name) is not None and not spec.is_gpu_pool(name):
        problems.append(
            Problem(
                key_path("pools", name, "merge_request_slots"),
                pool.merge_request_slots,
                "held slots are for GPU pools: this pool has no runner to hold them (its nodes run no CI job)",
            )
        )
    path = ("pools", name, "warm")
    if pool.warm and not spec.is_gpu_pool(name):
        return [
            *problems,
            Problem(key_path(*path), len(pool.warm), "warm capacity is for GPU pools: this pool's nodes run no CI job"),
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
