"""`platform.ci`: the CI templates committed to the training project, and its CI/CD variables.

The templates' routing (`KUBERNETES_*`) comes from the profiles; this section holds where the file
goes and what every template shares (stage, image). Variables are plain values from this config or,
for secrets, the name of a stack secret (`pulumi config set --secret <name> ...`) read by `__main__.py`.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from infra.config.base import MAX_STRING, MAX_VARIABLES, CiVariableName, SpecModel

_CONFIG_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,127}")
_TEMPLATES_PATH = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_./-]{0,254}\.ya?ml")
TEMPLATES_DIR = ".gitlab/ci/"
"""The generated templates file lives under this folder of the training project, so it can never be the
project's own `.gitlab-ci.yml` or another file the project relies on."""
_STAGE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_ -]{0,254}")
_BRANCH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]{0,254}")

DEFAULT_REGISTRY_VARIABLE = "REGISTRY"
DERIVED_VARIABLES = (DEFAULT_REGISTRY_VARIABLE,)
"""CI/CD variables the program derives itself (REGISTRY: the registry namespace's endpoint)."""
RESERVED_CONFIG_KEYS = ("platform",)


def _shorthand(value: Any) -> Any:
    """`NAME: value` is a plain variable; an object gives its options."""
    if isinstance(value, dict):
        if len(value) > MAX_VARIABLES:  # refused before 60 000 entries are rewritten one by one
            raise ValueError(f"{len(value)} variables, more than gpu-ci's limit of {MAX_VARIABLES}")
        return {
            name: {"value": v} if isinstance(v, (str, int, float)) and not isinstance(v, bool) else v
            for name, v in value.items()
        }
    return value


class CiVariableSpec(SpecModel):
    """One CI/CD variable of the training project (or its group)."""

    value: str | None = Field(None, max_length=MAX_STRING)
    """The value, for a variable that is not a secret (never a credential: use `secret`)."""
    secret: str | None = None
    """Name of the stack secret holding the value (`pulumi config set --secret <name>`)."""
    protected: bool | None = None
    """Only protected branches and tags see it; None: true for secrets, false otherwise."""
    masked: bool | None = None
    """Hidden in job logs; None: true for secrets (GitLab refuses values it cannot mask)."""
    raw: bool = False
    """`$` in the value is not expanded."""
    description: str | None = Field(None, max_length=255)
    """The variable's description on GitLab."""
    environment_scope: str = Field("*", min_length=1, max_length=255)
    """Environments that see the variable (`*`: all)."""

    @model_validator(mode="after")
    def _one_source(self) -> CiVariableSpec:
        if (self.value is None) == (self.secret is None):
            raise ValueError("give exactly one of value or secret")
        return self

    @field_validator("secret")
    @classmethod
    def _secret(cls, value: str | None) -> str | None:
        if value is not None and (not _CONFIG_KEY.fullmatch(value) or value in RESERVED_CONFIG_KEYS):
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


CiVariables = Annotated[dict[str, CiVariableSpec], BeforeValidator(_shorthand), Field(max_length=MAX_VARIABLES)]


class CiSpec(SpecModel):
    """Where the generated templates go, what they share, and the CI/CD variables."""

    templates_path: str = ".gitlab/ci/gpu-ci-templates.yml"
    """Path of the generated templates in the training project (its `.gitlab-ci.yml` `include:`s it), under
    `.gitlab/ci/`; one per stack when several stacks serve one project."""
    adopt_existing_templates: bool = False
    """True: take over a templates file that already exists at `templates_path` (overwrite it on create).
    False: creating the file fails with GitLab's "file exists" rather than replace a file gpu-ci did not write."""
    templates_branch: str | None = None
    """Branch the templates are committed to; None: the project's default branch."""
    stage: str = "train"
    """Stage of every template's jobs."""
    image: str = "${REGISTRY}/training:${CI_COMMIT_SHA}"
    """Image of every template's jobs; ${REGISTRY} is the derived registry variable."""
    variables_scope: Literal["project", "group"] = "project"
    """Where the CI/CD variables go: the training project, or `gitlab.group`."""
    registry_variable: CiVariableName = DEFAULT_REGISTRY_VARIABLE
    """Key of the derived CI/CD variable holding the registry endpoint; a second stack on the same project
    needs its own (e.g. REGISTRY_PROD, with image ${REGISTRY_PROD}/training:...)."""
    variables: CiVariables = Field(default_factory=dict)
    """CI/CD variables by name: `NAME: value`, or an object with `value` or `secret` and options."""

    @field_validator("templates_path")
    @classmethod
    def _templates_path(cls, value: str) -> str:
        if not _TEMPLATES_PATH.fullmatch(value) or ".." in value.split("/") or value.startswith("./"):
            raise ValueError("not a repository path like .gitlab/ci/gpu-ci-templates.yml (relative, .yml or .yaml)")
        if not value.startswith(TEMPLATES_DIR) or "/./" in value or "//" in value:
            raise ValueError(
                f"must be a file under {TEMPLATES_DIR} (e.g. .gitlab/ci/gpu-ci-templates.yml): gpu-ci must never "
                "replace the project's .gitlab-ci.yml or another of its files"
            )
        return value

    @field_validator("templates_branch")
    @classmethod
    def _branch(cls, value: str | None) -> str | None:
        if value is not None and (not _BRANCH.fullmatch(value) or ".." in value):
            raise ValueError("not a branch name like main")
        return value

    @field_validator("stage")
    @classmethod
    def _stage(cls, value: str) -> str:
        if not _STAGE.fullmatch(value):
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
