"""Which runner a job's tags reach (pure): the default tags, a pool's tags, and merge-request routing.

GitLab gives a job to a runner that holds **all** of its tags. Without held slots a pool has one runner, and
its profiles' templates carry `[*runner.pool_tags, <pool>]` (the default pool's: `runner.tags`). A pool with
`merge_request_slots` has two: the shared runner and the runner of the held slots. Its templates then carry
`[*runner.pool_tags, <pool>-${CI_PIPELINE_SOURCE}]`, which GitLab expands when it creates the pipeline (a
predefined variable: expanded in `tags:`, unlike a variable defined from another one, gitlab#407129). The
shared runner holds the tag of every pipeline source, the held slots' runner only
`<pool>-merge_request_event`: a merge-request job may take either runner's free slot, any other job only the
shared one. The training repository changes nothing; a job that sets its own `tags:` (or
`CI_PIPELINE_SOURCE`) leaves the routing, and check-ci says so.
"""

from __future__ import annotations

from collections.abc import Iterable

from infra.config.platform import PlatformSpec

SOURCE_VARIABLE = "CI_PIPELINE_SOURCE"
MERGE_REQUEST_SOURCE = "merge_request_event"
PIPELINE_SOURCES = (
    "api",
    "chat",
    "container_registry_push",
    "duo_workflow",
    "external",
    "external_pull_request_event",
    "merge_request_event",
    "ondemand_dast_scan",
    "ondemand_dast_validation",
    "parent_pipeline",
    "pipeline",
    "pipeline_execution_policy_schedule",
    "push",
    "schedule",
    "security_orchestration_policy",
    "trigger",
    "web",
    "webide",
)
"""GitLab's values of `CI_PIPELINE_SOURCE`: those its docs list (the same as the pipelines API's `source`) and
the three more its pipeline model knows (tests/data/upstream/gitlab-pipeline-sources.txt, which a test keeps
equal to this). A job of a pipeline whose source is not here would find no runner of a pool with held slots: it
stays pending until GitLab drops it as stuck, after an hour (check-ci warns about rules naming such a source,
`infra.pipeline.sources`)."""
BATCH_SOURCE = "schedule"
"""The source the simulation gives a batch job (every source but merge_request_event routes alike)."""


def source_tag(pool: str, source: str) -> str:
    """`ci-training-merge_request_event`: the tag of `pool` for jobs of pipelines of `source`."""
    return f"{pool}-{source}"


def source_tag_template(pool: str) -> str:
    """The templates' tag GitLab expands per pipeline: `ci-training-${CI_PIPELINE_SOURCE}`."""
    return source_tag(pool, "${" + SOURCE_VARIABLE + "}")


def holds_slots(spec: PlatformSpec, pool: str) -> bool:
    return spec.pools[pool].merge_request_slots > 0


def template_tags(spec: PlatformSpec, pool: str, default: str) -> tuple[str, ...]:
    """Tags of the CI template of a profile on `pool` (see the module docstring)."""
    if holds_slots(spec, pool):
        tags: Iterable[str] = (*spec.runner.pool_tags, source_tag_template(pool))
    elif pool == default:
        tags = spec.runner.tags
    else:
        tags = (*spec.runner.pool_tags, pool)
    return tuple(dict.fromkeys(tags))


def shared_runner_tags(spec: PlatformSpec, pool: str, default: str) -> tuple[str, ...]:
    """The pool's (shared) runner: the default tags on the default pool, the pool tags elsewhere, the pool's
    name, and with held slots every source's tag of the pool."""
    base = spec.runner.tags if pool == default else spec.runner.pool_tags
    sources = (
        (*spec.runner.pool_tags, *(source_tag(pool, s) for s in PIPELINE_SOURCES)) if holds_slots(spec, pool) else ()
    )
    return tuple(dict.fromkeys((*base, pool, *sources)))


def held_runner_tags(spec: PlatformSpec, pool: str) -> tuple[str, ...]:
    """The held slots' runner: only the pool tags and the pool's merge-request tag (never the default tags, so a
    job that extends no template never lands there)."""
    return tuple(dict.fromkeys((*spec.runner.pool_tags, source_tag(pool, MERGE_REQUEST_SOURCE))))


def expand(tags: Iterable[str], source: str) -> tuple[str, ...]:
    """Tags as GitLab expands them in a pipeline of `source` (only `CI_PIPELINE_SOURCE` is known here)."""
    return tuple(
        tag.replace("${" + SOURCE_VARIABLE + "}", source).replace("$" + SOURCE_VARIABLE, source) for tag in tags
    )


def expands_per_source(tags: Iterable[str]) -> bool:
    return any(SOURCE_VARIABLE in tag for tag in tags)
