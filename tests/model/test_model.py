"""The derived platform: one runner per GPU pool, tags that route each template to exactly one runner,
allow-lists that admit a runner's own pool only, job slots, poll timeouts, maxima."""

from __future__ import annotations

import functools
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.specs import add_h100_pool, with_legacy_workload

from infra.config.errors import SpecError
from infra.job_overrides import pool_selector
from infra.model.platform import Platform, derive, load_platform
from infra.model.runners import go_quote_meta
from infra.offline.stack_config import load_stack_config

GOOD = {"ci-compile": "k8s.scaleway.com/pool-name=ci-compile", "ci-training": "k8s.scaleway.com/pool-name=ci-training"}
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


def test_dev_fleet_is_one_runner_per_gpu_pool(dev_platform: dict[str, Any]) -> None:
    platform = load_platform(dev_platform)
    assert list(platform.runners) == ["ci-compile", "ci-training"]
    compile_, training = platform.runners["ci-compile"], platform.runners["ci-training"]
    assert platform.default_pool == "ci-compile" and compile_.is_default and not training.is_default
    # Only the default pool's runner holds the default tags; each runner also holds its pool's name.
    assert compile_.tags == ("kapsule", "gpu", "ci-compile")
    assert training.tags == ("kapsule", "ci-training")
    # Job slots at max_size: L4 2 jobs x 1 node, L40S 4 jobs x 1 node; beyond them jobs wait in GitLab.
    assert (compile_.concurrent, training.concurrent) == (2, 4)
    # poll_timeout = cold start 15 min + the 10 min margin: a node that takes the cold start does not fail the job.
    # Each attempt may wait 49 min: 3 attempts x 49 >= the 2-h tolerance + a 15-min cold start + the 10-min margin.
    assert compile_.poll_timeout_seconds == training.poll_timeout_seconds == 49 * 60
    assert compile_.survives_outage_minutes == training.survives_outage_minutes == 3 * 49 - 15 - 10
    assert compile_.node_selector_regex == r"^k8s\.scaleway\.com/pool-name=(ci-compile)$"
    assert training.node_selector_regex == r"^k8s\.scaleway\.com/pool-name=(ci-training)$"
    # Each runner's maxima are its own profiles' sizes, no more.
    assert {k: v.text for k, v in compile_.maxima.items()} == {
        "cpu_request": "3000m",
        "cpu_limit": "3800m",
        "memory_request": "8Gi",
        "memory_limit": "16Gi",
    }
    assert {k: v.text for k, v in training.maxima.items()} == {
        "cpu_request": "1000m",
        "cpu_limit": "2000m",
        "memory_request": "16Gi",
        "memory_limit": "40Gi",
    }
    assert (compile_.release_name, training.release_name) == ("gitlab-runner", "gitlab-runner-ci-training")
    assert (compile_.resource_prefix, training.resource_prefix) == ("", "ci-training-")


def test_templates_reach_exactly_their_pools_runner(dev_platform: dict[str, Any]) -> None:
    platform = load_platform(dev_platform)
    rl, supervised = platform.profiles["rl"], platform.profiles["supervised"]
    assert rl.tags == ("kapsule", "gpu") and supervised.tags == ("kapsule", "ci-training")
    assert [r.pool for r in platform.runners_taking(rl.tags)] == ["ci-compile"]
    assert [r.pool for r in platform.runners_taking(supervised.tags)] == ["ci-training"]
    assert platform.runners_taking([]) == []  # no runner takes untagged jobs
    assert platform.runners_taking(["kapsule"]) == list(platform.runners.values())  # ambiguous: check-ci says so
    assert "KUBERNETES_NODE_SELECTOR_POOL" not in rl.variables
    assert supervised.variables["KUBERNETES_NODE_SELECTOR_POOL"] == "k8s.scaleway.com/pool-name=ci-training"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda p: p["runner"].update(pool_tags=["kapsule", "gpu"]),
            "platform.runner.pool_tags=['kapsule', 'gpu']: jobs of platform.runner.tags (['kapsule', 'gpu']) would "
            "also be taken by the runner(s) of ci-training",
        ),
        (
            lambda p: (
                p.update(pools={("gpu" if name == "ci-training" else name): pool for name, pool in p["pools"].items()})
                or p["profiles"]["supervised"].update(pool="gpu")
            ),
            "platform.runner.pool_tags=['kapsule']: jobs of platform.runner.tags (['kapsule', 'gpu']) would also be "
            "taken by the runner(s) of gpu",
        ),
    ],
    ids=["pool-tags-hold-the-default-tags", "pool-named-after-a-tag"],
)
def test_ambiguous_routing_is_refused_at_the_key(dev_platform: dict[str, Any], edit: Any, message: str) -> None:
    edit(dev_platform)
    with pytest.raises(SpecError) as caught:
        load_platform(dev_platform)
    assert any(line.startswith(message) for line in str(caught.value).splitlines()), str(caught.value)


def test_a_job_timeout_that_cannot_hold_an_attempt_is_refused(dev_platform: dict[str, Any]) -> None:
    """The job timeout counts the wait for a node: each attempt's poll_timeout plus the pool's longest job (as
    it runs on a full node: the supervised 40 min x 4 jobs x 0.34 GPU = 54.4 min) must fit in it."""
    with_legacy_workload(dev_platform)
    dev_platform["runner"]["job_timeout"] = "100m"
    with pytest.raises(SpecError) as caught:
        load_platform(dev_platform)
    assert str(caught.value) == (
        "platform.runner.job_timeout='100m': cannot hold an attempt on pool ci-training: its poll_timeout 49 min "
        "(runner.node_wait_tolerance=2h over 3 attempts, cold start 15 min) + its longest job 54 min "
        "(from platform.workload.profiles.supervised.minutes_per_job, on a full node); raise the timeout to more than "
        "104 min, or lower the tolerance"
    )
    dev_platform["runner"]["node_wait_tolerance"] = "1h"  # 3 x 29 min: 29 + 54.4 < 100
    assert load_platform(dev_platform).runners["ci-training"].survives_outage_minutes == 3 * 29 - 15 - 10


@pytest.mark.parametrize("margin", [0, -5, 121])
def test_the_poll_timeout_margin_is_never_zero_or_absurd(dev_platform: dict[str, Any], margin: int) -> None:
    dev_platform["runner"]["poll_timeout_margin_minutes"] = margin
    with pytest.raises(SpecError, match=rf"platform\.runner\.poll_timeout_margin_minutes={margin}: "):
        load_platform(dev_platform)


@pytest.mark.parametrize("pool", ["ci-compile", "ci-training"])
def test_each_runner_admits_its_own_pool_only(dev_platform: dict[str, Any], pool: str) -> None:
    runner = load_platform(dev_platform).runners[pool]
    for other, value in GOOD.items():
        assert runner.admits_node_selector(value) == (other == pool)
        assert go_match_string(runner.node_selector_regex, value) == (other == pool)


@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_allow_lists_refuse_hostile_values(dev_platform: dict[str, Any], value: str) -> None:
    for runner in load_platform(dev_platform).runners.values():
        assert not runner.admits_node_selector(value)
        assert not go_match_string(runner.node_selector_regex, value)


def test_an_unanchored_pattern_would_let_the_hostile_values_through() -> None:
    """Why the anchors matter: the same pattern without ^...$ admits most of HOSTILE."""
    unanchored = r"k8s\.scaleway\.com/pool-name=(ci-training)"
    leaked = [v for v in HOSTILE if go_match_string(unanchored, v)]
    assert "k8s.scaleway.com/pool-name=ci-training-evil" in leaked
    assert "x=k8s.scaleway.com/pool-name=ci-training" in leaked


_AFFIX = st.text(alphabet="abcikmnopstwxyz8-./=\n ", max_size=12)


@given(
    st.one_of(
        st.text(alphabet="abcikmnopstwxyz8-./=\n", max_size=45),
        st.tuples(_AFFIX, st.sampled_from(sorted(GOOD.values())), _AFFIX),
    )
)
def test_allow_lists_admit_exactly_their_pool(drawn: str | tuple[str, str, str]) -> None:
    """Random text, and the good values with random text around them: only the runner's exact value passes."""
    value = drawn if isinstance(drawn, str) else "".join(drawn)
    for pool, runner in _dev_platform().runners.items():
        assert runner.admits_node_selector(value) == (value == GOOD[pool])


def test_a_pool_added_by_config_gets_its_runner(dev_platform: dict[str, Any]) -> None:
    """An H100 pool and its profile: a config change, no code change."""
    before = load_platform(dev_platform)
    add_h100_pool(dev_platform, cold_start_minutes=20)
    platform = load_platform(dev_platform)
    h100 = platform.runners["ci-h100"]
    assert list(platform.runners) == ["ci-compile", "ci-h100", "ci-training"]
    assert h100.tags == ("kapsule", "ci-h100") and platform.profiles["llm"].tags == h100.tags
    assert h100.admits_node_selector(pool_selector("ci-h100"))
    assert not platform.runners["ci-compile"].admits_node_selector(pool_selector("ci-h100"))
    assert {k: v.text for k, v in h100.maxima.items()} == {
        "cpu_request": "8",
        "cpu_limit": "12",
        "memory_request": "64Gi",
        "memory_limit": "96Gi",
    }
    assert h100.concurrent == 1 and h100.poll_timeout_seconds == 50 * 60  # 3 x 50 >= 120 + 20 + 10
    assert platform.default_pool == "ci-compile"  # still the cheapest
    assert platform.runners["ci-compile"] == before.runners["ci-compile"]  # the others are untouched


def test_derive_is_pure_and_repeatable(dev_platform: dict[str, Any]) -> None:
    platform = load_platform(dev_platform)
    assert derive(platform.spec) == platform


def test_quote_meta_escapes_what_go_does() -> None:
    assert go_quote_meta("k8s.scaleway.com/pool-name") == r"k8s\.scaleway\.com/pool-name"
    assert go_quote_meta(r"a+b*c?(d)|[e]{f}^$\ ") == r"a\+b\*c\?\(d\)\|\[e\]\{f\}\^\$\\ "


@functools.cache
def _dev_platform() -> Platform:
    """Hypothesis tests cannot take function-scoped fixtures: the committed dev stack's platform, derived once."""
    return load_platform(load_stack_config("dev").get("platform"))


def test_the_gpu_nodes_the_spec_asks_for_at_once_are_what_the_quota_must_allow(dev_platform: dict[str, Any]) -> None:
    """Every GPU pool at max_size, plus an upgrade's surge: Scaleway's GPU quotas (per Organization) must allow it."""
    platform = load_platform(dev_platform)
    assert (platform.gpu_nodes_at_once, platform.gpus_at_once) == ({"L4-1-24G": 1, "L40S-1-48G": 1}, 2)
    dev_platform["pools"]["ci-training"]["max_size"] = 3
    dev_platform["pools"]["ci-training"]["upgrade_policy"] = {"max_surge": 1, "max_unavailable": 0}
    dev_platform["pools"]["ci-compile"]["max_size"] = 2
    platform = load_platform(dev_platform)
    assert (platform.gpu_nodes_at_once, platform.gpus_at_once) == ({"L4-1-24G": 2, "L40S-1-48G": 4}, 6)


@pytest.mark.parametrize(
    ("figures", "worst", "poll", "outage"),
    [
        ({}, 15, 49, 122),  # the median alone: today's derivation (3 x 49 >= 120 + 15 + 10)
        ({"cold_start_p90_minutes": 22}, 22, 51, 121),  # 3 x 51 >= 120 + 22 + 10
        ({"cold_start_p90_minutes": 22, "cold_start_max_minutes": 40}, 40, 57, 121),  # 3 x 57 >= 120 + 40 + 10
        ({"cold_start_max_minutes": 40}, 40, 57, 121),
    ],
    ids=["median", "p90", "max", "max-alone"],
)
def test_poll_timeout_and_the_outage_it_survives_come_from_the_worst_boot(
    dev_platform: dict[str, Any], figures: dict[str, int], worst: int, poll: int, outage: int
) -> None:
    """A node as slow as the slowest boot measured still finds its job waiting: not the median."""
    dev_platform["pools"]["ci-training"].update(figures)
    platform = load_platform(dev_platform)
    runner = platform.runners["ci-training"]
    assert platform.pools["ci-training"].worst_cold_start_minutes == worst
    assert (runner.poll_timeout_seconds, runner.survives_outage_minutes) == (60 * poll, outage)
    assert platform.runners["ci-compile"].poll_timeout_seconds == 49 * 60  # the other pool keeps its median's
