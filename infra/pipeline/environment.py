"""A job's variables from every source, as GitLab builds them (pure: no Pulumi import); the one place that does.

GitLab seeds a job (`Chain::Seed`, `Seed::Build`) from, lowest first: the global `variables:`, then those of the
`workflow: rules:` rule that applies (the pipeline's root variables), both filtered by `inherit: variables:`; the
job's own (with its `parallel: matrix` values); then the project's CI/CD variables, which win over the YAML's.
Tags are expanded with these (`tag_variables`). The job's `rules:` rule that applies then adds its `variables:`
over the job's own, after the tags (`rules_attributes`): the runner gets them too (`variables`), tags never do.

Which rule applies is GitLab's to know (`if:`, `changes:`, `exists:`). GitLab takes the first rule that matches; a
rule without any of those clauses always matches, so the rules after it are never reached; a rule with `when:
never` creates no job (no pipeline, in `workflow:`). check-ci cannot evaluate the clauses, so it takes every
reachable rule as one that may apply: each gives an `Environment`, and a job is checked in each (the conservative
verdict: a guard disarmed in a rule that only some pipelines take is a violation, named with its rule). A job no
reachable rule creates has no environment: GitLab never creates it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from infra.model.platform import Platform
from infra.pipeline.extends import flatten
from infra.pipeline.jobs import image_name
from infra.pipeline.resolved import ResolvedJob, ResolvedPipeline, ResolveError, Work, brief

CLAUSES = ("if", "changes", "exists")
"""A rule's conditions (`Rules::Rule::Clause`): a rule with none of them always matches."""
MAX_ENVIRONMENTS = 64
"""Rules of one list that set different variables, and combinations of a workflow rule and a job rule per job, that
check-ci checks; more is over budget (one `error:` line)."""


@dataclass(frozen=True)
class RuleChoice:
    """One rule GitLab may apply: where it is (`rules[1]`) and the variables it sets (none: `{}`)."""

    where: str
    variables: dict[str, Any]


@dataclass
class Environment:
    """A job's variables in the pipelines where the rules named by `label` apply."""

    tag_variables: dict[str, Any]
    """What GitLab expands the job's tags with: the YAML's (global, workflow rule, the job's own) and the project's."""
    variables: dict[str, Any]
    """What the job runs with: `tag_variables` and its rule's `variables:` under the project's."""
    origin: dict[str, tuple[str, str]]
    """Variable -> (file, job or block) where its value is written."""
    label: str = ""
    """Which rules apply (`workflow: rules[0]`, `rules[2]`), where others may: empty when every pipeline (or job)
    GitLab creates takes the same variables (one rule reached, or none that sets any)."""
    written_in: dict[str, str] = field(default_factory=dict)
    """Variable -> the rule that sets it (`rules[2]: variables: `), for those a rule sets."""


def platform_variables(platform: Platform) -> dict[str, Any]:
    """The CI/CD variables the platform sets on the training project (or its group): they win over the YAML's.
    A secret's value is GitLab's alone (None)."""
    ci = platform.spec.ci
    found: dict[str, Any] = {name: variable.value for name, variable in ci.variables.items()}
    found[ci.registry_variable] = platform.registry_endpoint
    return found


def rule_choices(rules: Any, prefix: str, work: Work | None = None) -> list[RuleChoice]:
    """The rules GitLab may apply, in order: each reachable rule that creates the job (or the pipeline). `[]` when
    none does; one choice without variables when there are no rules (or no list of them) at all."""
    if not isinstance(rules, list) or not rules:
        return [RuleChoice("", {})]  # none, or refused by GitLab (`rules: []` too): checked as if none
    choices = []
    for index, rule in enumerate(flatten(rules, work)):
        if not isinstance(rule, dict):
            continue  # refused by GitLab, reported with the job's keywords
        if rule.get("when") != "never":
            variables = rule.get("variables")
            where = f"{prefix}rules[{index}]"
            choices.append(
                RuleChoice(where, {str(k): v for k, v in variables.items()} if isinstance(variables, dict) else {})
            )
        if not any(clause in rule for clause in CLAUSES):
            break  # always matches: no later rule is ever reached
    return choices


def _distinct(choices: list[RuleChoice], where: str) -> list[RuleChoice]:
    """One choice per distinct set of variables (rules that set none route and run alike); more than
    `MAX_ENVIRONMENTS` is over budget (12,000 rules of one variable each would be compared pairwise)."""
    kept: list[RuleChoice] = []
    for choice in choices:
        if not any(choice.variables == other.variables for other in kept):
            kept.append(choice if choice.variables else RuleChoice("", {}))
            if len(kept) > MAX_ENVIRONMENTS:
                raise ResolveError(f"{where}: more than {MAX_ENVIRONMENTS} rules that set other variables: not checked")
    return kept


@dataclass
class Workflow:
    """The pipeline's `workflow: rules:` choices, and the file that writes them."""

    choices: list[RuleChoice]
    file: str

    @classmethod
    def of(cls, pipeline: ResolvedPipeline, work: Work | None = None) -> Workflow:
        """ResolveError naming the file when its rules are over budget."""
        choices = rule_choices(pipeline.workflow_rules, "workflow: ", work)
        return cls(_distinct(choices, f"{pipeline.workflow_file}: workflow: rules"), pipeline.workflow_file)


def environments(
    job: ResolvedJob, workflow: Workflow, project: dict[str, Any], work: Work | None = None
) -> list[Environment]:
    """Every way GitLab may build the job's variables; `[]` when no rule lets GitLab create it."""
    rules = _distinct(rule_choices(job.keys.get("rules"), "", work), "rules")
    if len(workflow.choices) * len(rules) > MAX_ENVIRONMENTS:
        raise ResolveError(
            f"{len(workflow.choices) * len(rules)} combinations of workflow: rules: and rules: variables (more than "
            f"{MAX_ENVIRONMENTS}): not checked"
        )
    own = job.keys.get("variables")
    own = {str(k): v for k, v in own.items()} if isinstance(own, dict) else {}
    found = []
    for pipeline_rule in workflow.choices:
        root = {k: v for k, v in pipeline_rule.variables.items() if _inherits(job, k)}
        tag_variables = {**job.variables, **{k: v for k, v in root.items() if k not in own}, **project}
        origin = dict(job.variable_origin)
        origin.update({k: (workflow.file, "workflow") for k in root if k not in own})
        written_in = {k: f"{pipeline_rule.where.removeprefix('workflow: ')}: variables: " for k in root if k not in own}
        for job_rule in rules:
            if work is not None:
                work.spend(len(tag_variables) + len(job_rule.variables))
            variables = {**tag_variables, **{k: v for k, v in job_rule.variables.items() if k not in project}}
            label = " and ".join(
                choice.where
                for choice, of in ((pipeline_rule, workflow.choices), (job_rule, rules))
                if len(of) > 1 and choice.where
            )
            found.append(
                Environment(
                    tag_variables,
                    variables,
                    {**origin, **dict.fromkeys(job_rule.variables, (job.file, job.name))},
                    label,
                    {**written_in, **dict.fromkeys(job_rule.variables, f"{job_rule.where}: variables: ")},
                )
            )
    return found


def container_variables(job: ResolvedJob) -> list[tuple[str, str]]:
    """(keyword, name) of the variables the job's pod gets besides its `variables`: each service's `variables:` (the
    runner starts a service's container with the job's variables and then its own, in the job's pod, on its node:
    `getServiceVariables` of gitlab-runner's Kubernetes executor), and the names of its `id_tokens:` and `secrets:`,
    which GitLab hands to the job as variables of those names."""
    found: list[tuple[str, str]] = []
    services = job.keys.get("services")
    for service in services if isinstance(services, list) else []:
        variables = service.get("variables") if isinstance(service, dict) else None
        shown = brief(image_name(service), 60)
        found += [(f"services: {shown}: variables: ", str(name)) for name in _names(variables)]
    for keyword in ("id_tokens", "secrets"):
        found += [(f"{keyword}: ", str(name)) for name in _names(job.keys.get(keyword))]
    return found


def _names(block: Any) -> list[Any]:
    return list(block) if isinstance(block, dict) else []


def _inherits(job: ResolvedJob, name: str) -> bool:
    inherit = job.inherit_variables
    return inherit if isinstance(inherit, bool) else name in inherit
