"""Each job as GitLab builds it from the extended configuration (pure: no Pulumi import).

`default:` (and the legacy top-level image/services/cache/before_script/after_script) fills the keys a job does
not set, under `inherit: default:`; the global variables are inherited under `inherit: variables:`; a `parallel:
matrix` job becomes one job per combination of its values (`train: [dqn, 1]`), each with those values as job
variables. Keywords GitLab would refuse for their type (a variable that is a list, an image that is a number, a
script of numbers) are violations naming the job, or the template or block that writes the value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from infra.pipeline.extends import Extended, flatten, flatten_rules
from infra.pipeline.resolved import (
    DEFAULT_JOB_STAGE,
    DEFAULT_STAGES,
    EDGE_STAGES,
    ResolvedJob,
    ResolvedPipeline,
    Violation,
    Work,
    brief,
)

LEGACY_DEFAULTS = ("image", "services", "cache", "before_script", "after_script")
"""Top-level keys GitLab still reads as `default:` ones."""
DEFAULT_KEYWORDS = frozenset(
    {
        "after_script",
        "artifacts",
        "before_script",
        "cache",
        "hooks",
        "id_tokens",
        "image",
        "interruptible",
        "retry",
        "services",
        "tags",
        "timeout",
    }
)
"""What `default:` may set (and `inherit: default:` may name)."""
SCRIPT_KEYS = ("before_script", "script", "after_script")
"""Arrays GitLab flattens (nested arrays from `!reference` become one list of commands)."""
MAX_PARALLEL = 200
"""GitLab's limit on the jobs one `parallel:` (a number or a matrix) creates."""
JOB_VARIABLE_KEYS = frozenset({"value", "expand"})
GLOBAL_VARIABLE_KEYS = frozenset({"value", "expand", "description", "options"})
"""What a variable given as a mapping may hold: in a job, and in the global `variables:`."""

Problem = Callable[[str], None]


def stages(config: dict[str, Any], problem: Problem) -> tuple[str, ...]:
    """The stages with `.pre` first and `.post` last, as GitLab injects them."""
    raw = config.get("stages", config.get("types"))
    if raw is None:
        raw = list(DEFAULT_STAGES)
    if not isinstance(raw, list) or not all(isinstance(s, str) for s in raw):
        problem("stages: not a list of stage names")
        raw = list(DEFAULT_STAGES)
    middle = [s for s in raw if s not in EDGE_STAGES]
    return (".pre", *dict.fromkeys(middle), ".post")


def defaults(config: dict[str, Any], problem: Problem) -> dict[str, Any]:
    """`default:` over the legacy top-level keywords."""
    found = {k: config[k] for k in LEGACY_DEFAULTS if k in config}
    default = config.get("default", {})
    if not isinstance(default, dict):
        problem("default: not a mapping of keywords")
        return found
    found.update({k: v for k, v in default.items() if k in DEFAULT_KEYWORDS})
    for key in SCRIPT_KEYS:
        if key in found:
            found[key] = flatten(found[key])
    return found


def variable_problem(value: Any, allowed: frozenset[str]) -> str | None:
    """Why GitLab refuses `value` as a variable's value (it takes a string, an integer or a mapping with those
    keys); None when it takes it."""
    if _scalar(value):
        return None
    if not isinstance(value, dict):
        kind = {list: "a list", type(None): "empty", bool: "true or false", float: "a float"}.get(type(value))
        return f"{kind or brief(value)} is not a variable value (GitLab takes a string or an integer; quote it)"
    extra = sorted(str(k) for k in value if k not in allowed)
    if extra:
        return f"uses invalid data keys: {', '.join(extra)}"
    if "value" in value and value["value"] is not None and not _scalar(value["value"]):
        return f"value: {brief(value['value'])} is not a string or an integer"
    if "expand" in value and not isinstance(value["expand"], bool):
        return "expand: not true or false"
    options = value.get("options")
    if options is not None and (not isinstance(options, list) or not all(isinstance(o, str) for o in options)):
        return "options: not a list of strings"
    if options is not None and value.get("value") not in options:
        return "value must be present in options"
    return None


def _scalar(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def check_variables(variables: dict[str, Any], allowed: frozenset[str], report: Callable[[str, str], None]) -> None:
    """Each variable GitLab would refuse, reported as `report(name, why)`."""
    for name, value in variables.items():
        why = variable_problem(value, allowed)
        if why is not None:
            report(name, why)


def _inherit(value: Any, what: str, job: ResolvedJob) -> bool | set[str]:
    """`inherit: default:` / `inherit: variables:`: True, False or the names listed."""
    if value is None or isinstance(value, bool):
        return value is not False
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return set(value)
    job.problems.append(Violation(job.file, job.name, f"inherit: {what}: not true, false or a list of names"))
    return True


def build_job(
    name: str,
    file: str,
    keys: dict[str, Any],
    base: Extended,
    *,
    pipeline: ResolvedPipeline,
    defaults: dict[str, Any],
    global_origin: dict[str, tuple[str, str]],
    work: Work,
) -> ResolvedJob:
    keys = dict(keys)
    job = ResolvedJob(name, file, keys, (), {}, {}, DEFAULT_JOB_STAGE, (), list(base.problems), base.complete)
    inherit = keys.get("inherit") or {}
    if not isinstance(inherit, dict):
        job.problems.append(Violation(file, name, "inherit: not a mapping (default:, variables:)"))
        inherit = {}
    inherit_default = _inherit(inherit.get("default"), "default", job)
    inherit_variables = _inherit(inherit.get("variables"), "variables", job)
    job.inherit_variables = inherit_variables if isinstance(inherit_variables, bool) else frozenset(inherit_variables)
    for key, value in defaults.items():
        if key not in keys and (
            inherit_default is True or (isinstance(inherit_default, set) and key in inherit_default)
        ):
            keys[key] = value
    for key in SCRIPT_KEYS:
        if key in keys:
            keys[key] = flatten(keys[key], work)
    if "rules" in keys:
        keys["rules"] = flatten_rules(keys["rules"])
    if not job.complete:
        return job  # GitLab stops at the failed `extends`: nothing else about the job is known
    if not any(k in keys for k in ("script", "run", "trigger")):
        job.problems.append(Violation(file, name, "has no script, run or trigger: GitLab refuses the pipeline"))
    _check_types(job)

    own = keys.get("variables", {})
    if own is None:
        own = {}
    if not isinstance(own, dict):
        job.problems.append(Violation(file, name, "variables: not a mapping of names to values"))
        own = {}
    inherited = {
        k: v
        for k, v in pipeline.variables.items()
        if inherit_variables is True or (isinstance(inherit_variables, set) and k in inherit_variables)
    }
    work.spend(len(inherited) + len(own) + len(keys))
    job.variables = {**inherited, **{str(k): v for k, v in own.items()}}
    job.variable_origin = {k: global_origin[k] for k in inherited if k in global_origin}
    job.variable_origin.update({k: v for k, v in base.variable_origin.items() if k in own})

    _stage_and_tags(job, pipeline.stages)
    return job


def check_job_variables(job: ResolvedJob) -> None:
    """The job's own variables (its templates' included) GitLab would refuse, reported where they are written."""
    own = job.keys.get("variables")
    if not job.complete or not isinstance(own, dict):
        return

    def report(variable: str, why: str) -> None:
        where, definer = job.where(str(variable))
        job.problems.append(Violation(where, definer, f"variables: {variable}: {why}"))

    check_variables(own, JOB_VARIABLE_KEYS, report)


def _check_types(job: ResolvedJob) -> None:
    """Keywords of a type GitLab refuses: the scripts, the image and the services."""
    for key in SCRIPT_KEYS:
        value = job.keys.get(key)
        if value is not None and not (isinstance(value, str) or all(isinstance(v, str) for v in _items(value))):
            job.problems.append(Violation(job.file, job.name, f"{key}: not a command or a list of commands"))
    image = job.keys.get("image")
    if image is not None and image_name(image) is None:
        job.problems.append(Violation(job.file, job.name, "image: not an image name or {name: <image>}"))
    rules = job.keys.get("rules")
    if rules is not None and (not isinstance(rules, list) or not all(isinstance(r, dict | list) for r in rules)):
        job.problems.append(Violation(job.file, job.name, "rules: not a list of rules ({if: ..., when: ...})"))
    services = job.keys.get("services")
    if services is not None and (
        not isinstance(services, list) or any(image_name(service) is None for service in services)
    ):
        job.problems.append(Violation(job.file, job.name, "services: not a list of image names or {name: <image>}"))


def rule_variables(rules: Any) -> set[str]:
    """Names the `variables:` of any rule set, nested `!reference`s to other rules at any depth included."""
    found: set[str] = set()
    pending = [rules]
    while pending:
        value = pending.pop()
        if isinstance(value, list):
            pending.extend(value)
        elif isinstance(value, dict) and isinstance(value.get("variables"), dict):
            found.update(str(name) for name in value["variables"])
    return found


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def image_name(value: Any) -> str | None:
    """The name of an `image:` or a service: a string, or the `name` of a mapping; None when it is neither."""
    if isinstance(value, dict):
        value = value.get("name")
    return value if isinstance(value, str) else None


def _stage_and_tags(job: ResolvedJob, stages: tuple[str, ...]) -> None:
    """The job's stage (one of the pipeline's) and its tags (names)."""
    stage = job.keys.get("stage", DEFAULT_JOB_STAGE)
    if not isinstance(stage, str):
        job.problems.append(Violation(job.file, job.name, "stage: not a stage name"))
    elif stage not in stages:
        job.problems.append(
            Violation(
                job.file,
                job.name,
                f"chosen stage {stage} does not exist; available stages are {', '.join(stages)}",
            )
        )
    job.stage = stage if isinstance(stage, str) else DEFAULT_JOB_STAGE
    tags = job.keys.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        job.problems.append(Violation(job.file, job.name, "tags: not a list of tag names"))
        tags = []
    job.tags = tuple(tags)


# --- parallel: matrix ------------------------------------------------------------------------------------------


def expand_parallel(job: ResolvedJob, work: Work) -> Iterator[ResolvedJob]:
    """The jobs GitLab creates from one: itself, or one per `parallel: matrix` combination (`job: [a, b]`)."""
    parallel = job.keys.get("parallel")
    if parallel is None or not job.complete:
        yield job
        return
    if isinstance(parallel, int) and not isinstance(parallel, bool):
        if not 1 <= parallel <= MAX_PARALLEL:
            job.problems.append(Violation(job.file, job.name, f"parallel: {parallel} is not between 1 and 200"))
        yield job  # N copies of the same job: checked once
        return
    matrix = parallel.get("matrix") if isinstance(parallel, dict) else None
    combinations = _combinations(matrix)
    if combinations is None:
        job.problems.append(
            Violation(job.file, job.name, "parallel: not a number of jobs or {matrix: [{NAME: [values]}, ...]}")
        )
        job.complete = False
        yield job
        return
    if isinstance(combinations, int):
        job.problems.append(
            Violation(
                job.file, job.name, f"parallel: matrix config generates too many jobs (maximum is {MAX_PARALLEL})"
            )
        )
        job.complete = False
        yield job
        return
    for values in combinations:
        work.spend(len(job.keys) + len(job.variables) + len(values))
        name = f"{job.name}: [{', '.join(values.values())}]"
        keys = dict(job.keys)
        own = keys.get("variables")
        keys["variables"] = {**(own if isinstance(own, dict) else {}), **values}
        yield ResolvedJob(
            name,
            job.file,
            keys,
            job.templates,
            {**job.variables, **values},
            {**job.variable_origin, **dict.fromkeys(values, (job.file, name))},
            job.stage,
            job.tags,
            list(job.problems),
            job.complete,
            job.ancestors,
            job.inherit_variables,
        )


def _combinations(matrix: Any) -> list[dict[str, str]] | int | None:
    """Every combination of a matrix's values, in GitLab's order; their number alone when it is over the limit (a
    matrix of 10^100 combinations is counted, not built); None when it is not a matrix."""
    if not isinstance(matrix, list) or not matrix:
        return None
    entries: list[list[tuple[str, list[str]]]] = []
    total = 0
    for entry in matrix:
        if not isinstance(entry, dict) or not entry:
            return None
        columns: list[tuple[str, list[str]]] = []
        count = 1
        for key, raw in entry.items():
            values = raw if isinstance(raw, list) else [raw]
            if not isinstance(key, str) or not values or not all(_scalar(v) for v in values):
                return None
            columns.append((key, [str(v) for v in values]))
            count = min(count * len(values), MAX_PARALLEL + 1)
        total = min(total + count, MAX_PARALLEL + 1)
        entries.append(columns)
    if total > MAX_PARALLEL:
        return total
    found: list[dict[str, str]] = []
    for columns in entries:
        rows: list[dict[str, str]] = [{}]
        for key, values in columns:
            rows = [{**row, key: value} for row in rows for value in values]
        found.extend(rows)
    return found
