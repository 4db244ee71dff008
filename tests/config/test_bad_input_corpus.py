"""Every invalid config of the corpus (tests/support/bad_inputs.py) fails with its one line where the program loads its
config (`load_platform`: validation, then the derived model), and so before any resource is registered."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest
from support.bad_inputs import ALL_CASES, Bad

from infra.config.errors import SpecError
from infra.model.platform import load_platform
from infra.offline.harness import run_program
from infra.offline.stack_config import StackConfig


def test_the_corpus_covers_the_kinds_of_bad_input_named_by_the_hardening_issue() -> None:
    ids = {case.id for case in ALL_CASES}
    assert len(ALL_CASES) >= 25
    assert {
        "typo-node-type",
        "unknown-pool",
        "min-above-max",
        "negative-size",
        "malformed-cpu",
        "request-bigger-than-node",
        "limit-below-request",
        "sharing-with-zero-replicas",
        "sharing-with-one-replica",
        "duplicate-template",
        "profile-without-pool",
        "default-pool-unknown",
        "empty-project",
        "empty-group",
        "pool-name-breaks-regex",
        "chart-version-not-a-version",
    } <= ids


@pytest.mark.parametrize("case", ALL_CASES, ids=[case.id for case in ALL_CASES])
def test_bad_config_is_one_line_naming_key_and_value(dev_platform: dict[str, Any], case: Bad) -> None:
    case.edit(dev_platform)
    with pytest.raises(SpecError) as caught:
        load_platform(dev_platform)
    assert str(caught.value) == case.line
    assert len(caught.value.problems) == 1


SAMPLED = [case for case in ALL_CASES if case.id in ("typo-node-type", "request-bigger-than-node")]
"""`__main__.py` calls `load_platform` before registering anything: the whole program is run for a validation
error and a derivation (fit) error, the two ways `load_platform` fails."""


@pytest.mark.parametrize("case", SAMPLED, ids=[case.id for case in SAMPLED])
def test_bad_config_stops_the_program_before_any_resource(
    dev_stack: StackConfig, dev_platform: dict[str, Any], case: Bad
) -> None:
    case.edit(dev_platform)
    run = run_program(dev_stack.with_values({"platform": dev_platform}), check=False)
    assert isinstance(run.error, pulumi.RunError), run.error
    assert str(run.error) == f"Pulumi.dev.yaml: {case.line}"  # named in the stack file it is in
    assert run.resources == []
    assert run.outputs == {}
