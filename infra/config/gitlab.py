"""`platform.gitlab`: where on GitLab the platform lives (the training project, its group, the runner's scope).

The GitLab provider itself is configured by provider config, not here: `gitlab:baseUrl` (the API URL,
`<url>/api/v4/`) and `gitlab:token` (a secret). `url` is what the runner manager connects to.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from pydantic import field_validator

from infra.config.base import SpecModel
from infra.config.errors import Problem, key_path

if TYPE_CHECKING:
    from infra.config.platform import PlatformSpec

_SEGMENT = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}"
_GROUP_PATH = re.compile(rf"{_SEGMENT}(/{_SEGMENT}){{0,19}}")
_PROJECT_PATH = re.compile(rf"{_SEGMENT}(/{_SEGMENT}){{1,20}}")
_URL = re.compile(r"https://[A-Za-z0-9.-]{1,253}(:\d{1,5})?(/[A-Za-z0-9._~-]+)*/?")
MAX_PATH = 255
"""GitLab's longest full path we take (GitLab: 255 characters per name, 20 nested groups)."""


class GitlabSpec(SpecModel):
    """The GitLab instance, the training project and the runner's scope."""

    url: str = "https://gitlab.com"
    """The instance the runner manager connects to (the chart's `gitlabUrl`)."""
    project: str
    """The training project (`group/project`): CI templates are committed there, its jobs use the runner."""
    group: str | None = None
    """Full path of a group; needed when the runner or the CI variables are group-scoped."""
    runner_scope: Literal["project", "group"] = "project"
    """`project`: the runner serves the training project only; `group`: every project of the group."""

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if len(value) > MAX_PATH or not _URL.fullmatch(value):
            raise ValueError("not an https URL of a GitLab instance like https://gitlab.example.com")
        if value.rstrip("/").endswith("/api/v4"):
            raise ValueError("is the API URL; give the instance URL (the provider's gitlab:baseUrl is the API URL)")
        return value

    @field_validator("project")
    @classmethod
    def _project(cls, value: str) -> str:
        if len(value) > MAX_PATH or not _PROJECT_PATH.fullmatch(value):
            raise ValueError("not a project path like ml-team/training")
        return value

    @field_validator("group")
    @classmethod
    def _group(cls, value: str | None) -> str | None:
        if value is not None and (len(value) > MAX_PATH or not _GROUP_PATH.fullmatch(value)):
            raise ValueError("not a group path like ml-team or ml-team/research")
        return value


def gitlab_problems(spec: PlatformSpec) -> list[Problem]:
    """A group scope needs the group, and the training project must sit in it."""
    gitlab, problems = spec.gitlab, []
    needs_group = [
        (scope_key, value)
        for scope_key, value in (
            ("gitlab.runner_scope", gitlab.runner_scope),
            ("ci.variables_scope", spec.ci.variables_scope),
        )
        if value == "group"
    ]
    if not needs_group:
        return []
    if gitlab.group is None:
        return [
            Problem(key_path("gitlab", "group"), None, f"{key} 'group' needs the group's full path")
            for key, _ in needs_group[:1]
        ]
    if not gitlab.project.startswith(f"{gitlab.group}/"):
        why = {
            "gitlab.runner_scope": "a group runner serves only the group's projects",
            "ci.variables_scope": "group variables reach only the group's projects",
        }[needs_group[0][0]]
        problems.append(
            Problem(key_path("gitlab", "project"), gitlab.project, f"is not in group {gitlab.group!r}: {why}")
        )
    return problems
