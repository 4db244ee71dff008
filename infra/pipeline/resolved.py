"""What resolving a pipeline produces (jobs, violations) and what it may cost (pure: no Pulumi import).

Shared by the steps of `infra.pipeline.resolve`: reading (`reading`, `includes`), `extends:` and `!reference`
(`extends`), and the jobs themselves (`jobs`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DEFAULT_STAGES = ("build", "test", "deploy")
EDGE_STAGES = (".pre", ".post")
DEFAULT_JOB_STAGE = "test"
GLOBAL_KEYWORDS = frozenset(
    {
        "default",
        "include",
        "stages",
        "types",
        "variables",
        "workflow",
        "spec",
        "image",
        "services",
        "cache",
        "before_script",
        "after_script",
    }
)
"""Top-level keys that are not jobs."""

MAX_RESOLVE_WORK = 2_000_000
"""Values `extends`, `!reference`, `default:`, global variables and `parallel: matrix` may copy or merge in all,
for the whole pipeline (the sample pipeline: ~3,000). An `extends` DAG in which each template extends the previous
one twice doubles the work per level; without a bound it ends in MemoryError."""


class ResolveError(ValueError):
    """A construct check-ci cannot resolve offline, or a pipeline over a budget; the message is one line."""


class Reference(list):
    """GitLab's `!reference [job, key, ...]`, resolved after `extends`."""


@dataclass(frozen=True)
class Violation:
    """One thing GitLab or the runner would refuse or misroute: `file: job: message`."""

    file: str
    job: str | None
    message: str
    jobs: tuple[str, ...] = ()
    """The jobs it breaks, when the value is written elsewhere (a template, the global variables)."""

    def __str__(self) -> str:
        line = f"{self.file}: {self.job}: {self.message}" if self.job else f"{self.file}: {self.message}"
        return line + _in_jobs(self.jobs)


SHOWN_JOBS = 3


def _in_jobs(jobs: tuple[str, ...]) -> str:
    if not jobs:
        return ""
    if len(jobs) == 1:
        return f" (job {jobs[0]})"
    shown = ", ".join(jobs[:SHOWN_JOBS])
    more = f" and {len(jobs) - SHOWN_JOBS} more" if len(jobs) > SHOWN_JOBS else ""
    return f" ({len(jobs)} jobs: {shown}{more})"


@dataclass(frozen=True)
class PlatformTemplates:
    """The templates the platform commits to the training project: an `include: project:` of them is
    read from here (rendered from the spec) instead of from GitLab."""

    project: str
    path: str
    branch: str
    """Where the platform commits them (its templates branch, else the project's default branch)."""
    text: str


@dataclass
class ResolvedJob:
    """A job as GitLab would hand it to a runner."""

    name: str
    file: str
    """The file that defines it (the last one to set any of its keys)."""
    keys: dict[str, Any]
    """Final keys: extends merged, references resolved, defaults applied."""
    templates: tuple[str, ...]
    """Jobs it extends (depth first) and jobs it takes values from by `!reference`."""
    variables: dict[str, Any]
    """Global variables it inherits, then its own (its own win); in a job GitLab creates from a `parallel:
    matrix`, that combination's values over them."""
    variable_origin: dict[str, tuple[str, str]]
    """Variable -> (file, job or `variables`) where its value is written."""
    stage: str
    tags: tuple[str, ...]
    """As written: the platform's rules expand the variables in them as GitLab does."""
    problems: list[Violation] = field(default_factory=list)
    complete: bool = True
    """False when GitLab could not even build the job (its `extends` or `parallel` fails)."""
    ancestors: tuple[str, ...] = ()
    """Jobs it extends, depth first: its `templates` but those it only takes values from by `!reference`."""
    inherit_variables: bool | frozenset[str] = True
    """`inherit: variables:`: whether (or which of) the pipeline's root variables it takes, the global ones and
    those of a `workflow: rules:` rule alike."""

    def where(self, variable: str) -> tuple[str, str]:
        """Where the variable is set: an inherited value is reported where it is written."""
        return self.variable_origin.get(variable, (self.file, self.name))


@dataclass
class ResolvedPipeline:
    jobs: dict[str, ResolvedJob]
    """Visible jobs, in the order GitLab lists them, as declared."""
    stages: tuple[str, ...]
    variables: dict[str, Any]
    problems: list[Violation] = field(default_factory=list)
    """Refusals that belong to no visible job (a missing include, malformed `stages`, a broken template)."""
    warnings: list[str] = field(default_factory=list)
    created: dict[str, ResolvedJob] = field(default_factory=dict)
    """The jobs GitLab creates from them: a `parallel: matrix` job once per combination (`train: [dqn, 1]`)."""
    workflow_variables: set[str] = field(default_factory=set)
    """Variables `workflow: rules:` may set for the whole pipeline (over the predefined ones, `CI_PIPELINE_SOURCE`
    too)."""
    workflow_rules: Any = None
    """`workflow: rules:` as written (references resolved); None when there are none."""
    workflow_file: str = ""
    """The file that writes `workflow:`."""


class Work:
    """The values resolving copies or merges, against `MAX_RESOLVE_WORK`: one budget for the whole pipeline."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = MAX_RESOLVE_WORK if limit is None else limit
        self.spent = 0

    def spend(self, count: int) -> None:
        self.spent += count
        if self.spent > self.limit:
            raise ResolveError(
                f"takes more than {self.limit:,} merged values to resolve (an `extends`, `!reference` or "
                "`parallel: matrix` fan-out): not resolved"
            )


def deep_merge(base: dict[str, Any], override: dict[str, Any], work: Work | None = None) -> dict[str, Any]:
    """GitLab's merge for `include` and `extends`: hashes merge key by key, anything else is replaced."""
    if work is not None:
        work.spend(len(base) + len(override))
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value, work)
        else:
            merged[key] = value
    return merged


def brief(value: Any, limit: int = 80) -> str:
    """`repr(value)`, cut to `limit` characters: a value quoted in a one-line message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
