"""`load_spec(raw)`: the `platform` object of the stack config, validated, as a frozen `PlatformSpec`.

Three passes, each refusing with one `platform.<key>=<value>: <reason>` line per problem (`SpecError`):
what is too large to even validate (`errors.raw_problems`: huge numbers, huge objects, credentials typed
anywhere), then the fields' types and bounds (pydantic, on each section's model), then the rules between
fields and sections (`infra.config.checks`, run by `spec_problems`). What only the derived platform shows
is checked by `infra.model.checks` (`infra.model.platform.load_platform` does both).
"""

from __future__ import annotations

from pydantic import ValidationError

from infra.config.checks.infrastructure import infrastructure_problems
from infra.config.checks.jobs import job_problems
from infra.config.errors import Problem, SpecError, key_path, problems_from_validation, raw_problems
from infra.config.platform import PlatformSpec


def load_spec(raw: object) -> PlatformSpec:
    """Parse and validate the `platform` config object; raise SpecError listing every problem."""
    if not isinstance(raw, dict):
        raise SpecError([Problem("platform", raw, "must be an object (set it with pulumi config set --path)")])
    if early := raw_problems(raw):  # numbers too large to even print, objects too large to walk
        raise SpecError(early)
    try:
        spec = PlatformSpec.model_validate(raw)
    except ValidationError as exc:
        raise SpecError(problems_from_validation(exc, raw, PlatformSpec)) from None
    problems = spec_problems(spec)
    if problems:
        raise SpecError(problems)
    return spec


def spec_problems(spec: PlatformSpec) -> list[Problem]:
    """Every rule of `infra.config.checks` (its docstring lists them), in the order of the spec's sections."""
    if not spec.profiles:
        return [Problem(key_path("profiles"), {}, "no profile: the runner routes jobs by profile, give at least one")]
    return [*infrastructure_problems(spec), *job_problems(spec)]
