"""Property-based tests (hypothesis) of quantity parsing and the capacity math."""

from __future__ import annotations

import contextlib
import copy

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from support.specs import with_legacy_workload

from infra.capacity import profile_fit
from infra.config.errors import SpecError
from infra.model.platform import load_platform
from infra.offline.stack_config import StackConfig
from infra.quantity import Cpu, Memory, QuantityError
from infra.sim.week import simulate_week

BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
DECIMAL = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}


@given(st.integers(min_value=1, max_value=10**7))
def test_millicores_round_trip(millicores: int) -> None:
    assert Cpu.parse(f"{millicores}m").millicores == millicores
    assert Cpu.parse(str(Cpu.from_millicores(millicores))).millicores == millicores
    whole, frac = divmod(millicores, 1000)
    assert Cpu.parse(f"{whole}.{frac:03d}").millicores == millicores


@given(st.integers(min_value=1, max_value=2**20), st.sampled_from(sorted(BINARY | DECIMAL)))
def test_memory_suffixes_scale_exactly(amount: int, suffix: str) -> None:
    assert Memory.parse(f"{amount}{suffix}").bytes == amount * (BINARY | DECIMAL)[suffix]


@given(st.integers(min_value=1, max_value=2**62))
def test_memory_from_bytes_round_trips(amount: int) -> None:
    assert Memory.parse(Memory.from_bytes(amount).text).bytes == amount


@given(st.text(max_size=12))
def test_parsers_fail_only_with_quantity_error(text: str) -> None:
    for parse in (Cpu.parse, Memory.parse):
        with contextlib.suppress(QuantityError):
            parse(text)


@given(
    st.integers(min_value=1, max_value=9999),
    st.integers(min_value=0, max_value=999),
    st.sampled_from(sorted(BINARY | DECIMAL)),
)
def test_decimal_memory_quantities_parse_and_round_up(whole: int, frac: int, suffix: str) -> None:
    """Kubernetes accepts fractions of a unit and rounds memory up to whole bytes."""
    multiplier = (BINARY | DECIMAL)[suffix]
    parsed = Memory.parse(f"{whole}.{frac:03d}{suffix}").bytes
    exact = (whole * 1000 + frac) * multiplier
    assert parsed == -(-exact // 1000)


RL_POOL = "ci-compile"


@settings(max_examples=60, deadline=None)
@given(
    replicas=st.integers(min_value=2, max_value=8),
    cpu_m=st.integers(min_value=100, max_value=8000),
    mem_mi=st.integers(min_value=256, max_value=48 * 1024),
)
def test_spec_is_valid_exactly_when_a_full_node_fits(
    dev_stack: StackConfig, replicas: int, cpu_m: int, mem_mi: int
) -> None:
    platform = copy.deepcopy(dev_stack.get("platform"))
    platform["pools"][RL_POOL]["gpu_sharing"]["replicas"] = replicas
    platform["profiles"]["rl"].update(
        cpu_request=f"{cpu_m}m", cpu_limit=f"{cpu_m}m", memory_request=f"{mem_mi}Mi", memory_limit=f"{mem_mi}Mi"
    )
    allocatable_m, allocatable_mi = 8000 - 1000, (48 - 4) * 1024  # L4 minus the stated reserve
    fits = replicas * cpu_m <= allocatable_m and replicas * mem_mi <= allocatable_mi
    try:
        spec = load_platform(platform).spec
    except SpecError as err:
        assert not fits, str(err)
        assert all(p.path.startswith("platform.profiles.rl.") for p in err.problems)
        return
    assert fits
    fit = profile_fit("rl", spec.profiles["rl"], spec.pools[RL_POOL], spec.catalog["L4-1-24G"])
    assert fit.jobs_per_node == replicas  # GPU replicas bind when everything fits
    assert fit.jobs_per_node * cpu_m <= allocatable_m
    assert fit.jobs_per_node * mem_mi <= allocatable_mi


@settings(max_examples=12, deadline=None, derandomize=True)  # each example simulates two weeks
@given(
    rl_jobs=st.integers(min_value=1, max_value=60),
    extra=st.integers(min_value=1, max_value=30),
    minutes=st.integers(min_value=1, max_value=130),  # + a 49-min poll_timeout stays inside the 3-h job timeout
)
def test_more_jobs_never_cost_less_or_drain_sooner(
    dev_stack: StackConfig, rl_jobs: int, extra: int, minutes: int
) -> None:
    """The simulated week is monotonic: adding jobs never lowers its cost, its makespan or its failures, as long
    as a day's RL jobs fit the L4's two slots in a day (past that, GitLab drops jobs pending for 24 h and the
    templates retry them: which burst is the longest then depends on which jobs were dropped)."""
    assume((rl_jobs + extra) * minutes <= 2 * 24 * 60)
    platform = with_legacy_workload(copy.deepcopy(dev_stack.get("platform")))
    load = platform["workload"]["profiles"]["rl"]
    load.update(jobs_per_day=rl_jobs, minutes_per_job=minutes)
    fewer = simulate_week(load_platform(platform))
    load["jobs_per_day"] = rl_jobs + extra
    more = simulate_week(load_platform(platform))
    assert fewer is not None and more is not None
    assert more.eur_per_day >= fewer.eur_per_day
    assert more.makespan_minutes >= fewer.makespan_minutes
    assert more.failed_jobs >= fewer.failed_jobs  # an overloaded day drops jobs after 24 h in the queue
    assert more.baseline.eur_per_day >= fewer.baseline.eur_per_day
