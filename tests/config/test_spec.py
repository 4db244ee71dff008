"""The platform spec: the dev stack is valid, and each kind of bad input is one line naming key and value."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from infra.config.errors import SpecError
from infra.config.load import load_spec
from infra.model.platform import load_platform

Edit = Callable[[dict[str, Any]], None]


def test_dev_stack_is_the_design(dev_platform: dict[str, Any]) -> None:
    spec = load_spec(dev_platform)
    assert spec.gpu_pools() == ["ci-compile", "ci-training"]
    assert spec.always_on_pools() == ["system"]
    assert spec.pools["ci-compile"].node_type == "L4-1-24G"
    assert spec.pools["ci-training"].node_type == "L40S-1-48G"
    for name in ("ci-compile", "ci-training"):
        pool = spec.pools[name]
        assert (pool.min_size, pool.max_size, pool.autoscaling, pool.initial_size) == (0, 1, True, 0)
    rl, supervised = spec.profiles["rl"], spec.profiles["supervised"]
    assert (rl.pool, rl.families, rl.template) == ("ci-compile", ("dqn", "ppo"), ".train-rl-base")
    assert (rl.cpu_request.millicores, rl.cpu_limit.millicores) == (3000, 3800)
    assert (rl.memory_request.bytes, rl.memory_limit.bytes) == (8 * 2**30, 16 * 2**30)
    assert rl.variables == {"HYPEROPT_EPOCHS": "8"}
    assert supervised.pool == "ci-training"
    assert set(supervised.families) == {"tft", "mamba2", "tggn", "tlob", "liquid", "kan", "xlstm", "diffusion"}
    assert (supervised.cpu_request.millicores, supervised.memory_limit.bytes) == (1000, 40 * 2**30)
    assert spec.pools["ci-compile"].gpu_sharing.replicas_per_gpu == 2
    assert spec.pools["ci-training"].gpu_sharing.replicas_per_gpu == 4


def test_dev_stack_warns_about_memory_overcommit(dev_platform: dict[str, Any]) -> None:
    """And about the pinned chart's job pods, which an upgrade's drain evicts (test_render_runner.py)."""
    warnings = [str(w) for w in load_platform(dev_platform).warnings]
    assert [w.split(":")[0] for w in warnings] == [
        "platform.profiles.supervised.memory_limit='40Gi'",
        "platform.runner.chart_version='0.86.0'",
    ]
    assert warnings[0] == (
        "platform.profiles.supervised.memory_limit='40Gi': x 4 jobs per node = 160 GiB overcommits "
        "one L40S-1-48G node's allocatable 92 GiB (OOM if all hit the limit)"
    )


def test_catalogue_override_changes_price_and_adds_types(dev_platform: dict[str, Any]) -> None:
    dev_platform["node_types"] = {
        "L4-1-24G": {"eur_per_hour": "0.80"},
        "H200-1-141G": {"vcpus": 24, "memory_gib": 240, "gpus": 1, "eur_per_hour": "4.0", "gpu_memory_gb": 141},
    }
    dev_platform["pools"]["ci-big"] = {"node_type": "H200-1-141G", "zone": "fr-par-2"}
    spec = load_spec(dev_platform)
    assert float(spec.catalog["L4-1-24G"].eur_per_hour) == 0.80
    assert spec.catalog["L4-1-24G"].vcpus == 8  # fields not given keep the catalogue's value
    assert spec.catalog["H200-1-141G"].is_gpu


def test_reserve_override_changes_allocatable(dev_platform: dict[str, Any]) -> None:
    dev_platform["allocatable_reserve"] = {"cpu": "500m", "memory": "2Gi"}
    dev_platform["node_types"] = {"L40S-1-48G": {"reserve": {"cpu": "2", "memory": "8Gi"}}}
    spec = load_spec(dev_platform)
    assert spec.catalog["L4-1-24G"].allocatable_millicores == 7500
    assert spec.catalog["L40S-1-48G"].allocatable_memory_bytes == 88 * 2**30


def test_several_problems_give_one_line_each(dev_platform: dict[str, Any]) -> None:
    dev_platform["pools"]["ci-compile"]["node_type"] = "L5"
    dev_platform["profiles"]["supervised"]["cpu_limit"] = "500m"
    with pytest.raises(SpecError) as caught:
        load_spec(dev_platform)
    lines = str(caught.value).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("platform.pools.ci-compile.node_type='L5': unknown node type")
    assert lines[1] == "platform.profiles.supervised.cpu_limit='500m': is below cpu_request=1000m"


def test_not_an_object() -> None:
    with pytest.raises(SpecError, match=r"^platform='x': must be an object"):
        load_spec("x")


def test_mps_replicas_are_capped_by_nvidia(dev_platform: dict[str, Any]) -> None:
    dev_platform["pools"]["ci-training"]["gpu_sharing"] = {"strategy": "mps", "replicas": 49}
    with pytest.raises(SpecError) as caught:
        load_spec(dev_platform)
    assert (
        "platform.pools.ci-training.gpu_sharing.replicas=49: MPS allows at most 48 replicas per GPU "
        "(NVIDIA GPU operator limit)"
    ) in str(caught.value).splitlines()


def test_time_sliced_vram_that_cannot_all_fit_is_a_warning(dev_platform: dict[str, Any]) -> None:
    dev_platform["profiles"]["supervised"]["gpu_memory_gb"] = 16
    warnings = [str(w) for w in load_platform(dev_platform).warnings]
    assert (
        "platform.profiles.supervised.gpu_memory_gb=16: x 4 jobs per GPU = 64 GB exceeds one L40S-1-48G GPU's "
        "48 GB: time-slicing does not isolate GPU memory, so jobs may OOM each other"
    ) in warnings
    dev_platform["pools"]["ci-training"]["gpu_sharing"]["replicas"] = 3  # 3 x 16 = 48 GB: fits
    assert not any("gpu_memory_gb" in str(w) for w in load_platform(dev_platform).warnings)


def test_mps_need_within_the_share_is_fine(dev_platform: dict[str, Any]) -> None:
    dev_platform["pools"]["ci-training"]["gpu_sharing"] = {"strategy": "mps", "replicas": 4}
    dev_platform["runner"]["access_level"] = "ref_protected"  # MPS: protected branches only
    dev_platform["profiles"]["supervised"]["gpu_memory_gb"] = 12
    spec = load_spec(dev_platform)
    assert spec.pools["ci-training"].gpu_sharing.replicas_per_gpu == 4


def test_warm_windows_over_the_whole_week_are_an_always_on_gpu_pool(dev_platform: dict[str, Any]) -> None:
    """The pack refuses min_size >= 1 on a GPU pool; warm windows over every hour of the week are the same cost by
    another key: a warning at it, not a refusal (a team may mean it, for a week)."""
    pool = dev_platform["pools"]["ci-compile"]
    pool["warm"] = [{"days": "Mon-Fri", "from": "00:00", "to": "24:00", "nodes": 1}]
    assert not any(".warm=" in str(w) for w in load_platform(dev_platform).warnings)
    pool["warm"].append({"days": "Sat-Sun", "from": "00:00", "to": "24:00", "nodes": 1})
    assert [str(w) for w in load_platform(dev_platform).warnings if ".warm=" in str(w)] == [
        "platform.pools.ci-compile.warm=2: keeps nodes up every hour of the week: an always-on GPU pool (min_size >= "
        "1, which the policy pack refuses) by another key, billed as one; warm the hours people wait in"
    ]


@pytest.mark.parametrize(
    ("knob", "line"),
    [
        (
            "protected",
            "platform.ci.variables.HF_TOKEN.protected=false: a secret every branch's jobs can read: anyone who can "
            "push a branch can print it (the policy pack, ci-secret-variables-masked, refuses it unless its config "
            "lists it in allow_unprotected)",
        ),
        (
            "masked",
            "platform.ci.variables.HF_TOKEN.masked=false: a secret GitLab does not hide in job logs: a job that "
            "prints it shows it to whoever reads the log (the policy pack, ci-secret-variables-masked, refuses it)",
        ),
    ],
)
def test_a_secret_ci_variable_set_unprotected_or_unmasked_is_a_warning_at_its_key(
    dev_platform: dict[str, Any], knob: str, line: str
) -> None:
    dev_platform["ci"]["variables"] = {"HF_TOKEN": {"secret": "hf_token"}, "DATASET": "s3://datasets/lob"}
    assert not any("variables." in str(w) for w in load_platform(dev_platform).warnings)  # the defaults: both on
    dev_platform["ci"]["variables"]["HF_TOKEN"][knob] = False
    dev_platform["ci"]["variables"]["DATASET"] = {"value": "s3://datasets/lob", knob: False}  # not a secret: fine
    assert [str(w) for w in load_platform(dev_platform).warnings if "variables." in str(w)] == [line]


RAMP = [
    {"days": "Mon-Fri", "from": "08:30", "to": "10:30", "nodes": 2},
    {"days": "Mon-Fri", "from": "10:30", "to": "12:00", "nodes": 3},
    {"days": "Mon-Fri", "from": "12:00", "to": "13:30", "nodes": 1},
    {"days": "Mon-Fri", "from": "13:30", "to": "17:30", "nodes": 3},
    {"days": "Fri", "from": "17:30", "to": "18:00", "nodes": 1},
]
"""A ramp before the peak, fewer nodes at lunch, a half-hour tail on Fridays: adjacent windows, counts that vary."""


def _ramp(edit: Callable[[list[dict[str, Any]]], object]) -> Edit:
    def apply(platform: dict[str, Any]) -> None:
        pool = platform["pools"]["ci-training"]
        pool["max_size"], pool["warm"] = 3, [dict(window) for window in RAMP]
        edit(pool["warm"])

    return apply


def test_a_warm_schedule_of_half_hours_and_counts_through_the_day_is_accepted(dev_platform: dict[str, Any]) -> None:
    _ramp(lambda warm: None)(dev_platform)
    warm = load_spec(dev_platform).pools["ci-training"].warm
    assert [(w.days, w.start, w.end, w.nodes) for w in warm] == [
        (w["days"], w["from"], w["to"], w["nodes"]) for w in RAMP
    ]


@pytest.mark.parametrize(
    ("edit", "line"),
    [
        (
            lambda warm: warm[1].update({"nodes": 4}),
            "platform.pools.ci-training.warm.1.nodes=4: is above the pool's max_size=3",
        ),
        (
            lambda warm: warm[2].update({"from": "11:30"}),
            "platform.pools.ci-training.warm.2='Mon-Fri 11:30-13:30': overlaps warm window 1 of the pool: give each "
            "hour once",
        ),
        (
            lambda warm: warm[4].update({"to": "17:00"}),
            "platform.pools.ci-training.warm.4={days: 'Fri', from: '17:30', to: '17:00', nodes: 1}: to=17:00 is not "
            "after from=17:30 (a window ends the day it starts)",
        ),
        (
            lambda warm: warm[0].update({"nodes": 0}),
            "platform.pools.ci-training.warm.0.nodes=0: Input should be greater than or equal to 1",
        ),
    ],
    ids=["count-above-max-size", "overlapping-half-hours", "window-backwards", "no-node"],
)
def test_a_bad_warm_schedule_is_one_line_naming_the_window(
    dev_platform: dict[str, Any], edit: Callable[[list[dict[str, Any]]], object], line: str
) -> None:
    _ramp(edit)(dev_platform)
    with pytest.raises(SpecError) as caught:
        load_spec(dev_platform)
    assert str(caught.value) == line
