"""gpu-ci: the Pulumi program. Reads the platform spec from stack config, derives the platform, builds it.

Everything that can fail or take time (validation, the derived model, the capacity and cost report) runs
before the first resource is registered: a bad config stops `pulumi up` before it changes anything.
"""

import os
from datetime import UTC, datetime

import pulumi

from infra.cloud.platform import build_platform
from infra.config.checks.versions import plan_day, version_problems
from infra.config.credentials import PROVIDER_CREDENTIAL_KEYS
from infra.config.errors import SpecError
from infra.config.registry import committed_placeholder
from infra.config.stack_keys import in_file, key_problems, missing_secret, missing_spec, stack_file_name, unread_keys
from infra.model.platform import load_platform
from infra.render.report import stack_report
from infra.sim.week import simulate_week

config = pulumi.Config()
stack_file = stack_file_name(pulumi.get_stack())  # every config error names the file it is in
# every key the engine handed over (the SDK keeps them in its settings or, from some hosts, in $PULUMI_CONFIG)
stack_keys = {*pulumi.runtime.config.get_config_env(), *pulumi.runtime.config.CONFIG.get()}
if problems := key_problems(stack_keys, config.name):  # a typo'd namespace or key, named before anything reads it
    raise pulumi.RunError(in_file(stack_file, "\n".join(problems)))
if pulumi.runtime.get_config(config.full_key("platform")) is None:  # one line, not the SDK's two (a tab, a command)
    raise pulumi.RunError(in_file(stack_file, missing_spec(config.name)))
try:
    raw = config.require_object("platform")
except ValueError as err:  # JSON the engine passed but Python will not read (e.g. a 5000-digit number)
    why = f"platform: not a readable config object ({str(err).splitlines()[0][:200]})"
    raise pulumi.RunError(in_file(stack_file, why)) from None
now = datetime.now(UTC)  # the clock, read once like the config: the version check and the warm placeholders use it
try:  # Scaleway withdraws Kubernetes versions by date: checked against the day of the run ($GPU_CI_TODAY: another)
    today = plan_day(os.environ, now.date())
except ValueError as err:
    raise pulumi.RunError(str(err)) from None
try:
    platform = load_platform(raw)
    dated = version_problems(platform.spec, today)
    if errors := [problem for problem in dated if problem.severity == "error"]:
        raise SpecError(errors)
    # the workload's first simulated week: the outputs and `plan` read it. The target is judged over
    # platform.slo.weeks weeks by `plan` and the MR note (infra.sim.weeks), not at every `pulumi up`
    day = simulate_week(platform)
    report = stack_report(platform, day)
except SpecError as err:
    raise pulumi.RunError(in_file(stack_file, str(err))) from None  # one line per problem, no traceback
if problems := key_problems(stack_keys, config.name, platform.spec.secret_config_keys()):  # a secret nothing reads
    raise pulumi.RunError(in_file(stack_file, "\n".join(problems)))

for warning in [*platform.warnings, *dated]:  # the spec's, then the version's
    pulumi.log.warn(str(warning))
for unread in unread_keys(stack_keys, config.name, platform.spec.secret_config_keys()):
    pulumi.log.warn(in_file(stack_file, unread))

secrets = {}  # the stack secrets the spec names (cache keys, secret CI variables), kept Pulumi secrets
for key in platform.spec.secret_config_keys():
    if placeholder := committed_placeholder(config.full_key(key), pulumi.runtime.get_config(config.full_key(key))):
        raise pulumi.RunError(in_file(stack_file, placeholder))  # the bootstrap not done: named, before any resource
    if pulumi.runtime.get_config(config.full_key(key)) is None:  # a missing one stops here, before any resource
        raise pulumi.RunError(in_file(stack_file, missing_secret(config.name, key)))
    secrets[key] = config.require_secret(key)
    if not pulumi.runtime.is_config_secret(config.full_key(key)):
        plain = f"{config.full_key(key)} is stored in plain text: pulumi config set --secret {key} ..."
        raise pulumi.RunError(in_file(stack_file, plain))

for key in PROVIDER_CREDENTIAL_KEYS:  # a provider credential typed in clear sits in the stack file, in git
    if pulumi.runtime.get_config(key) is not None and not pulumi.runtime.is_config_secret(key):
        plain = f"{key} is stored in plain text: pulumi config set --secret {key} ..."
        raise pulumi.RunError(in_file(stack_file, plain))

# warm placeholders are created at the size of the window open now
for name, value in build_platform(platform, secrets, report, now=now).items():
    pulumi.export(name, value)
