"""infra.config.checks.versions: the cluster's Kubernetes version against Scaleway's withdrawal dates, on a
pinned day (the check is a function of the date; the program passes the day it runs on)."""

from __future__ import annotations

import copy
import itertools
from datetime import date, timedelta
from typing import Any

import pytest
from support.day import SUITE_DAY

from infra.config.checks.versions import NEAR_END_DAYS, TODAY_VARIABLE, plan_day, version_problems
from infra.config.load import load_spec
from infra.kubernetes_versions import KUBERNETES_VERSIONS, newest_version
from infra.offline.harness import ProgramRun, run_program
from infra.offline.stack_config import StackConfig


def _problems(platform: dict[str, Any], version: str, today: date) -> list[str]:
    platform = copy.deepcopy(platform)
    platform["cluster"]["version"] = version
    return [f"{p.severity}: {p}" for p in version_problems(load_spec(platform), today)]


def test_the_default_and_the_dev_stack_are_a_version_scaleway_still_creates(dev_platform: dict[str, Any]) -> None:
    assert dev_platform["cluster"]["version"] == newest_version().minor == "1.36"
    assert _problems(dev_platform, "1.36", date(2026, 12, 1)) == []


@pytest.mark.parametrize(
    ("today", "verdict"),
    [
        (date(2026, 11, 19), None),  # 61 days before 1.35's creation end
        (
            date(2026, 12, 1),
            "warning: platform.cluster.version='1.35': near its end, in 49 days: Scaleway creates no cluster from "
            "2027-01-19, upgrades the rest after 2027-03-19; set 1.36",
        ),
        (
            date(2027, 1, 18),
            "warning: platform.cluster.version='1.35': near its end, in 1 days: Scaleway creates no cluster from "
            "2027-01-19, upgrades the rest after 2027-03-19; set 1.36",
        ),
        (
            date(2027, 1, 19),
            "error: platform.cluster.version='1.35': withdrawn: Scaleway creates no cluster from 2027-01-19, "
            "upgrades the rest after 2027-03-19; set 1.36 (an existing cluster upgrades in place)",
        ),
        (
            date(2027, 4, 1),
            "error: platform.cluster.version='1.35': withdrawn: Scaleway creates no cluster from 2027-01-19, "
            "upgrades the rest after 2027-03-19; set 1.36 (an existing cluster upgrades in place)",
        ),
    ],
)
def test_a_version_near_or_past_its_end(dev_platform: dict[str, Any], today: date, verdict: str | None) -> None:
    assert _problems(dev_platform, "1.35", today) == ([verdict] if verdict else [])


def test_near_is_the_two_months_before_the_creation_end(dev_platform: dict[str, Any]) -> None:
    end = KUBERNETES_VERSIONS["1.36"].creation_ends
    assert _problems(dev_platform, "1.36", date.fromordinal(end.toordinal() - NEAR_END_DAYS - 1)) == []
    (warning,) = _problems(dev_platform, "1.36", date.fromordinal(end.toordinal() - NEAR_END_DAYS))
    assert warning.startswith(f"warning: platform.cluster.version='1.36': near its end, in {NEAR_END_DAYS} days")
    assert warning.endswith("no newer version is in the catalogue")


def test_a_patch_version_is_checked_by_its_minor(dev_platform: dict[str, Any]) -> None:
    dev_platform["cluster"].pop("auto_upgrade")  # a patch version needs auto upgrades off
    (error,) = _problems(dev_platform, "1.34.2", date(2026, 12, 1))
    assert error.startswith("error: platform.cluster.version='1.34.2': withdrawn: Scaleway creates no cluster from")


def test_versions_outside_the_catalogue(dev_platform: dict[str, Any]) -> None:
    assert _problems(dev_platform, "1.29", date(2026, 12, 1)) == [
        "error: platform.cluster.version='1.29': withdrawn by Scaleway (it offers 1.32 and later)"
    ]
    (warning,) = _problems(dev_platform, "1.37", date(2026, 12, 1))
    assert warning.startswith("warning: platform.cluster.version='1.37': not in gpu-ci's catalogue")


def test_an_adopted_cluster_keeps_the_version_scaleway_gives_it(dev_platform: dict[str, Any]) -> None:
    dev_platform["cluster"]["existing_id"] = "fr-par/11111111-2222-3333-4444-555555555555"
    assert _problems(dev_platform, "1.32", date(2027, 4, 1)) == []


def test_the_catalogue_is_in_order() -> None:
    """Each version's creation ends before its support does, and later than the previous version's."""
    rows = list(KUBERNETES_VERSIONS.values())
    assert all(v.creation_ends < v.support_ends for v in rows)
    assert all(a.creation_ends <= b.creation_ends for a, b in itertools.pairwise(rows))


def test_the_day_is_the_real_one_unless_pinned() -> None:
    real = date(2026, 12, 1)
    assert plan_day({}, real) == real
    assert plan_day({TODAY_VARIABLE: "2027-02-01"}, real) == date(2027, 2, 1)
    with pytest.raises(ValueError, match=r"^GPU_CI_TODAY='soon': not a date like 2027-01-10$"):
        plan_day({TODAY_VARIABLE: "soon"}, real)


def test_the_program_refuses_a_withdrawn_version_before_any_resource(
    dev_stack: StackConfig, dev_platform: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    dev_platform["cluster"]["version"] = "1.35"
    config = dev_stack.with_values({"platform": dev_platform})
    monkeypatch.setenv(TODAY_VARIABLE, "2026-12-01")
    warned = run_program(config)
    assert any(level == "warning" and "near its end, in 49 days" in m for level, m in warned.logs)
    monkeypatch.setenv(TODAY_VARIABLE, "2027-02-01")
    refused = run_program(config, check=False)
    assert str(refused.error).startswith(
        "Pulumi.dev.yaml: platform.cluster.version='1.35': withdrawn: Scaleway creates no cluster"
    )
    assert refused.resources == []


def _what_it_did(run: ProgramRun) -> tuple[list[tuple[Any, ...]], dict[str, Any]]:
    """Every registration (type, name, inputs, options) in URN order, and the outputs."""
    resources = [(r.type, r.name, r.inputs, r.options) for r in sorted(run.resources, key=lambda r: r.urn)]
    return resources, run.outputs


def test_moving_the_day_across_the_dev_stacks_dates_changes_its_verdict_there_only(
    dev_stack: StackConfig, dev_run: ProgramRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The suite's day (tests/support/day.py) gives the dev stack, which every planning test runs, no verdict on its
    Kubernetes version. Up to the day before the version is near its end, the whole program does exactly what it
    does on the suite's day; from that day it warns once more, at `platform.cluster.version`, and registers the
    same; from the version's creation end it is refused, before any resource."""
    minor = dev_stack.get("platform")["cluster"]["version"]
    known = KUBERNETES_VERSIONS[minor]
    near = known.creation_ends - timedelta(days=NEAR_END_DAYS)
    assert date.fromisoformat(SUITE_DAY) < near - timedelta(days=1)

    def on(day: date) -> ProgramRun:
        monkeypatch.setenv(TODAY_VARIABLE, day.isoformat())
        return run_program(dev_stack, check=False)

    same = on(near - timedelta(days=1))
    assert same.error is None and _what_it_did(same) == _what_it_did(dev_run) and same.logs == dev_run.logs
    dates = f"Scaleway creates no cluster from {known.creation_ends}, upgrades the rest after {known.support_ends}"
    for day, left in ((near, NEAR_END_DAYS), (known.creation_ends - timedelta(days=1), 1)):
        warned = on(day)
        assert warned.error is None and _what_it_did(warned) == _what_it_did(dev_run)
        added = [entry for entry in warned.logs if entry not in dev_run.logs]
        assert added == [
            (
                "warning",
                f"platform.cluster.version={minor!r}: near its end, in {left} days: {dates}; no newer version is in "
                "the catalogue",
            )
        ]
        assert [entry for entry in warned.logs if entry not in added] == dev_run.logs
    refused = on(known.creation_ends)
    assert str(refused.error).startswith(f"Pulumi.dev.yaml: platform.cluster.version={minor!r}: withdrawn: {dates}")
    assert refused.resources == []
