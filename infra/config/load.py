"""`load_spec(raw)`: the `platform` object of the stack config, validated, as a frozen `PlatformSpec`.

Three passes, each refusing with one `platform.<key>=<value>: <reason>` line per problem (`SpecError`):
what is too large to even validate (`errors.raw_problems`: huge numbers, huge objects, credentials typed
anywhere), then the fields' types and bounds (pydantic, on each section's model), then the rules between
fields and sections (`infra.config.checks`). What only the derived platform shows is checked by
`infra.model.checks` (`infra.model.platform.load_platform` does both).
"""

from __future__ import annotations

from pydantic import ValidationError

from infra.config.checks import spec_problems
from infra.config.errors import Problem, SpecError, problems_from_validation, raw_problems
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
