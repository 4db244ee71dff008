"""The runner's limits derived from the spec: default pool, the anchored allow-list, the maxima."""

from __future__ import annotations

import functools
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from infra.config.platform import load_spec
from infra.offline.stack_config import load_stack_config
from infra.routing import (
    RunnerLimits,
    go_quote_meta,
    poll_timeout_seconds,
    pool_selector,
    runner_concurrent,
    runner_limits,
)

GOOD = ["k8s.scaleway.com/pool-name=ci-compile", "k8s.scaleway.com/pool-name=ci-training"]
HOSTILE = [
    "k8s.scaleway.com/pool-name=ci-training-evil",  # a prefix of an allowed pool is not the pool
    "k8s.scaleway.com/pool-name=ci-trainingX",
    "k8s.scaleway.com/pool-name=xci-training",
    "x=k8s.scaleway.com/pool-name=ci-training",  # the runner matches the whole key=value, unanchored
    "k8s.scaleway.com/pool-name=ci-training\n",  # Go's $ is end of text
    "k8s.scaleway.com/pool-name=ci-training,node-role=x",
    "k8sXscaleway.com/pool-name=ci-compile",  # unescaped dots would match any character
    "k8s.scaleway.com/pool-name=system",  # an existing pool no profile targets
    "k8s.scaleway.com/pool-name=",
    "kubernetes.io/hostname=gpu-node-1",
    "",
]


def go_match_string(pattern: str, value: str) -> bool:
    """Go's regexp.MatchString, for the patterns we render: unanchored search, `$` only at the end of text."""
    return re.search(pattern.replace("$", r"\Z"), value) is not None


def test_dev_limits_are_the_design(dev_platform: dict[str, Any]) -> None:
    spec = load_spec(dev_platform)
    limits = runner_limits(spec)
    assert limits.default_pool == "ci-compile"
    assert limits.pools == ("ci-compile", "ci-training")
    assert limits.node_selector_regex == r"^k8s\.scaleway\.com/pool-name=(ci-compile|ci-training)$"
    # The largest ask of any profile: rl's CPU (3000m/3800m), supervised's memory (16Gi/40Gi).
    assert {k: v.text for k, v in limits.maxima.items()} == {
        "cpu_request": "3000m",
        "cpu_limit": "3800m",
        "memory_request": "16Gi",
        "memory_limit": "40Gi",
    }
    # A job naming no pool lands on ci-compile and gets the rl profile's size.
    assert {k: v.text for k, v in limits.defaults.items()} == {
        "cpu_request": "3000m",
        "cpu_limit": "3800m",
        "memory_request": "8Gi",
        "memory_limit": "16Gi",
    }
    assert runner_concurrent(spec) == 2 + 4  # L4: 2 jobs x 1 node; L40S: 4 jobs x 1 node
    assert poll_timeout_seconds(spec) == 15 * 60  # the pools' cold start from zero


@pytest.mark.parametrize("value", GOOD)
def test_allow_list_admits_the_profile_pools(dev_platform: dict[str, Any], value: str) -> None:
    limits = runner_limits(load_spec(dev_platform))
    assert limits.admits_node_selector(value)
    assert go_match_string(limits.node_selector_regex, value)


@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_allow_list_refuses_hostile_values(dev_platform: dict[str, Any], value: str) -> None:
    limits = runner_limits(load_spec(dev_platform))
    assert not limits.admits_node_selector(value)
    assert not go_match_string(limits.node_selector_regex, value)


def test_an_unanchored_pattern_would_let_the_hostile_values_through() -> None:
    """Why the anchors matter: the same alternation without ^...$ admits most of HOSTILE."""
    unanchored = r"k8s\.scaleway\.com/pool-name=(ci-compile|ci-training)"
    leaked = [v for v in HOSTILE if go_match_string(unanchored, v)]
    assert "k8s.scaleway.com/pool-name=ci-training-evil" in leaked
    assert "x=k8s.scaleway.com/pool-name=ci-training" in leaked


_AFFIX = st.text(alphabet="abcikmnopstwxyz8-./=\n ", max_size=12)


@given(
    st.one_of(st.text(alphabet="abcikmnopstwxyz8-./=\n", max_size=45), st.tuples(_AFFIX, st.sampled_from(GOOD), _AFFIX))
)
def test_allow_list_admits_exactly_the_profile_pools(drawn: str | tuple[str, str, str]) -> None:
    """Random text, and the good values with random text around them: only the exact good values pass."""
    value = drawn if isinstance(drawn, str) else "".join(drawn)
    assert _dev_limits().admits_node_selector(value) == (value in GOOD)


def test_a_new_profile_pool_joins_the_allow_list_and_the_maxima(dev_platform: dict[str, Any]) -> None:
    dev_platform["pools"]["ci-h100"] = {"node_type": "H100-1-80G", "zone": "fr-par-2", "cold_start_minutes": 20}
    dev_platform["profiles"]["llm"] = {
        "pool": "ci-h100",
        "families": ["llama"],
        "template": ".train-llm-base",
        "cpu_request": "8",
        "cpu_limit": "12",
        "memory_request": "64Gi",
        "memory_limit": "96Gi",
    }
    spec = load_spec(dev_platform)
    limits = runner_limits(spec)
    assert limits.pools == ("ci-compile", "ci-h100", "ci-training")
    assert limits.admits_node_selector(pool_selector("ci-h100"))
    assert {k: v.text for k, v in limits.maxima.items()} == {
        "cpu_request": "8",
        "cpu_limit": "12",
        "memory_request": "64Gi",
        "memory_limit": "96Gi",
    }
    assert limits.default_pool == "ci-compile"  # still the cheapest
    assert poll_timeout_seconds(spec) == 20 * 60
    assert runner_concurrent(spec) == 2 + 4 + 1


def test_configured_concurrency_wins(dev_platform: dict[str, Any]) -> None:
    dev_platform["runner"]["concurrent"] = 3
    assert runner_concurrent(load_spec(dev_platform)) == 3


def test_quote_meta_escapes_what_go_does() -> None:
    assert go_quote_meta("k8s.scaleway.com/pool-name") == r"k8s\.scaleway\.com/pool-name"
    assert go_quote_meta(r"a+b*c?(d)|[e]{f}^$\ ") == r"a\+b\*c\?\(d\)\|\[e\]\{f\}\^\$\\ "


@functools.cache
def _dev_limits() -> RunnerLimits:
    """Hypothesis tests cannot take function-scoped fixtures: the committed dev stack's limits, read once."""
    return runner_limits(load_spec(load_stack_config("dev").get("platform")))
