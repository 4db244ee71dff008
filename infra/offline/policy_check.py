"""The policy pack's rules over the offline plan: what `pulumi preview --policy-pack policy/` would say.

The pack (`policy/policies/`) stays independent of the program: it is loaded from its files, as the CLI
loads it, never imported by the program's code (but for its pure rule definitions, `definitions.py`, which the
spec's checks read). Each recorded registration is presented to the rules as
pulumi-policy's analyzer presents a resource: its inputs through a protobuf Struct (numbers become floats),
deserialised with secrets unwrapped, inside the unknown-checking proxy; stack rules see the outputs.

Caveats: the props are the program's raw inputs as the mocks recorded them, not what a provider's Check
returns (no provider defaults); nothing is unknown (the mocks resolve every output); read resources
(`Cluster.get`) are left out, as the engine analyses registrations. The real preview is the authority; this
makes a green plan mean a green preview for everything the program itself writes.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from google.protobuf import json_format, struct_pb2
from pulumi_policy import (
    EnforcementLevel,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    StackValidationArgs,
)
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.policy import _NotApplicableError
from pulumi_policy.proxy import unknown_checking_proxy

from infra.offline.harness import ProgramRun
from infra.offline.mocks import RecordedResource
from infra.offline.stack_config import PROJECT_ROOT

POLICY_PACKAGE = PROJECT_ROOT / "policy" / "policies"


@dataclass(frozen=True)
class Violation:
    """One rule's verdict on one resource (or the stack)."""

    policy: str
    resource: str
    message: str
    level: str
    """`mandatory` (blocks the preview), `advisory` or `disabled`."""

    def __str__(self) -> str:
        return f"policy {self.policy} ({self.level}): {self.resource or 'stack'}: {self.message}"


@cache
def load_pack(path: Path = POLICY_PACKAGE) -> ModuleType:
    """The pack's `pack` module (its rules and their levels), loaded from its files (the program never imports
    the pack)."""
    spec = importlib.util.spec_from_file_location(
        "gpu_ci_policy_rules", path / "__init__.py", submodule_search_locations=[str(path)]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the policy pack from {path}")
    package = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = package  # dataclasses and typing resolve the module by name while it loads
    spec.loader.exec_module(package)
    return importlib.import_module(f"{spec.name}.pack")


def engine_props(inputs: Mapping[str, Any]) -> Mapping[str, Any]:
    """`inputs` as `Analyze` hands them to a policy: protobuf Struct -> dict, secrets unwrapped, proxied."""
    struct = struct_pb2.Struct()
    struct.update(dict(inputs))
    return unknown_checking_proxy(deserialize_properties(json_format.MessageToDict(struct)))


def _options(resource: RecordedResource) -> PolicyResourceOptions:
    """A recorded registration's options as the analyzer presents them."""
    return PolicyResourceOptions(
        protect=resource.options["protect"],
        ignore_changes=resource.options["ignore_changes"],
        delete_before_replace=resource.options["delete_before_replace"],
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(0, 0, 0),
        additional_secret_outputs=resource.options["additional_secret_outputs"],
        parent=resource.parent or None,
    )


def analyzed(resource: RecordedResource, config: Mapping[str, Any] | None) -> ResourceValidationArgs:
    """A recorded registration as the analyzer would present it."""
    return ResourceValidationArgs(
        resource.type, engine_props(resource.inputs), resource.urn, resource.name, _options(resource), None, config
    )


def policy_report(
    run: ProgramRun, config: Mapping[str, Mapping[str, Any]] | None = None, pack: ModuleType | None = None
) -> list[Violation]:
    """Every violation, resource rules then stack rules, with the level the pack enforces it at."""
    pack = pack or load_pack()
    config = config or {}
    found: list[Violation] = []

    def level(policy: Any) -> str:
        chosen = policy.enforcement_level or pack.ENFORCEMENT_LEVEL
        return str(chosen.value if isinstance(chosen, EnforcementLevel) else chosen)

    managed = sorted((r for r in run.resources if not r.options["read"]), key=lambda r: r.urn)  # a stable order
    for resource in managed:
        props, opts = engine_props(resource.inputs), _options(resource)  # read-only for the rules: made once
        for policy in pack.RESOURCE_POLICIES:
            args = ResourceValidationArgs(
                resource.type, props, resource.urn, resource.name, opts, None, config.get(policy.name)
            )
            try:
                policy.validate(
                    args,
                    lambda message, urn=None, p=policy, r=resource: found.append(
                        Violation(p.name, r.name, message, level(p))
                    ),
                )
            except _NotApplicableError:
                continue
    by_urn = {r.urn: r.name for r in managed}
    stack = [
        PolicyResource(r.type, engine_props(r.outputs), r.urn, r.name, _options(r), None, None, [], {}) for r in managed
    ]
    for policy in pack.STACK_POLICIES:
        stack_args = StackValidationArgs(stack, config.get(policy.name))
        policy.validate(
            stack_args,
            lambda message, urn=None, p=policy: found.append(Violation(p.name, by_urn.get(urn, ""), message, level(p))),
        )
    return found
