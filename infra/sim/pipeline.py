"""The training jobs of a repository's pipeline, as jobs to dispatch (pure): for `python -m infra simulate`.

The pipeline is read the way check-ci reads it (`infra.pipeline.resolve`); each job that extends a profile's
template is one job of that profile, queued at minute 0 in the file's order (GitLab's ids follow the YAML
order within a stage), running as long as the profile's `workload.profiles.<name>.minutes_per_job`.
"""

from __future__ import annotations

from pathlib import Path

from infra.model.platform import Platform
from infra.pipeline.resolve import resolve_file
from infra.pipeline.rules import platform_templates
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
    minutes = {
        name: exact_decimal(load.minutes_per_job) for name, load in (workload.profiles.items() if workload else ())
    }
    jobs = []
    for name, job in pipeline.jobs.items():
        profiles = [by_template[t] for t in (job.templates if job.complete else ()) if t in by_template]
        if not profiles:
            continue
        profile = profiles[0]
        if profile not in minutes:
            raise ValueError(
                f"platform.workload.profiles.{profile}.minutes_per_job: needed to simulate job {name!r} (profile "
                f"{profile})"
            )
        jobs.append(PlannedJob(name, profile, minutes[profile], tags=job.tags or None))
    return jobs
