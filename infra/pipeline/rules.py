"""The platform's rules on a resolved pipeline (pure: no Pulumi import).

Routing is by tags, as GitLab routes: a job goes to a runner holding all of its tags.
- a job no runner of the platform takes is a violation, unless its tags share nothing with any runner's
  (then it is clearly not a platform job: skipped, like an untagged job);
- a job that runners of two different pools could take is a violation (either may pick it up);
- every train/hyperopt job of a model family (`train-validate-dqn`, `hyperopt-tft`: a name token that
  is a family of a profile) must extend (or `!reference`) its profile's template, be taken by its
  profile's runner and, if it overrides the pool, stay on the profile's pool;
- on the runner that takes it, no job may set a `KUBERNETES_*` request or limit above that runner's
  maximum (the job would fail, not be clamped), a request above its limit (Kubernetes refuses the pod),
  a node selector that runner refuses (`ci-training-evil` is not `ci-training`), or an image or service
  outside its `allowed_images`/`allowed_services` (`images`);
- a job that extends a profile's template keeps its `retry:` (`retries`) and may not lower its `timeout:` (`timeouts`).
Tags are routed once GitLab has expanded the variables in them and parsed the list (`tags`): a tag that still
names a variable GitLab alone knows is a warning, one that GitLab leaves as a literal `$VAR` (a variable defined
from another) is a violation: no runner takes the job. A job is checked with its variables from every source, once
per rule of `workflow: rules:` and `rules:` that may apply (`environment`).
A violation in an inherited value is reported once, where the value is written, with the jobs it breaks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from infra.config.checks.jobs import guard_variable_reason
from infra.config.pools import POOL_NAME_LABEL
from infra.config.profiles import name_tokens
from infra.job_overrides import JOB_RESOURCES, NODE_SELECTOR_PREFIX, JobResource
from infra.model.platform import Platform, derive
from infra.model.profiles import Profile
from infra.model.routes import (
    BATCH_SOURCE,
    MERGE_REQUEST_SOURCE,
    SOURCE_VARIABLE,
    expands_per_source,
    holds_slots,
)
from infra.model.runners import Runner
from infra.pipeline.environment import (
    Environment,
    Workflow,
    container_variables,
    environments,
    platform_variables,
)
from infra.pipeline.images import AllowedImages, check_images
from infra.pipeline.jobs import GLOBAL_VARIABLE_KEYS, rule_variables, variable_problem
from infra.pipeline.resolve import (
    PlatformTemplates,
    ResolvedJob,
    ResolvedPipeline,
    ResolveError,
    Violation,
    resolve_file,
)
from infra.pipeline.resolved import Work
from infra.pipeline.retries import retry_problem
from infra.pipeline.sources import check_sources
from infra.pipeline.tags import routed_tags, routes_alike
from infra.pipeline.timeouts import check_timeout
from infra.pipeline.variables import expand_for_runner
from infra.quantity import Quantity, QuantityError, magnitude, parse_quantity
from infra.render.ci_templates import render_ci_templates

if TYPE_CHECKING:
    from infra.config.platform import PlatformSpec

TRAINING_TOKENS = frozenset({"train", "hyperopt"})
DEFAULT_BRANCH = "main"


def platform_templates(platform: Platform, default_branch: str = DEFAULT_BRANCH) -> PlatformTemplates:
    """The templates file as the platform commits it, and where."""
    spec = platform.spec
    return PlatformTemplates(
        project=spec.gitlab.project,
        path=spec.ci.templates_path,
        branch=spec.ci.templates_branch or default_branch,
        text=render_ci_templates(platform),
    )


@dataclass
class CheckResult:
    found: dict[Violation, dict[str, None]] = field(default_factory=dict)
    """Each violation once, with the jobs it breaks when it is written elsewhere (a template, `variables`)."""
    warnings: list[str] = field(default_factory=list)
    jobs_checked: int = 0
    routes: dict[str, set[str]] = field(default_factory=dict)
    """Job -> the pools whose runners may take it, over every pipeline it was checked for (`simulate --pipeline`
    routes the same tags)."""
    _warned: set[str] = field(default_factory=set, repr=False)

    @property
    def violations(self) -> list[Violation]:
        return [replace(v, jobs=tuple(jobs)) for v, jobs in self.found.items()]

    def add(self, violation: Violation, cause: str | None = None) -> None:
        jobs = self.found.setdefault(violation, {})
        if cause is not None and cause != violation.job:
            jobs[cause] = None

    def warn(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            self.warnings.append(message)


def check_pipeline(
    path: Path, spec: PlatformSpec, root: Path | None = None, *, default_branch: str = DEFAULT_BRANCH
) -> CheckResult:
    """Resolve the pipeline file `path` and check it (ResolveError: it cannot be resolved offline; SpecError:
    the spec derives no platform)."""
    platform = derive(spec)
    pipeline = resolve_file(path, root, platform_templates(platform, default_branch))
    return check_resolved(pipeline, platform)


def check_resolved(pipeline: ResolvedPipeline, platform: Platform) -> CheckResult:
    """The platform's rules on a resolved pipeline."""
    checker = _Checker(platform, pipeline.workflow_variables)
    work = Work()
    workflow = Workflow.of(pipeline, work)
    for warning in pipeline.warnings:
        checker.result.warn(warning)
    for problem in pipeline.problems:
        checker.result.add(problem)
    for job in pipeline.created.values():
        for problem in job.problems:
            checker.result.add(problem, cause=job.name)
        if not job.complete:
            continue
        try:
            found = environments(job, workflow, checker.project_variables, work)
        except ResolveError as err:
            raise ResolveError(f"{job.file}: {job.name}: {err}") from None
        checker.result.jobs_checked += bool(found)  # none: no rule that may apply creates it
        for environment in found:
            checker.check(job, environment)
    return checker.result


def _pool_of(selector: str) -> str | None:
    key, _, value = selector.partition("=")
    return value if key == POOL_NAME_LABEL else None


def _describe(runners: Iterable[Runner]) -> str:
    return ", ".join(f"{r.name} {list(r.tags)}" for r in runners)


class _Checker:
    def __init__(self, platform: Platform, workflow_variables: set[str] | None = None) -> None:
        self.platform = platform
        self.workflow_variables = workflow_variables or set()
        self.spec = platform.spec
        self.result = CheckResult()
        self.family_profile = {family: name for name, p in platform.profiles.items() for family in p.families}
        self.known_tags = {tag for runner in platform.runners.values() for tag in runner.tags}
        self.project_variables = platform_variables(platform)
        self.images = AllowedImages(platform.allowed_images, self.spec.runner.default_image)
        self.environment = Environment({}, {}, {})
        """The variables of the job being checked, in the pipelines where its `label`'s rules apply."""

    def check(self, job: ResolvedJob, environment: Environment) -> None:
        """The job as GitLab hands it out with these variables: for a template routed by the pipeline source (a
        pool with held merge-request slots), once as a merge-request pipeline's job and once as any other's."""
        self.environment = environment
        sources: tuple[str | None, ...] = (None,)
        if expands_per_source(job.tags) and SOURCE_VARIABLE not in environment.tag_variables:
            sources = (MERGE_REQUEST_SOURCE, BATCH_SOURCE)
        for source in sources:
            self.check_as(job, source)

    def check_as(self, job: ResolvedJob, source: str | None) -> None:
        tags = self.routing_tags(job, source)
        if tags is None:
            return
        written = job.tags
        environment = self.environment
        job = replace(job, tags=tags, variables=environment.variables, variable_origin=environment.origin)
        tokens = name_tokens(job.name)
        families = sorted(tokens & set(self.family_profile))
        taking = self.platform.runners_taking(job.tags)
        self.result.routes.setdefault(job.name, set()).update(runner.pool for runner in taking)
        if families and (tokens & TRAINING_TOKENS or job.stage == self.spec.ci.stage):
            runner = self.check_family(job, families, taking, written)
        else:
            runner = self.check_taken(job, taking)
            if runner is not None:
                self.check_template_keys(job, runner, written)
        if runner is not None:
            self.check_guard_variables(job)
            self.check_resources(job, runner)
            self.check_selectors(job, runner)
            check_images(
                job,
                job.variables,
                self.images,
                runner.name,
                violation=lambda message: self.add(job, message),
                warning=lambda message: self.result.warn(f"{job.file}: {job.name}: {message}"),
            )

    def check_guard_variables(self, job: ResolvedJob) -> None:
        """Variables a job on the platform's runners may not set (as the spec refuses them in its CI and profile
        variables): GPUs around the device plugin, MPS's own settings, the runner's feature flags. Wherever GitLab
        puts them in the job's environment (its variables, a rule's, a workflow rule's) or in one of its pod's
        containers (`container_variables`: a service's, an ID token's or a secret's name)."""
        for name in job.variables:
            if name not in self.project_variables and (reason := guard_variable_reason(str(name))):
                where, definer = job.where(str(name))
                rule = self.environment.written_in.get(str(name), "")
                self.result.add(Violation(where, definer, f"{rule}sets {name}: {reason}"), cause=job.name)
        for keyword, name in container_variables(job):
            if reason := guard_variable_reason(name):  # the same in every pipeline: no rule named
                self.result.add(Violation(job.file, job.name, f"{keyword}sets {name}: {reason}"))

    def add(self, job: ResolvedJob, message: str) -> None:
        self.result.add(Violation(job.file, job.name, message + self._where_rules()))

    def add_at(self, job: ResolvedJob, where: tuple[str, str], message: str) -> None:
        """A violation in a value written at `where` (file, job or block), caused by `job`."""
        self.result.add(Violation(*where, message + self._where_rules()), cause=job.name)

    def _where_rules(self) -> str:
        label = self.environment.label
        return f" (in pipelines where {label} applies)" if label else ""

    def routing_tags(self, job: ResolvedJob, source: str | None = None) -> tuple[str, ...] | None:
        """The job's tags once GitLab expanded and parsed them (in a pipeline of `source`, when given); None when
        GitLab alone knows them (a warning) or keeps one as a literal `$VAR` no runner holds (a violation)."""
        found = routed_tags(job.tags, self.environment, source)
        if found.nested is not None:
            tag, expanded, name, value = found.nested
            self.add(
                job,
                f"tags: {tag} is {expanded} once GitLab expands it: GitLab does not expand ${name} (defined as "
                f"{value}) again in tags (gitlab#407129), so the job keeps the tag {expanded}, which no runner holds: "
                "it stays pending",
            )
            return None
        if found.unknown is not None:
            tag, name = found.unknown
            self.result.warn(
                f"{job.file}: {job.name}: tags: {tag} holds ${name}, only known to GitLab: which runner takes the job "
                "is not checked"
            )
            return None
        return found.tags

    def check_taken(self, job: ResolvedJob, taking: list[Runner]) -> Runner | None:
        """The one runner (pool) that takes the job; None when none or several do, or it is not ours."""
        pools = sorted({r.pool for r in taking})
        if len(pools) > 1:
            self.add(
                job,
                f"tags {list(job.tags)} are held by the runners of pools {', '.join(pools)}: either may take it",
            )
            return None
        if not taking:
            if set(job.tags) & self.known_tags:
                self.add(
                    job,
                    f"tags {list(job.tags)}: no gpu-ci runner holds them all "
                    f"({_describe(self.platform.runners.values())}): no runner takes it",
                )
            return None
        return taking[0]

    def check_family(
        self, job: ResolvedJob, families: list[str], taking: list[Runner], written: tuple[str, ...]
    ) -> Runner | None:
        """A family's job uses its profile's template, is taken by its profile's runner, stays on its pool."""
        profiles = sorted({self.family_profile[f] for f in families})
        if len(profiles) > 1:
            named = ", ".join(f"{f} ({self.family_profile[f]})" for f in families)
            self.add(job, f"names model families of several profiles: {named}")
            return self.check_taken(job, taking)
        profile_name, family = profiles[0], families[0]
        profile = self.platform.profiles[profile_name]
        if profile.template not in job.templates:
            extended = ", ".join(job.templates) or "no template"
            self.add(
                job,
                f"extends {extended}, not {profile.template}: {family} jobs run with profile {profile_name} "
                f"on pool {profile.pool}",
            )
            return self.check_taken(job, taking)
        own = self.platform.runners[profile.runner]
        if len({r.pool for r in taking}) > 1:
            return self.check_taken(job, taking)
        if not taking:
            self._not_taken(job, own)
            return None
        runner = taking[0]
        if runner.pool != own.pool:
            self.add(
                job,
                f"tags {list(job.tags)} are taken by runner {runner.name} (pool {runner.pool}), not by profile "
                f"{profile_name}'s runner {own.name} {list(own.tags)}",
            )
            return runner
        self.check_platform_keys(job, profile, written)
        selectors = [
            expand_for_runner(raw, job.variables)
            for key, raw in job.variables.items()
            if key.startswith(NODE_SELECTOR_PREFIX)
        ]
        if any(value is None or not runner.admits_node_selector(value) for value in selectors):
            return runner  # refused or unknown: reported by check_selectors
        pools = {_pool_of(value) for value in selectors if value is not None} - {None}
        if len(pools) > 1:
            self.add(job, f"selects several pools: {', '.join(sorted(map(str, pools)))}")
            return runner
        pool = next(iter(pools)) if pools else runner.pool
        if pool != profile.pool:
            self.add(job, f"runs on pool {pool}, but {family} jobs belong on {profile.pool} (profile {profile_name})")
        return runner

    def check_template_keys(self, job: ResolvedJob, runner: Runner, written: tuple[str, ...]) -> None:
        """A job of no family that extends a profile's template and runs on its pool keeps what the template sets
        for the platform, as a family's job does (`evaluate: extends: .train-validate-base, retry: 0`)."""
        for profile in self.platform.profiles.values():
            if profile.template in job.ancestors and profile.pool == runner.pool:
                self.check_platform_keys(job, profile, written)
                return

    def check_platform_keys(self, job: ResolvedJob, profile: Profile, written: tuple[str, ...]) -> None:
        """What the template sets for the platform and a job may not take away: the retry of what the platform
        causes, the timeout one attempt needs (`infra.pipeline.timeouts`), and on a pool with held slots the tags
        routed by the pipeline source."""
        if "retry" not in job.keys:  # a templates file from before the retries: `pulumi up` commits the current one
            self.result.warn(
                f"{job.file}: {job.name}: no retry: {profile.template} predates the platform's retries (commit the "
                "templates file gpu-ci renders): a job whose pod finds no node fails for good"
            )
        elif retry := retry_problem(job.keys["retry"]):
            self.add(job, f"retry: {retry}")
        check_timeout(
            job,
            profile.template,
            self.platform.runners[profile.runner].template_timeout_seconds,
            violation=lambda message: self.add(job, message),
            warning=lambda message: self.result.warn(f"{job.file}: {job.name}: {message}"),
        )
        if not holds_slots(self.spec, profile.pool):
            return
        check_sources(
            job.keys.get("rules"), profile.pool, lambda message: self.result.warn(f"{job.file}: {job.name}: {message}")
        )
        if not routes_alike(written, profile.tags):
            self.add(
                job,
                f"sets its own tags {list(written)} instead of {profile.template}'s "
                f"{list(profile.tags)}: its merge-request pipelines' jobs no longer reach pool {profile.pool}'s held "
                "slots (or no runner at all); drop `tags:` from the job",
            )
        if SOURCE_VARIABLE in job.variables or SOURCE_VARIABLE in rule_variables(job.keys.get("rules")):
            self.result.add(  # any of its rules: the same line in every pipeline it is checked for
                Violation(
                    job.file,
                    job.name,
                    f"sets {SOURCE_VARIABLE}, which GitLab sets and the template's tags route by (pool {profile.pool} "
                    "holds slots for merge requests): the job lands where its value says, not where its pipeline is",
                )
            )
        if SOURCE_VARIABLE in self.workflow_variables:
            self.add(
                job,
                f"workflow: rules: sets {SOURCE_VARIABLE}, which GitLab sets and the template's tags route by (pool "
                f"{profile.pool} holds slots for merge requests): the job lands where its value says, not where its "
                "pipeline is",
            )

    def _not_taken(self, job: ResolvedJob, own: Runner) -> None:
        self.add(
            job,
            f"tags {list(job.tags)} are not all held by its profile's runner {own.name} {list(own.tags)}: "
            "no gpu-ci runner takes it",
        )

    def check_resources(self, job: ResolvedJob, runner: Runner) -> None:
        """Each override within the runner's maximum, and each request within its limit."""
        effective: dict[str, Quantity | None] = {}
        for resource in JOB_RESOURCES:
            if resource.variable not in job.variables:
                effective[resource.field] = runner.defaults[resource.field]
                continue
            effective[resource.field] = self.override(job, resource, runner)
        for kind in ("cpu", "memory"):
            request, limit = effective[f"{kind}_request"], effective[f"{kind}_limit"]
            if request is not None and limit is not None and magnitude(request) > magnitude(limit):
                self.add(
                    job, f"{kind} request {request.text} is above its limit {limit.text}: Kubernetes refuses the pod"
                )

    def override(self, job: ResolvedJob, resource: JobResource, runner: Runner) -> Quantity | None:
        """The job's value of one resource variable, checked against the runner's maximum."""
        file, definer = job.where(resource.variable)
        raw = job.variables[resource.variable]
        if variable_problem(raw, GLOBAL_VARIABLE_KEYS) is not None:
            return None  # a value GitLab refuses: reported where it is written
        text = expand_for_runner(raw, job.variables)
        if text is None or "$" in text:
            self.result.warn(f"{file}: {definer}: {resource.variable} is only known to GitLab: not checked")
            return None
        try:
            quantity = parse_quantity(resource.kind, text)
        except QuantityError as err:
            self.add_at(job, (file, definer), f"{resource.variable}={text!r}: {err}")
            return None
        maximum = runner.maxima[resource.field]
        if magnitude(quantity) > magnitude(maximum):
            self.add_at(
                job,
                (file, definer),
                f"{resource.variable}={text} is above the runner's {resource.max_key}={maximum.text}: "
                "the job would fail",
            )
        return quantity

    def check_selectors(self, job: ResolvedJob, runner: Runner) -> None:
        """Node selectors the runner that takes the job admits; other KUBERNETES_* overrides are ignored by
        it (a warning)."""
        resources = {r.variable for r in JOB_RESOURCES}
        for key, raw in sorted(job.variables.items()):
            if not key.startswith("KUBERNETES_") or key in resources:
                continue
            file, definer = job.where(key)
            if not key.startswith(NODE_SELECTOR_PREFIX):
                self.result.warn(f"{file}: {definer}: {key} is ignored: the runner allows no such override")
                continue
            if variable_problem(raw, GLOBAL_VARIABLE_KEYS) is not None:
                continue  # a value GitLab refuses: reported where it is written
            value = expand_for_runner(raw, job.variables)
            if value is None or "$" in value:
                self.result.warn(f"{file}: {definer}: {key} is only known to GitLab: not checked")
            elif not runner.admits_node_selector(value):
                self.add_at(
                    job,
                    (file, definer),
                    f"{key}={value} is refused by runner {runner.name} (node_selector_overwrite_allowed="
                    f"{runner.node_selector_regex}): the job would fail",
                )
