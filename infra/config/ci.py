"""`platform.ci`: the CI templates committed to the training project, and its CI/CD variables.

The templates' routing (`KUBERNETES_*`) comes from the profiles; this section holds where the file
goes and what every template shares (stage, image). Variables are plain values from this config or,
for secrets, the name of a stack secret (`pulumi config set --secret <name> ...`) read by `__main__.py`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from infra.config.base import SpecModel
from infra.config.errors import Problem, key_path

if TYPE_CHECKING:
    from infra.config.platform import PlatformSpec

_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CONFIG_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_TEMPLATES_PATH = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_./-]*\.ya?ml$")
_STAGE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_ -]*$")
_BRANCH = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./-]*$")

DERIVED_VARIABLES = ("REGISTRY",)
"""CI/CD variables the program derives itself (REGISTRY: the registry namespace's endpoint)."""
RESERVED_CONFIG_KEYS = ("platform",)


def _shorthand(value: Any) -> Any:
    """`NAME: value` is a plain variable; an object gives its options."""
    if isinstance(value, dict):
        return {
            name: {"value": v} if isinstance(v, (str, int, float)) and not isinstance(v, bool) else v
            for name, v in value.items()
        }
    return value


class CiVariableSpec(SpecModel):
    """One CI/CD variable of the training project (or its group)."""

    value: str | None = None
    """The value, for a variable that is not a secret."""
    secret: str | None = None
    """Name of the stack secret holding the value (`pulumi config set --secret <name>`)."""
    protected: bool | None = None
    """Only protected branches and tags see it; None: true for secrets, false otherwise."""
    masked: bool | None = None
    """Hidden in job logs; None: true for secrets (GitLab refuses values it cannot mask)."""
    raw: bool = False
    """`$` in the value is not expanded."""
    description: str | None = None
    """The variable's description on GitLab."""
    environment_scope: str = "*"
    """Environments that see the variable (`*`: all)."""

    @model_validator(mode="after")
    def _one_source(self) -> CiVariableSpec:
        if (self.value is None) == (self.secret is None):
            raise ValueError("give exactly one of value or secret")
        return self

    @field_validator("secret")
    @classmethod
    def _secret(cls, value: str | None) -> str | None:
        if value is not None and (not _CONFIG_KEY.match(value) or value in RESERVED_CONFIG_KEYS):
            raise ValueError("not a stack config key like wandb_api_key (letters, digits, '_')")
        return value

    @property
    def is_secret(self) -> bool:
        return self.secret is not None

    @property
    def effective_protected(self) -> bool:
        return self.is_secret if self.protected is None else self.protected

    @property
    def effective_masked(self) -> bool:
        return self.is_secret if self.masked is None else self.masked


CiVariables = Annotated[dict[str, CiVariableSpec], BeforeValidator(_shorthand)]


class CiSpec(SpecModel):
    """Where the generated templates go, what they share, and the CI/CD variables."""

    templates_path: str = ".gitlab/ci/gpu-ci-templates.yml"
    """Path of the generated templates in the training project (its `.gitlab-ci.yml` `include:`s it)."""
    templates_branch: str | None = None
    """Branch the templates are committed to; None: the project's default branch."""
    stage: str = "train"
    """Stage of every template's jobs."""
    image: str = "${REGISTRY}/training:${CI_COMMIT_SHA}"
    """Image of every template's jobs; ${REGISTRY} is the derived registry variable."""
    variables_scope: Literal["project", "group"] = "project"
    """Where the CI/CD variables go: the training project, or `gitlab.group`."""
    variables: CiVariables = Field(default_factory=dict)
    """CI/CD variables by name: `NAME: value`, or an object with `value` or `secret` and options."""

    @field_validator("templates_path")
    @classmethod
    def _templates_path(cls, value: str) -> str:
        if not _TEMPLATES_PATH.match(value) or ".." in value.split("/") or value.startswith("./"):
            raise ValueError("not a repository path like .gitlab/ci/gpu-ci-templates.yml (relative, .yml or .yaml)")
        return value

    @field_validator("templates_branch")
    @classmethod
    def _branch(cls, value: str | None) -> str | None:
        if value is not None and (not _BRANCH.match(value) or ".." in value):
            raise ValueError("not a branch name like main")
        return value

    @field_validator("stage")
    @classmethod
    def _stage(cls, value: str) -> str:
        if not _STAGE.match(value):
            raise ValueError("not a stage name like train")
        return value

    @field_validator("image")
    @classmethod
    def _image(cls, value: str) -> str:
        if not value.strip() or any(c.isspace() for c in value):
            raise ValueError("not an image reference like ${REGISTRY}/training:${CI_COMMIT_SHA}")
        return value

    def secret_config_keys(self) -> list[str]:
        """Stack secrets the variables read, sorted."""
        return sorted({v.secret for v in self.variables.values() if v.secret is not None})


def ci_problems(spec: PlatformSpec) -> list[Problem]:
    """Variable names GitLab would refuse, or that would shadow what gpu-ci or GitLab set."""
    problems = []
    for name, variable in sorted(spec.ci.variables.items()):
        reason = None
        if not _VARIABLE.match(name):
            reason = "not a valid CI variable name (letters, digits, '_')"
        elif name in DERIVED_VARIABLES:
            reason = f"{name} is derived by gpu-ci; do not set it here"
        elif name.startswith("KUBERNETES_"):
            reason = "would size or route every job; routing comes from the profiles' templates"
        elif name.startswith(("CI_", "GITLAB_")):
            reason = "would shadow a GitLab predefined variable"
        if reason:
            shown = variable.value if variable.value is not None else {"secret": variable.secret}
            problems.append(Problem(key_path("ci", "variables", name), shown, reason))
    return problems
