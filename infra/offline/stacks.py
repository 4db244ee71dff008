"""Several stacks of one project: what two stacks must never share, checked offline before a plan.

Two stacks (`Pulumi.dev.yaml`, `Pulumi.prod.yaml`) that serve the same training project would fight over
the same GitLab and Scaleway objects if they shared: the templates file (each `up` rewrites the other's),
a CI/CD variable of the same key and environment scope (REGISTRY: jobs would pull the other stack's
images), the registry namespace (unique per region), the cluster name, or runner tags (a job of one stack's
templates would be taken by the other stack's runner, on the other cluster). Each stack names its own in
its config; docs/config-limits.md shows a second stack's settings.
"""

from __future__ import annotations

from pathlib import Path

from infra.config.errors import Problem, SpecError, key_path
from infra.config.platform import PlatformSpec
from infra.model.platform import Platform, load_platform
from infra.offline.stack_config import StackFileError, list_stacks, load_stack_config, stack_file


def _variables(spec: PlatformSpec) -> set[tuple[str, str]]:
    """(key, environment scope) of every CI/CD variable the stack manages."""
    return {(spec.ci.registry_variable, "*")} | {(k, v.environment_scope) for k, v in spec.ci.variables.items()}


def _variable_target(spec: PlatformSpec) -> str:
    return (spec.gitlab.group or "") if spec.ci.variables_scope == "group" else spec.gitlab.project


def _reaches(spec: PlatformSpec, project: str) -> bool:
    """Whether the stack's runner takes jobs of `project` (its own project, or every project of its group)."""
    if spec.gitlab.runner_scope == "group" and spec.gitlab.group:
        return project.startswith(f"{spec.gitlab.group}/")
    return spec.gitlab.project == project


def collisions(platform: Platform, other_platform: Platform, other_stack: str) -> list[Problem]:
    """What `platform` shares with the stack `other_stack` that it must not."""
    spec, other = platform.spec, other_platform.spec
    problems = []
    also = f"also used by stack {other_stack!r}"
    if spec.gitlab.project == other.gitlab.project and spec.ci.templates_path == other.ci.templates_path:
        problems.append(
            Problem(
                key_path("ci", "templates_path"),
                spec.ci.templates_path,
                f"{also} in {spec.gitlab.project}: each up would rewrite the other's templates; "
                "give each stack its own",
            )
        )
    if _variable_target(spec) == _variable_target(other):
        for key, scope in sorted(_variables(spec) & _variables(other)):
            path = ("ci", "registry_variable") if key == spec.ci.registry_variable else ("ci", "variables", key)
            problems.append(
                Problem(
                    key_path(*path),
                    key,
                    f"{also} in {_variable_target(spec)} (environment scope {scope!r}): one stack would overwrite "
                    "the other's value; use another key or environment_scope",
                )
            )
    if spec.region == other.region and spec.registry.namespace == other.registry.namespace:
        problems.append(
            Problem(
                key_path("registry", "namespace"),
                spec.registry.namespace,
                f"{also} in {spec.region} (namespace names are unique per region); give each stack its own",
            )
        )
    if spec.region == other.region and spec.cluster.name == other.cluster.name:
        problems.append(Problem(key_path("cluster", "name"), spec.cluster.name, f"{also} in {spec.region}"))
    crossed = any(
        second.runners_taking(profile.tags)
        for first, second in ((platform, other_platform), (other_platform, platform))
        if _reaches(second.spec, first.spec.gitlab.project)
        for profile in first.profiles.values()
    )
    if crossed:
        problems.append(
            Problem(
                key_path("runner", "tags"),
                list(spec.runner.tags),
                f"jobs of one stack would be taken by the runners of stack {other_stack!r} (same project, tags "
                "included in theirs): give each stack tags of its own (runner.tags and runner.pool_tags, e.g. "
                "[kapsule-prod, gpu] and [kapsule-prod])",
            )
        )
    return problems


def stack_collisions(platform: Platform, path: Path) -> list[Problem]:
    """Collisions of the stack in the stack file `path` with every other valid stack file beside it (a folder
    with a Pulumi.yaml: the project); invalid ones are left to their own plan."""
    root = path.resolve().parent
    if not (root / "Pulumi.yaml").is_file():
        return []
    problems = []
    for stack in list_stacks(root):
        if stack_file(stack, root).resolve() == path.resolve():
            continue
        try:
            other = load_platform(load_stack_config(stack, root).get("platform"))
        except (StackFileError, SpecError, FileNotFoundError):
            continue
        problems += collisions(platform, other, stack)
    return problems
