"""The platform as derived from the spec, once: `derive(spec) -> Platform` (pure: no Pulumi import).

Everything the renderers, the report, check-ci, the simulation and the Pulumi components need is computed
here, after validation and before any resource is registered, and handed to them as immutable data:

- per pool: its node type and allocatable, its GPU sharing, how many jobs a node takes and what binds it, its
  job slots (jobs per node x max_size), labels (the device-plugin config key) and taints, and its runner;
- per profile: its pool, its CI template's tags and variables (`KUBERNETES_*` requests and limits, the pool
  selector), and the runner that takes its jobs;
- the runner fleet: **one runner per GPU pool a profile targets**. Its `concurrent` is its pool's job slots, so
  a job that finds the pool full waits in GitLab's queue (safe: GitLab drops a pending job only after 24 h)
  instead of as a Pending pod that fails after `poll_timeout`. Its node selector is fixed to its pool and its
  allow-list admits that pool only. Tags route jobs to runners: GitLab gives a job to a runner that holds
  **all** of the job's tags, so only the default pool's runner holds the default tags (`runner.tags`), and
  every other runner holds `[*runner.pool_tags, <pool>]`.

Invalid combinations that only show once derived (a full node of jobs that does not fit, ambiguous routing,
a poll timeout past the job timeout) raise `SpecError`, with one `key=value: reason` line each.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING

from infra.capacity import ProfileFit, fit_problems, gpu_memory_per_replica_gb, profile_fit
from infra.catalog import NodeType
from infra.config.errors import Problem, SpecError, format_value, key_path
from infra.config.platform import PlatformSpec, load_spec
from infra.config.pools import (
    GPU_TAINT_EFFECT,
    GPU_TAINT_KEY,
    GPU_TAINT_VALUE,
    POOL_NAME_LABEL,
    GpuSharing,
    PoolSpec,
)
from infra.config.profiles import ProfileSpec
from infra.config.runner import default_pool, manager_pool
from infra.routing import JOB_RESOURCES, POOL_VARIABLE, Quantity, go_quote_meta, magnitude, pool_selector

if TYPE_CHECKING:
    from infra.cost import CostReport

DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
"""Node label the GPU operator's config-manager reads to pick a key of the device-plugin ConfigMap."""
RELEASE_NAME = "gitlab-runner"
"""Helm release of the default pool's runner (the single runner's name before runners were per pool)."""
MAX_RELEASE_NAME = 53
"""Helm refuses longer release names."""
REGISTRY_HOST = "rg.{region}.scw.cloud"


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


GPU_TAINT = Taint(GPU_TAINT_KEY, GPU_TAINT_VALUE, GPU_TAINT_EFFECT)


@dataclass(frozen=True)
class Pool:
    """One node pool as the platform uses it."""

    name: str
    spec: PoolSpec
    node: NodeType
    profiles: tuple[str, ...]
    """Profiles routed here, sorted."""
    jobs_per_node: int
    """Jobs one node holds: the tightest of GPU slots, CPU and memory over its profiles (0: no CI jobs)."""
    binding: str
    """What sets `jobs_per_node` ("GPU replicas", "GPU replicas = CPU", or why there are no jobs)."""
    root_volume_gb: int
    labels: Mapping[str, str]
    """Node labels: the spec's, plus the device-plugin config key on GPU pools."""
    taints: tuple[Taint, ...]
    runner: str | None
    """Name of the runner that sends jobs here (None: no profile targets the pool)."""

    @property
    def node_type(self) -> str:
        return self.spec.node_type

    @property
    def zone(self) -> str:
        return self.spec.zone

    @property
    def min_size(self) -> int:
        return self.spec.min_size

    @property
    def max_size(self) -> int:
        return self.spec.max_size

    @property
    def cold_start_minutes(self) -> int:
        return self.spec.cold_start_minutes

    @property
    def sharing(self) -> GpuSharing:
        return self.spec.gpu_sharing

    @property
    def is_gpu(self) -> bool:
        return self.node.is_gpu

    @property
    def always_on(self) -> bool:
        return self.spec.always_on

    @property
    def slots(self) -> int:
        """Jobs the pool runs at once at max_size: what its runner's `concurrent` is."""
        return self.jobs_per_node * self.spec.max_size

    @property
    def gpu_memory_per_job_gb(self) -> Fraction:
        """One job's share of its GPU's memory: enforced under MPS, nominal under time-slicing."""
        return gpu_memory_per_replica_gb(self.spec, self.node)

    @property
    def device_plugin_key(self) -> str | None:
        """The pool's key in the device-plugin ConfigMap (= its nodes' config label), GPU pools only."""
        return self.name if self.is_gpu else None

    @property
    def eur_per_hour(self) -> Fraction:
        return self.node.eur_per_hour

    @property
    def idle_eur_per_hour(self) -> Fraction:
        """What the pool costs with no job running: its min_size nodes (zero for scale-to-zero pools)."""
        return self.node.eur_per_hour * self.spec.min_size


@dataclass(frozen=True)
class Profile:
    """A class of CI jobs: its pool, its template and what the template carries."""

    name: str
    spec: ProfileSpec
    tags: tuple[str, ...]
    """Tags its CI template carries: exactly one runner, its pool's, holds them all."""
    variables: Mapping[str, str]
    """Its template's variables: the four `KUBERNETES_*` requests and limits, the pool selector outside the
    default pool, then the profile's own."""

    @property
    def pool(self) -> str:
        return self.spec.pool

    @property
    def template(self) -> str:
        return self.spec.template

    @property
    def families(self) -> tuple[str, ...]:
        return self.spec.families

    @property
    def runner(self) -> str:
        return self.spec.pool


@dataclass(frozen=True)
class Runner:
    """One GitLab runner (registration, token Secret, Helm release) serving one GPU pool."""

    pool: str
    tags: tuple[str, ...]
    is_default: bool
    concurrent: int
    """Its pool's job slots at max_size: a job beyond them waits in GitLab, not as a Pending pod."""
    poll_timeout_seconds: int
    """How long a job's pod may wait for a node: the pool's cold start plus the spec's margin."""
    job_timeout_seconds: int
    profiles: tuple[str, ...]
    maxima: Mapping[str, Quantity]
    """The runner's `*_overwrite_max_allowed`: the largest any of its profiles asks for, by field."""
    description: str
    release_name: str
    token_secret_name: str
    resource_prefix: str
    """Prefix of its Pulumi child names: "" for the default pool's runner (names kept from the single-runner
    layout, so an existing stack keeps its registration and release), `<pool>-` for the others."""

    @property
    def name(self) -> str:
        return self.pool

    @property
    def defaults(self) -> Mapping[str, Quantity]:
        """Requests and limits of a job that sets none: the largest of its profiles', by field (its maxima)."""
        return self.maxima

    @property
    def node_selector(self) -> dict[str, str]:
        return {POOL_NAME_LABEL: self.pool}

    @property
    def node_selector_regex(self) -> str:
        """Anchored RE2 pattern for `node_selector_overwrite_allowed`: its own pool only.

        The runner matches it unanchored (Go's `regexp.MatchString`) against the whole `key=value`, so without
        `^...$` `x=k8s.scaleway.com/pool-name=ci-training` would pass."""
        return f"^{go_quote_meta(POOL_NAME_LABEL)}=({go_quote_meta(self.pool)})$"

    def admits_node_selector(self, value: str) -> bool:
        """Whether the runner accepts `value` in a `KUBERNETES_NODE_SELECTOR_*` variable (Go's `$`, not Python's,
        which also matches before a final newline: hence `\\Z`)."""
        return re.search(self.node_selector_regex.removesuffix("$") + r"\Z", value) is not None

    def takes(self, tags: Iterable[str]) -> bool:
        """GitLab hands a job to a runner that holds all of its tags; these runners take no untagged job."""
        wanted = set(tags)
        return bool(wanted) and wanted <= set(self.tags)


@dataclass(frozen=True)
class Platform:
    """Everything the platform is, derived from one validated spec."""

    spec: PlatformSpec
    pools: Mapping[str, Pool]
    profiles: Mapping[str, Profile]
    runners: Mapping[str, Runner]
    """By pool name, sorted: one per GPU pool some profile targets."""
    default_pool: str
    manager_pool: str
    warnings: tuple[Problem, ...] = field(default=())
    """Valid, but worth a look before `up` (e.g. memory limits that overcommit a node)."""

    @cached_property
    def cost(self) -> CostReport | None:
        """The simulated day of the spec's workload (None without one), computed on first use, then kept:
        the stack outputs, the report and the artifacts all read this one run."""
        from infra.cost import cost_report  # noqa: PLC0415 - commands that cost no day do not load the simulation

        return cost_report(self)

    @property
    def default_runner(self) -> Runner:
        return self.runners[self.default_pool]

    @property
    def gpu_pools(self) -> list[str]:
        return self.spec.gpu_pools()

    @property
    def registry_endpoint(self) -> str:
        """`rg.<region>.scw.cloud/<namespace>`: known from the spec, whether the namespace is created or adopted."""
        return f"{REGISTRY_HOST.format(region=self.spec.region)}/{self.spec.registry.namespace}"

    @property
    def allowed_images(self) -> tuple[str, ...]:
        """Images and services job pods may use: the platform registry's, the default image, the configured."""
        registry = self.registry_endpoint
        return tuple(
            dict.fromkeys((f"{registry}/*", f"{registry}/**/*", self.spec.runner.default_image))
            | dict.fromkeys(self.spec.runner.allowed_images)
        )

    def runners_taking(self, tags: Iterable[str]) -> list[Runner]:
        """The runners GitLab could give a job with these tags to (none for an untagged job)."""
        wanted = tuple(tags)
        return [runner for runner in self.runners.values() if runner.takes(wanted)]


def load_platform(raw: object) -> Platform:
    """Validate the `platform` config object and derive the platform; SpecError lists every problem."""
    return derive(load_spec(raw))


def derive(spec: PlatformSpec) -> Platform:
    """The platform of a spec that `load_spec` accepted; raises SpecError where only the derived model shows
    the problem (fit of a full node, routing, timeouts)."""
    fits = {
        name: profile_fit(name, p, spec.pools[p.pool], spec.catalog[spec.pools[p.pool].node_type])
        for name, p in sorted(spec.profiles.items())
    }
    checks = fit_problems(spec)
    default, manager = default_pool(spec), manager_pool(spec)
    if default is None or manager is None:  # load_spec reports both; guards direct callers
        raise SpecError([Problem(key_path("runner"), None, "no default or manager pool: validate with load_spec")])
    pools = {name: _pool(spec, name, [fits[p] for p in spec.profiles_on(name)]) for name in sorted(spec.pools)}
    runners = {name: _runner(spec, pools[name], default) for name in sorted(pools) if pools[name].runner}
    profiles = {name: _profile(spec, name, default) for name in sorted(spec.profiles)}
    problems = [p for p in checks if p.severity == "error"]
    if not problems:  # a pool without slots follows from a fit error: say the cause only
        problems = _runner_problems(spec, pools, runners) + _routing_problems(spec, profiles, runners, default)
    if problems:
        raise SpecError(problems)
    warnings = [p for p in checks if p.severity == "warning"]
    warnings += _timeout_warnings(spec, pools) + _policy_warnings(spec, pools, runners)
    return Platform(
        spec=spec,
        pools=pools,
        profiles=profiles,
        runners=runners,
        default_pool=default,
        manager_pool=manager,
        warnings=tuple(warnings),
    )


POLICY_MIN_POLL_TIMEOUT_SECONDS = 900
"""The policy pack's default `min_poll_timeout_seconds` (policy/policies.py, runner-poll-timeout-covers-cold-start)."""


def _policy_warnings(spec: PlatformSpec, pools: dict[str, Pool], runners: dict[str, Runner]) -> list[Problem]:
    """Values the spec allows but the policy pack refuses with its default config: said at their key, so a
    green plan is a green preview (the pack's config can allow them: policy/README.md)."""
    warnings = []
    for name, pool in pools.items():
        if pool.is_gpu and pool.min_size >= 1:
            warnings.append(
                Problem(
                    key_path("pools", name, "min_size"),
                    pool.min_size,
                    "an always-on GPU pool bills around the clock: the policy pack (gpu-pool-scales-to-zero) refuses "
                    "it unless its config lists the pool in always_on_pools",
                    "warning",
                )
            )
    for name, runner in runners.items():
        if runner.poll_timeout_seconds < POLICY_MIN_POLL_TIMEOUT_SECONDS:
            warnings.append(
                Problem(
                    key_path("pools", name, "cold_start_minutes"),
                    pools[name].cold_start_minutes,
                    f"+ poll_timeout_margin_minutes={spec.runner.poll_timeout_margin_minutes} gives a poll_timeout of "
                    f"{runner.poll_timeout_seconds} s, below the policy pack's {POLICY_MIN_POLL_TIMEOUT_SECONDS} s "
                    "(runner-poll-timeout-covers-cold-start): a GPU node from zero takes longer",
                    "warning",
                )
            )
    if spec.registry.is_public and not spec.registry.existing:
        warnings.append(
            Problem(
                key_path("registry", "is_public"),
                True,
                "the policy pack (registry-namespace-private) refuses a public namespace unless its config lists it "
                "in allowed_public_namespaces",
                "warning",
            )
        )
    return warnings


def _timeout_warnings(spec: PlatformSpec, pools: dict[str, Pool]) -> list[Problem]:
    """A job's timeout counts its wait for a node: a workload job as long as the timeout minus a cold start fails."""
    if spec.workload is None:
        return []
    warnings = []
    for name, load in sorted(spec.workload.profiles.items()):
        pool = pools.get(spec.profiles[name].pool) if name in spec.profiles else None
        if pool is None:
            continue
        if 60 * (pool.cold_start_minutes + load.minutes_per_job) >= spec.runner.job_timeout_seconds:
            warnings.append(
                Problem(
                    key_path("workload", "profiles", name, "minutes_per_job"),
                    load.minutes_per_job,
                    f"+ the pool's {pool.cold_start_minutes}-min cold start reaches the runner's job timeout "
                    f"{spec.runner.job_timeout}, which counts the wait for a node: such jobs fail",
                    "warning",
                )
            )
    return warnings


def _pool(spec: PlatformSpec, name: str, fits: list[ProfileFit]) -> Pool:
    pool = spec.pools[name]
    node = spec.catalog[pool.node_type]
    if fits:
        tightest = min(fits, key=lambda f: f.jobs_per_node)
        jobs, binding = tightest.jobs_per_node, tightest.binding
    else:
        jobs, binding = 0, "no profile routed here" if node.is_gpu else "no CI jobs (system pool)"
    labels = dict(pool.labels)
    if node.is_gpu:
        labels[DEVICE_PLUGIN_CONFIG_LABEL] = name
    return Pool(
        name=name,
        spec=pool,
        node=node,
        profiles=tuple(f.profile for f in fits),
        jobs_per_node=jobs,
        binding=binding,
        root_volume_gb=spec.root_volume_gb(name),
        labels=labels,
        taints=(GPU_TAINT,) if node.is_gpu else (),
        runner=name if fits and node.is_gpu else None,
    )


def _largest(profiles: list[ProfileSpec], name: str) -> Quantity:
    return max((getattr(p, name) for p in profiles), key=magnitude)


def _runner(spec: PlatformSpec, pool: Pool, default: str) -> Runner:
    is_default = pool.name == default
    tags = spec.runner.tags if is_default else spec.runner.pool_tags
    own = [spec.profiles[name] for name in pool.profiles]
    sizes: dict[str, Quantity] = {r.field: _largest(own, r.field) for r in JOB_RESOURCES}
    release = RELEASE_NAME if is_default else f"{RELEASE_NAME}-{pool.name}"
    return Runner(
        pool=pool.name,
        tags=tuple(dict.fromkeys((*tags, pool.name))),
        is_default=is_default,
        concurrent=pool.slots,
        poll_timeout_seconds=60 * (pool.cold_start_minutes + spec.runner.poll_timeout_margin_minutes),
        job_timeout_seconds=spec.runner.job_timeout_seconds,
        profiles=pool.profiles,
        maxima=sizes,
        description=f"{spec.runner.description} - pool {pool.name}",
        release_name=release,
        token_secret_name=f"{release}-token",
        resource_prefix="" if is_default else f"{pool.name}-",
    )


def _profile(spec: PlatformSpec, name: str, default: str) -> Profile:
    profile = spec.profiles[name]
    on_default = profile.pool == default
    variables = {r.variable: getattr(profile, r.field).text for r in JOB_RESOURCES}
    if not on_default:
        variables[POOL_VARIABLE] = pool_selector(profile.pool)
    variables.update(profile.variables)
    tags = spec.runner.tags if on_default else (*spec.runner.pool_tags, profile.pool)
    return Profile(name=name, spec=profile, tags=tuple(dict.fromkeys(tags)), variables=variables)


def _runner_problems(spec: PlatformSpec, pools: dict[str, Pool], runners: dict[str, Runner]) -> list[Problem]:
    """Each runner has slots, a Helm release name Helm accepts, and a poll timeout inside the job timeout."""
    problems = []
    for name, runner in runners.items():
        if runner.concurrent < 1:
            problems.append(
                Problem(
                    key_path("pools", name, "max_size"),
                    pools[name].max_size,
                    "the pool has no job slot: its runner could take no job",
                )
            )
        if len(runner.release_name) > MAX_RELEASE_NAME:
            problems.append(
                Problem(
                    key_path("pools", name),
                    name,
                    f"its runner's Helm release {runner.release_name!r} would be longer than "
                    f"{MAX_RELEASE_NAME} characters: shorten the pool name",
                )
            )
        if runner.poll_timeout_seconds >= runner.job_timeout_seconds:
            problems.append(
                Problem(
                    key_path("pools", name, "cold_start_minutes"),
                    pools[name].cold_start_minutes,
                    f"+ poll_timeout_margin_minutes={spec.runner.poll_timeout_margin_minutes} "
                    f"reaches the job timeout {spec.runner.job_timeout}: a job would time out "
                    "waiting for its node",
                )
            )
    return problems


def _routing_problems(
    spec: PlatformSpec, profiles: dict[str, Profile], runners: dict[str, Runner], default: str
) -> list[Problem]:
    """Each template's tags (and the default tags) reach exactly one runner: its pool's."""
    wanted = {f"platform.runner.tags ({format_value(list(spec.runner.tags))})": (spec.runner.tags, default)}
    for name, profile in profiles.items():
        wanted[f"{profile.template} of profile {name}"] = (profile.tags, profile.pool)
    problems = []
    fleet = list(runners.values())
    for what, (tags, pool) in wanted.items():
        takers = [r.pool for r in fleet if r.takes(tags)]
        if takers == [pool]:
            continue
        others = [p for p in takers if p != pool]
        reason = (
            f"jobs of {what} would also be taken by the runner(s) of {', '.join(others)}: a job's tags must be held "
            f"by one runner only (pool_tags must not hold all of runner.tags, and no pool may be named after a tag)"
            if others
            else f"no runner would take the jobs of {what}"
        )
        problems.append(Problem(key_path("runner", "pool_tags"), list(spec.runner.pool_tags), reason))
    return problems
