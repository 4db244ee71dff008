"""Measure the simulated weeks' commands on the dev stack against their goals (README: "Speed").

- `python -m infra simulate --week --weeks 20`: the 20 weeks of the dev stack (goal: under 10 s on 2 cores);
- `python -m infra recommend`: screened on the first week, confirmed over the 20, then refined (its second step:
  `infra.sim.refine`) and confirmed again (goal: under 30 s on 2 cores);
- `python -m infra recommend --keep-sizes`: the same with every pool's max_size kept (goal: under 30 s).
Each is timed as a fresh process (start-up and SDK imports included), best of N runs, wall and CPU time (user +
system of the child): on a busy machine the CPU time is the steadier. Bytecode is cached as in `measure_plan.py`.
Usage: python scripts/measure_weeks.py [runs]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

COMMANDS = (
    ("simulate --week --weeks 20", ["simulate", "--week", "--weeks", "20"], 10.0),
    ("recommend", ["recommend"], 30.0),
    ("recommend --keep-sizes", ["recommend", "--keep-sizes"], 30.0),
)


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of `command` (its exit code is the command's verdict, not a failure)."""
    before, start = os.times(), time.perf_counter()
    subprocess.run(command, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wall, after = time.perf_counter() - start, os.times()
    cpu = after.children_user - before.children_user + after.children_system - before.children_system
    return wall, cpu


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    with tempfile.TemporaryDirectory(prefix="measure-weeks-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONPYCACHEPREFIX": cache}
        for name, args, goal in COMMANDS:
            command = [sys.executable, "-m", "infra", *args]
            timed(command, env)  # fills the bytecode cache
            taken = [timed(command, env) for _ in range(runs)]
            wall, cpu = min(t[0] for t in taken), min(t[1] for t in taken)
            print(f"{name}: wall {wall:.2f}s  CPU {cpu:.2f}s  (best of {runs}; goal < {goal:g} s on 2 cores)")


if __name__ == "__main__":
    main()
