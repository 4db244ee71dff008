"""`platform.gitlab`: where on GitLab the platform lives (the training project, its group, the runner's scope).

The GitLab provider itself is configured by provider config, not here: `gitlab:baseUrl` (the API URL,
`<url>/api/v4/`) and `gitlab:token` (a secret). `url` is what the runner manager connects to.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import field_validator

from infra.config.base import SpecModel

_SEGMENT = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}"
_GROUP_PATH = re.compile(rf"{_SEGMENT}(/{_SEGMENT}){{0,19}}")
_PROJECT_PATH = re.compile(rf"{_SEGMENT}(/{_SEGMENT}){{1,20}}")
_URL = re.compile(r"https://[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?(/[A-Za-z0-9._~-]+)*/?")
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
