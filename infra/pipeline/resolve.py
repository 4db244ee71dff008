"""Load and resolve a `.gitlab-ci.yml` as GitLab does, offline (pure: no Pulumi import).

GitLab builds a pipeline's configuration in a fixed order, followed here:
1. YAML, with GitLab's `!reference` tag (and a `spec:` header document, skipped), each file within the
   documents' budget (`reading`);
2. `include:`s, depth first (`includes`);
3. `extends:`, several parents, up to 11 levels, whatever the order of declaration (`extends`);
4. `!reference [job, key, ...]` anywhere, on the extended configuration, nested up to 10 levels (`extends`);
5. `.pre` and `.post` around the stages (default stages: build, test, deploy);
then, per job, `default:` and the global variables under `inherit:`, and one job per `parallel: matrix`
combination (`jobs`).

What GitLab would refuse (an unknown `extends` parent, a stage that does not exist, a missing local include, a
variable that is a list...) is recorded as a `Violation`. What cannot be resolved offline at all (an include of
another project, an unknown `!reference` target, a reference cycle, YAML that does not parse, a top level that
is not a mapping) or is over a budget (size, depth, aliases, includes, `extends` fan-out, wildcard cost) raises
`ResolveError`, whose message is one line naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infra.pipeline.extends import MAX_EXTENDS_DEPTH, MAX_REFERENCE_DEPTH, Extended, Extends, References
from infra.pipeline.includes import MAX_INCLUDE_DEPTH, MAX_INCLUDES, Includes, Layer
from infra.pipeline.jobs import (
    GLOBAL_VARIABLE_KEYS,
    build_job,
    check_job_variables,
    check_variables,
    defaults,
    expand_parallel,
    rule_variables,
    stages,
)
from infra.pipeline.reading import read_merged, read_yaml
from infra.pipeline.resolved import (
    GLOBAL_KEYWORDS,
    PlatformTemplates,
    Reference,
    ResolvedJob,
    ResolvedPipeline,
    ResolveError,
    Violation,
    Work,
    deep_merge,
)

__all__ = [
    "MAX_EXTENDS_DEPTH",
    "MAX_INCLUDES",
    "MAX_INCLUDE_DEPTH",
    "MAX_REFERENCE_DEPTH",
    "PlatformTemplates",
    "Reference",
    "ResolveError",
    "ResolvedJob",
    "ResolvedPipeline",
    "Violation",
    "deep_merge",
    "read_yaml",
    "resolve_file",
    "resolve_text",
]


def resolve_file(path: Path, root: Path | None = None, platform: PlatformTemplates | None = None) -> ResolvedPipeline:
    """Read `path` (local includes relative to `root`, default: its directory) and resolve it."""
    root = root or path.parent
    pipeline = ResolvedPipeline({}, (), {})
    work = Work()
    includes = Includes(root, platform, pipeline, work)
    try:
        layer = includes.load_file(path)
        return _build(layer, pipeline, includes.display(path), work)
    except RecursionError:
        raise ResolveError(f"{includes.display(path)}: the configuration nests too deep to resolve") from None


def resolve_text(text: str, shown: str) -> ResolvedPipeline:
    """Resolve a configuration without includes (GitLab's merged YAML, from `--online`)."""
    pipeline = ResolvedPipeline({}, (), {})
    document = read_merged(text, shown)
    if not isinstance(document, dict):
        raise ResolveError(f"{shown}: not a GitLab CI configuration (the top level must be a mapping)")
    try:
        return _build(Layer.of(_unsymbol(document), shown), pipeline, shown, Work())
    except RecursionError:
        raise ResolveError(f"{shown}: the configuration nests too deep to resolve") from None


def _unsymbol(value: Any) -> Any:
    """GitLab's merged YAML may write keys as Ruby symbols (`:job:`, `:".hidden":`): plain names."""
    if isinstance(value, dict):
        return {
            (k[1:].strip('"') if isinstance(k, str) and k.startswith(":") else k): _unsymbol(v)
            for k, v in value.items()
        }
    if isinstance(value, list) and not isinstance(value, Reference):
        return [_unsymbol(v) for v in value]
    return value


def _build(layer: Layer, pipeline: ResolvedPipeline, root_file: str, work: Work) -> ResolvedPipeline:
    extends = Extends(layer.config, layer.key_file, layer.variable_file, work)
    extended = extends.done
    config: dict[str, Any] = {k: extended[k].job if k in extended else v for k, v in layer.config.items()}
    for name, result in extended.items():  # GitLab extends every key: a broken template refuses the pipeline
        if name.startswith("."):
            pipeline.problems += [p for p in result.problems if p.job == name]  # its own: once per template
    references = References(config, work)
    resolved: dict[Any, Any] = {}
    for key, value in config.items():
        try:
            resolved[key] = references.resolve(value)
        except ResolveError as err:
            raise ResolveError(f"{layer.key_file.get(str(key), root_file)}: {key}: {err}") from None

    def global_problem(message: str) -> None:
        pipeline.problems.append(Violation(root_file, None, message))

    pipeline.problems += [p for p in layer.misread if p not in pipeline.problems]
    pipeline.stages = stages(resolved, global_problem)
    variables = resolved.get("variables", {})
    if not isinstance(variables, dict):
        global_problem("variables: not a mapping of names to values")
        variables = {}
    pipeline.variables = {str(k): v for k, v in variables.items()}
    global_origin = {
        name: (layer.variable_file.get(("variables", name), layer.key_file.get("variables", root_file)), "variables")
        for name in pipeline.variables
    }
    global_origin.update(_reference_origins(layer.config.get("variables"), extended, layer))

    def global_variable(name: str, why: str) -> None:
        file, _ = global_origin.get(name, (root_file, "variables"))
        pipeline.problems.append(Violation(file, "variables", f"{name}: {why}"))

    check_variables(pipeline.variables, GLOBAL_VARIABLE_KEYS, global_variable)
    _workflow(resolved.get("workflow"), pipeline, layer.key_file.get("workflow", root_file))
    job_defaults = defaults(resolved, global_problem)

    for name, value in resolved.items():
        if not isinstance(name, str) or name in GLOBAL_KEYWORDS or name.startswith("."):
            continue
        file = layer.key_file.get(name, root_file)
        if not isinstance(value, dict):
            pipeline.problems.append(Violation(file, name, "not a job: GitLab wants a mapping of keywords"))
            continue
        # A job written as a whole `!reference` was no mapping when GitLab applied `extends`.
        base = extended.get(name) or Extended({}, (), {})
        try:
            job = build_job(
                name,
                file,
                value,
                base,
                pipeline=pipeline,
                defaults=job_defaults,
                global_origin=global_origin,
                work=work,
            )
            raw_variables = base.job.get("variables")  # extended, references not yet resolved
            job.variable_origin.update(
                {k: v for k, v in _reference_origins(raw_variables, extended, layer).items() if k in job.variables}
            )
            check_job_variables(job)
            used = _references_of(layer.config[name]) - {name}
            job.ancestors = base.ancestors
            job.templates = (*base.ancestors, *sorted(used - set(base.ancestors)))
            pipeline.jobs[name] = job
            pipeline.created.update((each.name, each) for each in expand_parallel(job, work))
        except ResolveError as err:
            raise ResolveError(f"{file}: {name}: {err}") from None
    return pipeline


def _workflow(workflow: Any, pipeline: ResolvedPipeline, file: str) -> None:
    """`workflow: rules:`, kept for the jobs' environments; of a type GitLab refuses, a violation (and no rules)."""
    pipeline.workflow_file = file
    if workflow is not None and not isinstance(workflow, dict):
        pipeline.problems.append(Violation(file, "workflow", "not a mapping of keywords (rules:, name:, ...)"))
        return
    rules = (workflow or {}).get("rules")
    if rules is not None and not (isinstance(rules, list) and all(isinstance(r, dict | list) for r in rules)):
        pipeline.problems.append(Violation(file, "workflow", "rules: not a list of rules ({if: ..., when: ...})"))
        return
    pipeline.workflow_variables = rule_variables(rules)
    pipeline.workflow_rules = rules


def _references_of(job: Any) -> set[str]:
    """Jobs a job's own keys `!reference` (directly)."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, Reference):
            if value and isinstance(value[0], str):
                found.add(value[0])
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(job)
    return found


def _reference_origins(raw: Any, extended: dict[str, Extended], layer: Layer) -> dict[str, tuple[str, str]]:
    """Where variables taken by `!reference [job, variables(, NAME)]` are written: in that job."""
    origins: dict[str, tuple[str, str]] = {}

    def origin_in(job: str, variable: str) -> tuple[str, str] | None:
        if job in extended:
            return extended[job].variable_origin.get(variable)
        if job == "variables":
            return (layer.variable_file.get(("variables", variable), layer.key_file.get("variables", "?")), "variables")
        return None

    if isinstance(raw, Reference) and len(raw) == 2 and raw[1] == "variables" and isinstance(raw[0], str):
        source = extended.get(raw[0])
        block = source.job.get("variables") if source is not None else None
        for variable in block if isinstance(block, dict) else {}:
            if (found := origin_in(raw[0], str(variable))) is not None:
                origins[str(variable)] = found
    elif isinstance(raw, dict):
        for variable, value in raw.items():
            # Reported where written only when it is the same variable there (else: where it is used).
            same = isinstance(value, Reference) and len(value) == 3 and value[1] == "variables"
            if same and value[2] == variable and isinstance(value[0], str):
                found = origin_in(value[0], value[2])
                if found is not None:
                    origins[str(variable)] = found
    return origins
