"""Assertions that seal a test: the resource a test names is exactly one registration of that type and name,
with those inputs; the whole run registered exactly these counts of each type (a stray resource fails)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from infra.cloud.names import T
from infra.offline.harness import ProgramRun
from infra.offline.mocks import RecordedResource


def assert_res(run: ProgramRun, type_token: T, resource_name: str, **inputs: Any) -> RecordedResource:
    """The one registration of `type_token` named `resource_name` (its Pulumi name), whose (unwrapped) inputs
    hold each given key/value (`name=` is then the physical name input)."""
    resource = run.one(type_token, resource_name)
    name = resource_name
    plain = resource.plain_inputs
    for key, value in inputs.items():
        assert key in plain, f"{name}: no input {key!r} (inputs: {sorted(plain)})"
        assert plain[key] == value, f"{name}.{key} = {plain[key]!r}, expected {value!r}"
    return resource


def assert_res_counts(run: ProgramRun, expected: Mapping[T, int]) -> None:
    """Every type the run registered, and how many of each: nothing more, nothing less (a failure shows
    (registered, expected) for each type that differs)."""
    counts = Counter(T(resource.type) for resource in run.resources)
    assert dict(counts) == dict(expected), {
        t.name: (counts.get(t, 0), expected.get(t, 0))
        for t in set(counts) | set(expected)
        if counts.get(t, 0) != expected.get(t, 0)
    }
