"""Measure the test suite as the README runs it, `python -m pytest`, as a ratio to the SDK import `plan` is held
against (README: "Speed"; goal: the suite within 12x that import's wall time).

Why a ratio: the same commit's suite took 24.0 s on one build machine and 52.2 s on another, whose cores are half
as fast; seconds say little, a ratio to a fixed piece of work run in the same conditions says more. That work is
`measure_plan.py`'s: a fresh process importing the modules `plan` imports (the SDKs, pydantic, ...), bytecode
cached, timed 5 times around the suite's runs (before the first, between, after the last); its median is the unit.

Runs the suite N times as a fresh process and prints, for each run, its wall and CPU time (user + system of
pytest and its workers), the machine's load before and after (`/proc/loadavg`: the build machine is shared, and a
figure means little without it) and pytest's summary line; from the last run, the tests and the files that cost
most CPU (their own and their subprocesses'), and each xdist worker's schedule (its tests' total, its last
test's end, and that test: a long test landing last on one worker sets the wall time); then the medians and
the ratios suite / import, wall to wall and CPU to CPU (two workers on two cores: the CPU ratio is about twice
the wall's).
The per-test times come from this file loaded as a pytest plugin in every worker (`-p measure_suite`): each
worker writes what it ran, with wall, CPU (`time.process_time`) and its subprocesses' CPU per test, setup and
teardown included.
Usage: python scripts/measure_suite.py [runs] [--keep DIR] [-- extra pytest arguments]
(`--keep DIR`: the last run's per-test times, one JSON file per worker, are left in DIR.)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from measure_plan import IMPORTS, timed  # this folder's: the import `plan` is held against, timed alike

ROOT = Path(__file__).resolve().parent.parent
GOAL_RATIO = 12.0
"""The suite's wall time, at most this many times the SDK import's (about 25 s where the import takes 2 s)."""
IMPORT_RUNS = 5
_OUT = "MEASURE_SUITE_DIR"


# --- the plugin, in each worker -------------------------------------------------------------------------------

_ran: list[dict[str, Any]] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    wall, cpu, children = time.time(), time.process_time(), _children()
    yield
    _ran.append(
        {
            "test": item.nodeid,
            "start": wall,
            "wall": time.time() - wall,
            "cpu": time.process_time() - cpu,
            "children": _children() - children,
        }
    )


def _children() -> float:
    """CPU seconds of the processes this one started and waited for (subprocesses, forked children)."""
    times = os.times()
    return times.children_user + times.children_system


def pytest_sessionfinish(session: pytest.Session) -> None:
    folder = os.environ.get(_OUT)
    if folder and _ran:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        (Path(folder) / f"{worker}.json").write_text(json.dumps(_ran), encoding="utf-8")


# --- the measurement ------------------------------------------------------------------------------------------


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text(encoding="utf-8").split()[:3])


def _run(extra: list[str], folder: Path) -> tuple[float, float, str, str, str]:
    """(wall, CPU, load before, load after, pytest's summary line) of one run of the suite."""
    env = os.environ | {
        _OUT: str(folder),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "scripts"), os.environ.get("PYTHONPATH")])),
    }
    before_load = _load()
    before, start = os.times(), time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "measure_suite", "-p", "no:cacheprovider", *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall, after = time.perf_counter() - start, os.times()
    cpu = after.children_user - before.children_user + after.children_system - before.children_system
    lines = [line for line in done.stdout.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    summary = lines[-1].strip("= ") if lines else f"exit {done.returncode}: {done.stdout[-500:]}{done.stderr[-500:]}"
    return wall, cpu, before_load, _load(), summary


def _report(folder: Path, top: int) -> None:
    workers = {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))}
    tests = [test for ran in workers.values() for test in ran]
    if not tests:
        return
    print(f"\nslowest {top} tests by CPU (wall s / CPU s / CPU s of its subprocesses; setup and teardown included):")
    for test in sorted(tests, key=_cost, reverse=True)[:top]:
        print(f"  {test['wall']:6.2f} {test['cpu']:6.2f} {test['children']:6.2f}  {test['test']}")
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for test in tests:
        entry = files[test["test"].split("::")[0]]
        for index, key in enumerate(("wall", "cpu", "children")):
            entry[index] += test[key]
        entry[3] += 1
    wall, cpu, children = (sum(t[key] for t in tests) for key in ("wall", "cpu", "children"))
    print(f"\n{len(tests)} tests: {wall:.1f} s wall, {cpu:.1f} s CPU, {children:.1f} s CPU of their subprocesses")
    print("\nfiles costing most CPU (wall s / CPU s / subprocesses' CPU s / tests):")
    for name, (wall, cpu, children, count) in sorted(files.items(), key=lambda item: -item[1][1] - item[1][2])[:top]:
        print(f"  {wall:6.2f} {cpu:6.2f} {children:6.2f} {count:5.0f}  {name}")
    first = min(t["start"] for t in tests)
    print("\nworkers (tests, s in tests, last test's end after the first test's start, the last test):")
    for worker, ran in workers.items():
        last = max(ran, key=lambda t: t["start"] + t["wall"])
        busy = sum(t["wall"] for t in ran)
        print(
            f"  {worker}: {len(ran)} tests, {busy:.1f} s, ends at {last['start'] + last['wall'] - first:.1f} s "
            f"({last['test']}, {last['wall']:.2f} s)"
        )


def _cost(test: dict[str, Any]) -> float:
    cost: float = test["cpu"] + test["children"]
    return cost


def _import_slots(runs: int) -> list[int]:
    """How many of the IMPORT_RUNS timed imports go before each suite run and after the last (spread evenly, so
    a machine speeding up or slowing down during the runs weighs on both sides alike)."""
    slots = runs + 1
    return [IMPORT_RUNS // slots + (index < IMPORT_RUNS % slots) for index in range(slots)]


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def main() -> None:
    args = sys.argv[1:]
    extra = args[args.index("--") + 1 :] if "--" in args else []
    args = args[: args.index("--")] if "--" in args else args
    keep = None
    if "--keep" in args:
        at = args.index("--keep")
        keep, args = Path(args[at + 1]), args[:at] + args[at + 2 :]
    runs = int(args[0]) if args else 3
    print(
        f"python -m pytest {' '.join(extra)}: {runs} runs, {os.cpu_count()} cores; the SDK import {IMPORT_RUNS} times "
        f"around them (goal: the suite within {GOAL_RATIO:g}x the import's wall time)"
    )
    walls, cpus = [], []
    imports: list[tuple[float, float]] = []
    slots = _import_slots(runs)
    with tempfile.TemporaryDirectory(prefix="measure-suite-imports-") as cache:
        # bytecode cached for the import, as measure_plan.py does it; a first, untimed run fills the cache
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONPYCACHEPREFIX": cache}
        command = [sys.executable, "-c", IMPORTS]
        timed(command, env)
        for run in range(1, runs + 2):
            imports += [timed(command, env) for _ in range(slots[run - 1])]
            if run > runs:
                break
            with tempfile.TemporaryDirectory(prefix="measure-suite-") as folder:
                wall, cpu, before, after, summary = _run(extra, Path(folder))
                walls.append(wall)
                cpus.append(cpu)
                print(f"run {run}: wall {wall:.1f} s  CPU {cpu:.1f} s  load {before} -> {after}  ({summary})")
                if run == runs:
                    _report(Path(folder), 15)
                    if keep is not None:
                        shutil.copytree(folder, keep, dirs_exist_ok=True)
    walls.sort()
    cpus.sort()
    print(
        f"\nsuite: wall min/median/max {walls[0]:.1f}/{_median(walls):.1f}/{walls[-1]:.1f} s; "
        f"CPU {cpus[0]:.1f}/{_median(cpus):.1f}/{cpus[-1]:.1f} s"
    )
    import_wall, import_cpu = _median([w for w, _ in imports]), _median([c for _, c in imports])
    print(f"SDK import (median of {len(imports)}): wall {import_wall:.2f} s, CPU {import_cpu:.2f} s")
    wall_ratio, cpu_ratio = _median(walls) / import_wall, _median(cpus) / import_cpu
    verdict = "met" if wall_ratio <= GOAL_RATIO else "not met"
    print(
        f"ratio suite/import: wall {wall_ratio:.1f}x, CPU {cpu_ratio:.1f}x (goal: wall <= {GOAL_RATIO:g}x, {verdict})"
    )


if __name__ == "__main__":
    main()
