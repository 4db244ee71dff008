"""The platform spec: one typed, validated object that every resource and artifact is derived from.

`load_spec(raw)` takes the `platform` object of the stack config (a plain dict) and returns a frozen
`PlatformSpec`, or raises `SpecError` with one `key=value: reason` line per problem. Nothing here
imports Pulumi: the same function serves `pulumi up`, the offline plan and the tests.
"""

from __future__ import annotations

import difflib
from functools import cached_property
from typing import Literal

from pydantic import Field, ValidationError

from infra.catalog import BUILTIN_CATALOG, Catalog, NodeType
from infra.config.base import (
    MAX_NODE_TYPES,
    MAX_POOLS,
    MAX_PROFILES,
    SpecModel,
    is_dns_label,
    label_key_problem,
    label_value_problem,
)
from infra.config.ci import CiSpec, ci_problems
from infra.config.cluster import ClusterSpec
from infra.config.errors import Problem, SpecError, key_path, problems_from_validation, raw_problems
from infra.config.gitlab import GitlabSpec, gitlab_problems
from infra.config.gpu_operator import GpuOperatorSpec
from infra.config.node_types import NodeTypeSpec, ReserveSpec, build_catalog
from infra.config.pools import GPU_TAINT_KEY, POOL_NAME_LABEL, PoolSpec
from infra.config.profiles import ProfileSpec
from infra.config.registry import RegistrySpec
from infra.config.runner import RunnerSpec, runner_problems
from infra.config.workload import WorkloadSpec, workload_problems

RESERVED_LABEL_PREFIXES = ("k8s.scaleway.com/", "kubernetes.io/", "k8s.io/", "node.kubernetes.io/", "nvidia.com/")
"""Label prefixes owned by Kapsule, Kubernetes or the GPU operator (or derived by gpu-ci itself)."""

MIN_ROOT_VOLUME_GB = 20
MIN_GPU_ROOT_VOLUME_GB = 100
DEFAULT_GPU_ROOT_VOLUME_GB = 150
DEFAULT_ROOT_VOLUME_GB = 50


class PlatformSpec(SpecModel):
    """Pools, profiles and the figures behind them; the runner, GitLab, CI and registry sections."""

    region: Literal["fr-par", "nl-ams", "pl-waw"] = "fr-par"
    """Scaleway region of the cluster, its private network, the registry namespace and the cache bucket."""
    cluster: ClusterSpec = ClusterSpec()
    """The Kapsule cluster (or the existing one to adopt), its network and its autoscaler."""
    allocatable_reserve: ReserveSpec = ReserveSpec()
    """What every node keeps for itself: an assumption to measure (docs/runbook.md)."""
    node_types: dict[str, NodeTypeSpec] = Field(default_factory=dict, max_length=MAX_NODE_TYPES)
    """Overrides of the built-in node catalogue by type name, or new types."""
    pools: dict[str, PoolSpec] = Field(max_length=MAX_POOLS)
    """Node pools by name: the name is Kapsule's pool name, the value of the label jobs are routed by."""
    profiles: dict[str, ProfileSpec] = Field(max_length=MAX_PROFILES)
    """Workload profiles by name: which model families run on which GPU pool, and what each job asks."""
    gpu_operator: GpuOperatorSpec = GpuOperatorSpec()
    """Where Scaleway's GPU operator lives, and how gpu-ci hands it the sharing config."""
    workload: WorkloadSpec | None = None
    """Daily CI load, for the cost report only; None leaves the workload part out of the report."""
    gitlab: GitlabSpec
    """The GitLab instance, the training project and the runner's scope."""
    runner: RunnerSpec = RunnerSpec()
    """The runner's own settings; its routing and limits are derived from the pools and profiles."""
    ci: CiSpec = CiSpec()
    """The CI templates committed to the training project, and its CI/CD variables."""
    registry: RegistrySpec = RegistrySpec()
    """The Container Registry namespace of the training images (its endpoint is `REGISTRY`)."""

    @cached_property
    def catalog(self) -> Catalog:
        return build_catalog(self.node_types, self.allocatable_reserve)

    def profiles_on(self, pool: str) -> list[str]:
        return sorted(name for name, profile in self.profiles.items() if profile.pool == pool)

    def pool_node(self, pool_name: str) -> NodeType | None:
        """The catalogue entry of a pool's node type; None for a missing pool or an unknown type."""
        pool = self.pools.get(pool_name)
        return self.catalog[pool.node_type] if pool is not None and pool.node_type in self.catalog else None

    def is_gpu_pool(self, pool_name: str) -> bool:
        node = self.pool_node(pool_name)
        return node is not None and node.is_gpu

    def gpu_pools(self) -> list[str]:
        return sorted(name for name in self.pools if self.is_gpu_pool(name))

    def always_on_pools(self) -> list[str]:
        return sorted(name for name, pool in self.pools.items() if pool.always_on)

    def root_volume_gb(self, pool_name: str) -> int:
        pool = self.pools[pool_name]
        if pool.root_volume_size_gb is not None:
            return pool.root_volume_size_gb
        return DEFAULT_GPU_ROOT_VOLUME_GB if self.catalog[pool.node_type].is_gpu else DEFAULT_ROOT_VOLUME_GB


def load_spec(raw: object) -> PlatformSpec:
    """Parse and validate the `platform` config object; raise SpecError listing every problem.

    What only the derived platform shows (a full node of jobs that does not fit, ambiguous routing) is checked
    by `infra.model.derive`; `infra.model.load_platform` does both."""
    if not isinstance(raw, dict):
        raise SpecError([Problem("platform", raw, "must be an object (set it with pulumi config set --path)")])
    if early := raw_problems(raw):  # numbers too large to even print, objects too large to walk
        raise SpecError(early)
    try:
        spec = PlatformSpec.model_validate(raw)
    except ValidationError as exc:
        raise SpecError(problems_from_validation(exc, raw)) from None
    problems = semantic_problems(spec)
    if problems:
        raise SpecError(problems)
    return spec


def semantic_problems(spec: PlatformSpec) -> list[Problem]:
    """Cross-field rules pydantic cannot see: references, catalogue, zones, sizes, uniqueness."""
    if not spec.profiles:
        return [Problem(key_path("profiles"), {}, "no profile: the runner routes jobs by profile, give at least one")]
    return [
        *_catalog_problems(spec),
        *_cluster_problems(spec),
        *(p for name in sorted(spec.pools) for p in _pool_problems(spec, name)),
        *_always_on_problems(spec),
        *(p for name in sorted(spec.profiles) for p in _profile_problems(spec, name)),
        *_uniqueness_problems(spec),
        *workload_problems(spec),
        *runner_problems(spec),
        *gitlab_problems(spec),
        *ci_problems(spec),
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


__all__ = ["GPU_TAINT_KEY", "PlatformSpec", "SpecError", "load_spec"]
