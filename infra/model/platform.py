"""The platform as derived from the spec, once: `derive(spec) -> Platform` (pure: no Pulumi import).

Everything the renderers, the report, check-ci, the simulation and the Pulumi components need is computed
here, after validation and before any resource is registered, and handed to them as immutable data: the pools
(`infra.model.pools`: jobs per node, job slots, labels, taints), the profiles (`infra.model.profiles`: their
templates' tags and variables) and the runner fleet (`infra.model.runners`: one runner per GPU pool a profile
targets). What only shows once these are derived is refused or warned by `infra.model.checks`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from infra.capacity import profile_fit
from infra.config.errors import Problem, SpecError, key_path
from infra.config.load import load_spec
from infra.config.platform import PlatformSpec
from infra.model.checks import derived_problems
from infra.model.pools import Pool, derive_pool
from infra.model.profiles import Profile, derive_profile
from infra.model.runners import Runner, derive_runners
from infra.model.warm import JOB_CLASS, WarmPool, derive_warm, priority_class_name

REGISTRY_HOST = "rg.{region}.scw.cloud"


@dataclass(frozen=True)
class Platform:
    """Everything the platform is, derived from one validated spec."""

    spec: PlatformSpec
    pools: Mapping[str, Pool]
    profiles: Mapping[str, Profile]
    runners: Mapping[str, Runner]
    """By runner name, sorted: per GPU pool some profile targets, its shared runner (named as the pool) and
    the runner of its held merge-request slots (`<pool>-mr`) if it has some."""
    default_pool: str
    manager_pool: str
    warm: tuple[WarmPool, ...] = ()
    """Pools with warm windows: their placeholders and the CronJobs that scale them (`infra.model.warm`)."""
    warnings: tuple[Problem, ...] = field(default=())
    """Valid, but worth a look before `up` (e.g. memory limits that overcommit a node)."""

    @property
    def default_runner(self) -> Runner:
        return self.runners[self.default_pool]

    @property
    def gpu_pools(self) -> list[str]:
        return self.spec.gpu_pools()

    @property
    def gpu_nodes_at_once(self) -> dict[str, int]:
        """GPU nodes the spec can ask Scaleway for at once (every GPU pool at max_size, plus its upgrade surge), by
        node type: what Scaleway's GPU quotas, set per Organization, must allow."""
        nodes: dict[str, int] = {}
        for pool in self.pools.values():
            if pool.is_gpu:
                nodes[pool.node_type] = nodes.get(pool.node_type, 0) + self._most_nodes(pool)
        return dict(sorted(nodes.items()))

    @property
    def gpus_at_once(self) -> int:
        """GPUs on those nodes."""
        return sum(self._most_nodes(pool) * pool.node.gpus for pool in self.pools.values() if pool.is_gpu)

    @staticmethod
    def _most_nodes(pool: Pool) -> int:
        return pool.max_size + pool.spec.effective_upgrade_policy.max_surge

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

    def job_priority_class(self, runner: Runner) -> str | None:
        """The PriorityClass of the runner's job pods: the jobs' class on a pool with warm windows (above the
        placeholders', so a job preempts one), none elsewhere."""
        if not any(warm.pool == runner.pool for warm in self.warm):
            return None
        return priority_class_name(JOB_CLASS, self.spec.warm_capacity.job_priority)

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
    default, manager = spec.default_pool(), spec.manager_pool()
    if default is None or manager is None:  # load_spec reports both; guards direct callers
        raise SpecError([Problem(key_path("runner"), None, "no default or manager pool: validate with load_spec")])
    pools = {name: derive_pool(spec, name, [fits[p] for p in spec.profiles_on(name)]) for name in sorted(spec.pools)}
    runners = {
        runner.name: runner
        for name in sorted(pools)
        if pools[name].runner
        for runner in derive_runners(spec, pools[name], default)
    }
    profiles = {name: derive_profile(spec, name, default) for name in sorted(spec.profiles)}
    problems, warnings = derived_problems(spec, pools, profiles, runners, default)
    if problems:
        raise SpecError(problems)
    return Platform(
        spec=spec,
        pools=pools,
        profiles=profiles,
        runners=runners,
        default_pool=default,
        manager_pool=manager,
        warm=derive_warm(spec, pools),
        warnings=tuple(warnings),
    )
