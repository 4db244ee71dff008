"""The training jobs of a repository's pipeline, as jobs to dispatch (pure): for `python -m infra simulate`.

The pipeline is read the way check-ci reads it (`infra.pipeline.resolve`); each job that extends a profile's
template is one job of that profile, queued at minute 0 in the file's order (GitLab's ids follow the YAML
order within a stage), running as long as the median of the profile's kind named by the job's prefix (its
class too), or the profile's `workload.profiles.<name>.minutes_per_job` (a merge-request job).

Its tags are those check-ci routes (`routed_tags`): expanded with its variables from every source and parsed as
GitLab does, in a pipeline of its class's source, with the first rules that may apply (a pipeline where every
`if:` holds: GitLab takes the first rule that matches); a job no rule creates is not queued. Tags only GitLab can
expand stay as written, so the job waits for a runner that never comes, as it would if GitLab expanded them to
nothing any runner holds.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from infra.config.workload import LEGACY_KIND, JobClass, ProfileLoadSpec
from infra.model.platform import Platform
from infra.model.routes import BATCH_SOURCE, MERGE_REQUEST_SOURCE
from infra.pipeline.environment import Workflow, environments, platform_variables
from infra.pipeline.resolve import ResolveError, resolve_file
from infra.pipeline.rules import platform_templates
from infra.pipeline.tags import routed_tags
from infra.quantity import exact_decimal
from infra.sim.platform_scenario import PlannedJob


def pipeline_jobs(platform: Platform, path: Path) -> list[PlannedJob]:
    """The training jobs of the pipeline file `path`; ValueError if a profile has no run time to use, or if
    the pipeline cannot be resolved (ResolveError)."""
    if not path.is_file():
        raise ValueError(f"no pipeline file {path}")
    pipeline = resolve_file(path, path.parent, platform_templates(platform))
    by_template = {profile.template: name for name, profile in platform.profiles.items()}
    workload = platform.spec.workload
    loads = workload.profiles if workload is not None else {}
    workflow, project = Workflow.of(pipeline), platform_variables(platform)
    jobs = []
    for name, job in pipeline.jobs.items():
        profiles = [by_template[t] for t in (job.templates if job.complete else ()) if t in by_template]
        try:
            found = environments(job, workflow, project) if profiles else []
        except ResolveError as err:
            raise ResolveError(f"{job.file}: {name}: {err}") from None
        if not found:
            continue
        profile = profiles[0]
        minutes, job_class, kind = _run_time(loads.get(profile), name)
        if minutes is None:
            raise ValueError(
                f"platform.workload.profiles.{profile}.minutes_per_job: needed to simulate job {name!r} (profile "
                f"{profile}; or a kind named after the job's prefix)"
            )
        source = MERGE_REQUEST_SOURCE if job_class == "merge_request" else BATCH_SOURCE
        tags = routed_tags(job.tags, found[0], source).tags
        jobs.append(PlannedJob(name, profile, minutes, tags=tags, job_class=job_class, kind=kind))
    return jobs


def _run_time(load: ProfileLoadSpec | None, job: str) -> tuple[Fraction | None, JobClass, str]:
    """(median minutes, class, kind) of a job: its kind's, the kind whose name prefixes the job's (`hyperopt-dqn`);
    else the profile's own minutes, as a merge-request job; (None, ...) when the workload says nothing."""
    if load is None:
        return None, "merge_request", LEGACY_KIND
    for kind_name, kind in sorted(load.kinds.items(), key=lambda item: -len(item[0])):
        if job == kind_name or job.startswith((f"{kind_name}-", f"{kind_name}_")):
            return exact_decimal(kind.minutes_per_job), kind.job_class, kind_name
    if load.minutes_per_job is not None:
        return exact_decimal(load.minutes_per_job), "merge_request", LEGACY_KIND
    return None, "merge_request", LEGACY_KIND
