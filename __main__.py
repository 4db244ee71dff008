"""gpu-ci: the Pulumi program. Reads the platform spec from stack config, builds it, exports the results."""

import pulumi

from infra.cloud.platform import build_platform
from infra.spec.errors import SpecError
from infra.spec.platform import load_spec

try:
    spec = load_spec(pulumi.Config().require_object("platform"))
except SpecError as err:
    raise pulumi.RunError(str(err)) from None  # one line per problem, no traceback

for warning in spec.warnings():
    pulumi.log.warn(str(warning))

for name, value in build_platform(spec).items():
    pulumi.export(name, value)
