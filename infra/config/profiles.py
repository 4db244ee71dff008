"""`platform.profiles`: workload profiles, the routing of model families to pools."""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from infra.config.base import (
    MAX_LIST,
    MAX_VARIABLES,
    CpuQuantity,
    MemoryQuantity,
    SpecModel,
    StrictFloat,
    is_ci_variable_name,
)

MAX_JOB_NAME = 255
"""GitLab's limit on a job name, the template's included."""
_TEMPLATE = re.compile(r"\.[a-z0-9][a-z0-9_-]*")
_FAMILY = re.compile(r"[a-z0-9][a-z0-9_]{0,62}")
_NAME_SPLIT = re.compile(r"[^a-z0-9_]+")


def name_tokens(name: str) -> frozenset[str]:
    """Words of a job name, which name a profile's `families`: `train-validate-dqn` -> train, validate, dqn;
    `hyperopt_ppo: [1]` -> hyperopt_ppo, hyperopt, ppo, 1 (families may hold `_`, so both the whole word and its
    parts count)."""
    words = [word for word in _NAME_SPLIT.split(name.lower()) if word]
    return frozenset(words) | {part for word in words for part in word.split("_") if part}


class ProfileSpec(SpecModel):
    """A class of CI jobs: which pool they run on and what each job asks of it."""

    pool: str
    """The GPU pool the profile's jobs run on."""
    families: tuple[str, ...] = Field(min_length=1, max_length=MAX_LIST)
    """Model families routed here (lower case): job names such as `train-validate-dqn` name them."""
    template: str
    """The hidden CI job that carries the routing (e.g. `.train-rl-base`); jobs `extends:` it."""
    cpu_request: CpuQuantity
    """CPU each job requests (`3000m`, `3`, `0.5`); a node's jobs must fit its allocatable CPU."""
    cpu_limit: CpuQuantity
    """CPU limit of each job (at least `cpu_request`)."""
    memory_request: MemoryQuantity
    """Memory each job requests (`8Gi`, `512Mi`); a node's jobs must fit its allocatable memory."""
    memory_limit: MemoryQuantity
    """Memory limit of each job (at least `memory_request`; overcommitting the node is a warning)."""
    gpu_memory_gb: StrictFloat | None = Field(None, gt=0, le=1024)
    """GPU memory a job needs, if known: checked against the per-replica share under MPS."""
    variables: dict[str, str] = Field(default_factory=dict, max_length=MAX_VARIABLES)
    """Extra CI variables of the profile's template (e.g. HYPEROPT_EPOCHS): committed in clear, so never a
    credential (those are `platform.ci.variables` with `secret:`)."""

    @field_validator("template")
    @classmethod
    def _template(cls, value: str) -> str:
        if len(value) > MAX_JOB_NAME or not _TEMPLATE.fullmatch(value):
            raise ValueError(
                f"a hidden GitLab CI job name starts with '.', then a-z, 0-9, '-' or '_' (at most {MAX_JOB_NAME})"
            )
        return value

    @field_validator("families")
    @classmethod
    def _families(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for family in value:
            if not _FAMILY.fullmatch(family):
                raise ValueError(f"family {family[:64]!r} must be 1-63 of lower case a-z, 0-9 or '_'")
        if len(set(value)) != len(value):
            raise ValueError("lists a family twice")
        return value

    @field_validator("variables")
    @classmethod
    def _variables(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not is_ci_variable_name(name):
                raise ValueError(f"variable name {name[:64]!r} is not a valid CI variable name")
            if name.startswith("KUBERNETES_"):
                raise ValueError(f"{name} is derived from the profile's requests and pool; do not set it here")
        return value
