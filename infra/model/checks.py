"""The derived checks: what only shows once pools, runners and templates are derived (pure).

The second of gpu-ci's two homes of refusal (the first, `infra.config.checks`, is the spec's own rules).
`derive` raises the errors as one `SpecError` and keeps the warnings on `Platform.warnings`. Checked here:

Errors
- fit: a full node of a profile's jobs fits its node's allocatable CPU and memory by requests, and one job's
  limits fit the node at all; a job's stated GPU memory fits its GPU (and, under MPS, its replica's share);
- quota: all pools at max_size together within gpu-ci's node quota;
- the manager pool holds one runner manager per runner after its reserve;
- runners: each has a job slot, a Helm release name Helm accepts, a poll timeout inside the job timeout;
- a GPU pool no profile targets (dead config `up` would create and protect);
- held merge-request slots leave the shared runner at least one;
- routing: each template's tags (and the default tags), expanded for every pipeline source, reach only their
  pool's runners (`infra.model.routes`);
- timeouts: every attempt's job timeout holds its poll_timeout (`infra.model.attempts`) plus the pool's longest
  job as it runs on a full node.
Warnings
- fit: memory limits that overcommit a full node; VRAM that time-sliced jobs could oversubscribe;
- values the policy pack refuses with its default config (an always-on GPU pool, or warm windows over the
  whole week: one by another key; a poll timeout below the pack's floor; a public registry namespace; a secret
  CI variable left unprotected or unmasked), said at their key so a green plan is a green preview: each the
  verdict of the pack rule's one definition (`policy/policies/definitions.py`), named in `Problem.policy`,
  which `recommend` refuses by; a registry namespace left unprotected;
- upgrades (`infra.model.upgrades`): the manager pool upgrading without surge, the maintenance window in the
  workload's hours.
When a fit error is found, the runner and routing checks are skipped: a pool without slots follows from it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Literal

from infra.capacity import MANAGER_CPU_REQUEST, MANAGER_MEMORY_REQUEST, format_gb, gpu_memory_per_replica_gb, gpu_slots
from infra.config.base import MAX_POOL_NODES
from infra.config.errors import Problem, format_value, key_path
from infra.config.platform import PlatformSpec
from infra.config.schedule import MINUTES_PER_WEEK
from infra.model.attempts import ATTEMPTS
from infra.model.pools import Pool
from infra.model.profiles import Profile
from infra.model.routes import PIPELINE_SOURCES, expand, expands_per_source
from infra.model.runners import MAX_RELEASE_NAME, Runner
from infra.model.timeouts import longest_job
from infra.model.upgrades import upgrade_warnings
from infra.quantity import exact_decimal, format_gib
from policy.policies import definitions as rules

if TYPE_CHECKING:
    from infra.catalog import NodeType
    from infra.config.pools import PoolSpec
    from infra.config.profiles import ProfileSpec


def derived_problems(
    spec: PlatformSpec,
    pools: Mapping[str, Pool],
    profiles: Mapping[str, Profile],
    runners: Mapping[str, Runner],
    default: str,
) -> tuple[list[Problem], list[Problem]]:
    """(errors, warnings) of the derived platform, in the order of the module docstring."""
    checks = fit_problems(spec)
    errors = [p for p in checks if p.severity == "error"]
    if not errors:  # a pool without slots follows from a fit error: say the cause only
        errors = _runner_problems(spec, pools, runners) + _routing_problems(spec, profiles, runners, default)
        errors += _timeout_problems(spec, pools, runners)
    warnings = [p for p in checks if p.severity == "warning"]
    warnings += _policy_warnings(spec, pools, runners)
    warnings += upgrade_warnings(spec, pools)
    return errors, warnings


def fit_problems(spec: PlatformSpec) -> list[Problem]:
    """Errors where a full node of jobs does not fit by requests; warnings where limits overcommit."""
    problems: list[Problem] = []
    for name, profile in sorted(spec.profiles.items()):
        node = spec.pool_node(profile.pool)
        if node is None or not node.is_gpu:
            continue  # reported as a reference error
        pool = spec.pools[profile.pool]
        slots = gpu_slots(pool, node)
        # (key, text, per job, allocatable, shown as, severity when n jobs do not fit; None: not checked).
        # One job above the node is an error for limits too: the limit becomes the runner's maximum, and a
        # job could never use it. n CPU limits above the node only throttle; n memory limits risk OOM.
        checks: tuple[tuple[str, str, int, int, Callable[[int], str], Literal["error", "warning"] | None], ...] = (
            (
                "cpu_request",
                profile.cpu_request.text,
                profile.cpu_request.millicores,
                node.allocatable_millicores,
                _millicores,
                "error",
            ),
            (
                "cpu_limit",
                profile.cpu_limit.text,
                profile.cpu_limit.millicores,
                node.allocatable_millicores,
                _millicores,
                None,
            ),
            (
                "memory_request",
                profile.memory_request.text,
                profile.memory_request.bytes,
                node.allocatable_memory_bytes,
                _gib,
                "error",
            ),
            (
                "memory_limit",
                profile.memory_limit.text,
                profile.memory_limit.bytes,
                node.allocatable_memory_bytes,
                _gib,
                "warning",
            ),
        )
        too_large: set[str] = set()
        for key, text, per_job, allocatable, show, severity in checks:
            where = f"one {pool.node_type} node's allocatable {show(max(allocatable, 0))}"
            resource = key.split("_")[0]
            if per_job > allocatable:
                if resource not in too_large:  # a limit above a request that is already too large: said once
                    problems.append(Problem(key_path("profiles", name, key), text, f"is larger than {where}"))
                too_large.add(resource)
            elif severity is not None and slots * per_job > allocatable:
                verb = "exceeds" if severity == "error" else "overcommits"
                reason = f"x {slots} jobs per node = {show(slots * per_job)} {verb} {where}"
                reason += "; lower it or the pool's replicas" if severity == "error" else " (OOM if all hit the limit)"
                problems.append(Problem(key_path("profiles", name, key), text, reason, severity))
        problems += _gpu_memory_problems(name, profile, pool, node)
    return problems + _quota_problems(spec) + _manager_problems(spec) + _idle_gpu_pool_problems(spec)


def _quota_problems(spec: PlatformSpec) -> list[Problem]:
    """All pools at max_size together stay within MAX_POOL_NODES (each pool alone is bounded by its field)."""
    total = sum(pool.max_size for pool in spec.pools.values())
    if total <= MAX_POOL_NODES:
        return []
    sizes = {name: pool.max_size for name, pool in sorted(spec.pools.items())}
    return [
        Problem(
            key_path("pools"),
            sizes,
            f"{total} nodes at max_size in all, above gpu-ci's quota of {MAX_POOL_NODES} (docs/config-limits.md)",
        )
    ]


def _manager_problems(spec: PlatformSpec) -> list[Problem]:
    """The manager pool must hold every runner manager (one per GPU pool a profile targets) after the node's
    reserve: PLAY2-NANO (4 GiB) minus the default 4Gi reserve holds none. The managers' requests are the ones
    their Helm values set (`MANAGER_*_REQUEST`: the chart's default resources are empty)."""
    name = spec.manager_pool()
    node = spec.pool_node(name) if name is not None else None
    if name is None or node is None or node.is_gpu:
        return []  # reported by the runner's checks
    managers = max(1, sum(spec.is_gpu_pool(pool) for pool in spec.targeted_pools()))
    cpu, memory = MANAGER_CPU_REQUEST.millicores * managers, MANAGER_MEMORY_REQUEST.bytes * managers
    short = [
        f"{what} {shown(max(have, 0))} < {shown(need)}"
        for what, have, need, shown in (
            ("CPU", node.allocatable_millicores, cpu, _millicores),
            ("memory", node.allocatable_memory_bytes, memory, _mib),
        )
        if have < need
    ]
    if not short:
        return []
    each = f"{MANAGER_CPU_REQUEST}, {MANAGER_MEMORY_REQUEST} each"
    return [
        Problem(
            key_path("pools", name, "node_type"),
            spec.pools[name].node_type,
            f"cannot hold the {managers} runner manager{'s' if managers > 1 else ''} ({each}): allocatable "
            f"{', '.join(short)} after the node's reserve; pick a larger type or lower allocatable_reserve",
        )
    ]


def _idle_gpu_pool_problems(spec: PlatformSpec) -> list[Problem]:
    """A GPU pool no profile targets takes no CI job: dead config (a rename, a copy) that `up` would create
    and protect."""
    targeted = spec.targeted_pools()
    return [
        Problem(
            key_path("pools", name),
            spec.pools[name].node_type,
            "no profile's runner reaches this GPU pool: no CI job would run on it, yet `pulumi up` would create "
            "and protect it (point a profile's pool at it, or remove it)",
        )
        for name in spec.gpu_pools()
        if name not in targeted
    ]


def _gpu_memory_problems(name: str, profile: ProfileSpec, pool: PoolSpec, node: NodeType) -> list[Problem]:
    """A job's stated VRAM need against its GPU: MPS caps each replica at total / replicas (an error when the
    need is above it); time-slicing does not isolate memory, so jobs that could not all fit may OOM each other."""
    if profile.gpu_memory_gb is None or not node.gpu_memory_gb:
        return []
    need = exact_decimal(profile.gpu_memory_gb)
    shown = int(need) if need.denominator == 1 else profile.gpu_memory_gb  # 16, as written, not 16.0
    path = key_path("profiles", name, "gpu_memory_gb")
    sharing, total = pool.gpu_sharing, node.gpu_memory_gb
    replicas = sharing.replicas_per_gpu
    gpu = f"one {pool.node_type} GPU's {total} GB"
    if need > total:
        return [Problem(path, shown, f"is more than {gpu}")]
    share = gpu_memory_per_replica_gb(pool, node)
    if sharing.isolates_memory and replicas > 1 and need > share:
        reason = (
            f"is more than one MPS replica's share of {gpu} / {replicas} = {format_gb(share)}; "
            "lower the pool's replicas or use time-slicing"
        )
        return [Problem(path, shown, reason)]
    if not sharing.isolates_memory and need * replicas > total:
        reason = (
            f"x {replicas} jobs per GPU = {format_gb(need * replicas)} exceeds {gpu}: "
            "time-slicing does not isolate GPU memory, so jobs may OOM each other"
        )
        return [Problem(path, shown, reason, "warning")]
    return []


SECRET_KNOB_OFF = {
    "protected": "a secret every branch's jobs can read: anyone who can push a branch can print it (the policy pack, "
    f"{rules.CI_SECRET_VARIABLES_MASKED}, refuses it unless its config lists it in allow_unprotected)",
    "masked": "a secret GitLab does not hide in job logs: a job that prints it shows it to whoever reads the log (the "
    f"policy pack, {rules.CI_SECRET_VARIABLES_MASKED}, refuses it)",
}
"""Why a secret CI variable's `protected` or `masked` set off is a warning."""


def _policy_warnings(spec: PlatformSpec, pools: Mapping[str, Pool], runners: Mapping[str, Runner]) -> list[Problem]:
    """Values the spec allows but the policy pack refuses with its default config, and guards set off: said at
    their key, so a green plan is a green preview (the pack's config can allow them: policy/README.md). Each
    verdict is the pack rule's own (`policy/policies/definitions.py`: its predicate and default), and names it."""
    warnings = []
    for name, pool in pools.items():
        if pool.is_gpu and rules.keeps_gpu_nodes_up(pool.min_size, name):
            warnings.append(
                Problem(
                    key_path("pools", name, "min_size"),
                    pool.min_size,
                    f"an always-on GPU pool bills around the clock: the policy pack ({rules.GPU_POOL_SCALES_TO_ZERO}) "
                    "refuses it unless its config lists the pool in always_on_pools",
                    "warning",
                    rules.GPU_POOL_SCALES_TO_ZERO,
                )
            )
        elif pool.is_gpu and rules.keeps_gpu_nodes_up(int(_warm_all_week(spec, name)), name):
            warnings.append(
                Problem(
                    key_path("pools", name, "warm"),
                    len(spec.pools[name].warm),
                    "keeps nodes up every hour of the week: an always-on GPU pool (min_size >= 1, which the policy "
                    "pack refuses) by another key, billed as one; warm the hours people wait in",
                    "warning",
                    rules.GPU_POOL_SCALES_TO_ZERO,
                )
            )
    for runner in runners.values():
        if rules.poll_timeout_too_short(runner.poll_timeout_seconds) and not runner.merge_requests_only:
            warnings.append(
                Problem(
                    key_path("runner", "node_wait_tolerance"),
                    spec.runner.node_wait_tolerance,
                    f"gives pool {runner.pool} a poll_timeout of {runner.poll_timeout_seconds} s, below the policy "
                    f"pack's {rules.DEFAULT_MIN_POLL_TIMEOUT_SECONDS} s ({rules.RUNNER_POLL_TIMEOUT_COVERS_COLD_START}"
                    "): a GPU node from zero takes longer",
                    "warning",
                    rules.RUNNER_POLL_TIMEOUT_COVERS_COLD_START,
                )
            )
    if rules.namespace_public(spec.registry.is_public, spec.registry.namespace) and not spec.registry.existing:
        warnings.append(
            Problem(
                key_path("registry", "is_public"),
                True,
                f"the policy pack ({rules.REGISTRY_NAMESPACE_PRIVATE}) refuses a public namespace unless its config "
                "lists it in allowed_public_namespaces",
                "warning",
                rules.REGISTRY_NAMESPACE_PRIVATE,
            )
        )
    for variable_name, variable in sorted(spec.ci.variables.items()):
        off = rules.unguarded_knobs(variable_name, variable.effective_masked, variable.effective_protected)
        warnings += [
            Problem(
                key_path("ci", "variables", variable_name, knob),
                False,
                SECRET_KNOB_OFF[knob],
                "warning",
                rules.CI_SECRET_VARIABLES_MASKED,
            )
            for knob in off
            if variable.is_secret
        ]
    if not spec.registry.protect and not spec.registry.existing:
        warnings.append(
            Problem(
                key_path("registry", "protect"),
                False,
                "an unprotected namespace is deleted, with every training image in it, by a `pulumi up` that drops "
                "it or a `pulumi destroy`: set it back to true once the change that needed it is done",
                "warning",
            )
        )
    return warnings


def _warm_all_week(spec: PlatformSpec, pool: str) -> bool:
    """Whether the pool's warm windows (which the spec keeps from overlapping) cover every minute of the week."""
    covered = sum(end - start for window in spec.pools[pool].warm for start, end in window.intervals())
    return covered >= MINUTES_PER_WEEK


def _timeout_problems(spec: PlatformSpec, pools: Mapping[str, Pool], runners: Mapping[str, Runner]) -> list[Problem]:
    """Every attempt's job timeout (it counts the wait for a node) holds its poll_timeout plus the pool's
    longest job; else the tolerance, the timeout and the jobs do not fit together (said once, for the pool
    that needs the most)."""
    needs = []
    for runner in runners.values():
        if runner.merge_requests_only:
            continue  # the same poll_timeout and jobs as the pool's shared runner
        pool = pools[runner.pool]
        job = longest_job(spec, pool)
        longest, key = job.minutes, job.key
        poll = runner.poll_timeout_seconds // 60
        if 60 * (poll + longest) >= runner.job_timeout_seconds:
            needs.append((poll + longest, pool, poll, longest, key))
    if not needs:
        return []
    _, pool, poll, longest, key = max(needs, key=lambda need: need[0])
    jobs = f" + its longest job {longest:.0f} min (from platform.{key}, on a full node)" if key else ""
    return [
        Problem(
            key_path("runner", "job_timeout"),
            spec.runner.job_timeout,
            f"cannot hold an attempt on pool {pool.name}: its poll_timeout {poll} min (runner.node_wait_tolerance="
            f"{spec.runner.node_wait_tolerance} over {ATTEMPTS} attempts, cold start {_cold_start_text(pool)} "
            f"min){jobs}; raise the timeout to more than {poll + math.ceil(longest)} min, or lower the tolerance",
        )
    ]


def _cold_start_text(pool: Pool) -> str:
    """`15` or `20 (its worst figure; median 15)`: the boot the poll_timeout is derived from."""
    worst = pool.worst_cold_start_minutes
    return (
        str(worst)
        if worst == pool.cold_start_minutes
        else f"{worst} (its worst figure; median {pool.cold_start_minutes})"
    )


def _runner_problems(spec: PlatformSpec, pools: Mapping[str, Pool], runners: Mapping[str, Runner]) -> list[Problem]:
    """Each runner has slots (held slots leave the shared runner some), and a Helm release name Helm accepts."""
    problems = []
    for runner in runners.values():
        pool = pools[runner.pool]
        if runner.concurrent < 1 and not runner.merge_requests_only and pool.spec.merge_request_slots:
            problems.append(
                Problem(
                    key_path("pools", pool.name, "merge_request_slots"),
                    pool.spec.merge_request_slots,
                    f"holds every one of the pool's {pool.slots} slots: batch jobs would find none (hold fewer, or "
                    "raise max_size or the GPU sharing replicas)",
                )
            )
        elif runner.concurrent < 1:
            problems.append(
                Problem(
                    key_path("pools", pool.name, "max_size"),
                    pool.max_size,
                    "the pool has no job slot: its runner could take no job",
                )
            )
        if len(runner.release_name) > MAX_RELEASE_NAME:
            problems.append(
                Problem(
                    key_path("pools", pool.name),
                    pool.name,
                    f"its runner's Helm release {runner.release_name!r} would be longer than "
                    f"{MAX_RELEASE_NAME} characters: shorten the pool name",
                )
            )
    return problems


def _routing_problems(
    spec: PlatformSpec, profiles: Mapping[str, Profile], runners: Mapping[str, Runner], default: str
) -> list[Problem]:
    """Each template's tags (and the default tags), as GitLab expands them in a pipeline of any source, reach
    only its pool's runners, and at least one."""
    wanted = {f"platform.runner.tags ({format_value(list(spec.runner.tags))})": (spec.runner.tags, default)}
    for name, profile in profiles.items():
        wanted[f"{profile.template} of profile {name}"] = (profile.tags, profile.pool)
    problems = []
    fleet = list(runners.values())
    for what, (tags, pool) in wanted.items():
        sources = PIPELINE_SOURCES if expands_per_source(tags) else (None,)
        for source in sources:
            expanded = expand(tags, source) if source else tags
            takers = {r.pool for r in fleet if r.takes(expanded)}
            if takers == {pool}:
                continue
            others = sorted(takers - {pool})
            jobs = f"jobs of {what}" + (f" in {source} pipelines" if source else "")
            reason = (
                f"{jobs} would also be taken by the runner(s) of {', '.join(others)}: a job's tags must be held by "
                "its pool's runners only (pool_tags must not hold all of runner.tags, and no pool may be named "
                "after a tag)"
                if others
                else f"no runner would take the {jobs}"
            )
            problems.append(Problem(key_path("runner", "pool_tags"), list(spec.runner.pool_tags), reason))
            break
    return problems


def _millicores(value: int) -> str:
    return f"{value}m"


def _mib(value: int) -> str:
    return f"{value // 2**20}Mi"


def _gib(value: int) -> str:
    return format_gib(Fraction(value, 2**30))
