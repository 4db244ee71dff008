"""How a rule reads a resource: its inputs as the analyzer hands them over, and the policy's config.

What a policy sees, with pulumi-policy 1.21 (`_PolicyAnalyzerServicer.Analyze`):
- `args.props` are the resource's inputs (camelCase wire names) after the provider's `Check`, in a proxy
  that raises `UnknownValueError` on a value not known during preview (the engine then reports the policy
  as not run for that resource, as an advisory note). Fields read only to name things go through `known`.
- Secret inputs arrive **unwrapped**: the engine sends them marked secret, but the SDK deserialises them
  without `proxy_secrets`, so a policy cannot tell a secret value from a plain one. The CI variable rule
  therefore judges by the variable's name and the shape of its value.
- Numbers arrive as floats (protobuf `Struct`): `minSize` is `0.0`. Messages print them as integers.
- Stack policies see the resources' outputs, after an `up` has changed them (preview runs them first).
No message ever contains a variable's value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import ResourceValidationArgs, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError


def config_value(args: ResourceValidationArgs | StackValidationArgs, key: str, default: Any) -> Any:
    """The policy's config value (`--policy-pack-config`), or its default when unset."""
    value = (args.get_config() or {}).get(key)
    return default if value is None else value


def config_list(args: ResourceValidationArgs | StackValidationArgs, key: str) -> list[Any] | None:
    """A list setting of the policy's config, or None when unset (the rule's default applies: `definitions`)."""
    value = config_value(args, key, None)
    return None if value is None else as_list(value)


def known(mapping: Any, *path: str) -> Any:
    """The value at `path`, or None if it is missing or not known yet (for naming things, not for judging)."""
    value = mapping
    try:
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
    except UnknownValueError:
        return None
    return value


def show(value: Any) -> str:
    """A value as a message shows it: integral floats (protobuf numbers) as integers, strings quoted."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if value is None:
        return "unset"
    return repr(value) if isinstance(value, str) else str(value)


def physical_name(args: ResourceValidationArgs) -> str:
    """The physical name when the resource has one, else its Pulumi name."""
    name = known(args.props, "name")
    return name if isinstance(name, str) and name else args.name


def as_list(value: Any) -> list[Any]:
    """The items of a list-like input; [] for anything else (a string, a mapping, None, a scalar)."""
    return list(value) if isinstance(value, Sequence) and not isinstance(value, str) else []
