"""Measure `python -m infra plan` against a bare import of the SDK modules it uses (README: "Speed").

Both are timed as fresh processes, best of N runs, so interpreter start-up counts on both sides; the runs
alternate (imports, plan, imports, ...) so that a machine slowing down or speeding up weighs on both alike.
Wall time and CPU time (user + system) are both shown: on a busy machine the CPU time is the steadier.
Bytecode is cached on both sides, as on any machine after a first run (pip compiles the SDKs when it installs
them): the children write theirs to a temporary `PYTHONPYCACHEPREFIX`, even where `PYTHONDONTWRITEBYTECODE`
is set, and a first, untimed run of each fills it.
Usage: python scripts/measure_plan.py [runs]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

IMPORTS = (
    "import warnings; warnings.simplefilter('ignore');"
    "import pulumi, pulumi_kubernetes, pulumiverse_scaleway.kubernetes, pulumiverse_scaleway.network,"
    " pulumi_gitlab, pydantic, yaml, tomli_w; from pydantic import BaseModel, Field;"
    " import pulumi_kubernetes.core.v1, pulumi_kubernetes.meta.v1, pulumi_kubernetes.helm.v3,"
    " pulumi_kubernetes.apiextensions, pulumi_kubernetes.networking.v1, pulumi_kubernetes.batch.v1,"
    " pulumi_kubernetes.rbac.v1, pulumi_policy,"
    " pulumiverse_scaleway.registry, pulumiverse_scaleway.iam, pulumiverse_scaleway.object"
)


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of `command`."""
    before, start = os.times(), time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
    wall, after = time.perf_counter() - start, os.times()
    cpu = after.children_user - before.children_user + after.children_system - before.children_system
    return wall, cpu


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    commands = ([sys.executable, "-c", IMPORTS], [sys.executable, "-m", "infra", "plan"])
    with tempfile.TemporaryDirectory(prefix="measure-plan-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONPYCACHEPREFIX": cache}
        for command in commands:
            timed(command, env)
        times: tuple[list[tuple[float, float]], list[tuple[float, float]]] = ([], [])
        for _ in range(runs):
            for command, taken in zip(commands, times, strict=True):
                taken.append(timed(command, env))
    for what, pick in (("wall", 0), ("CPU", 1)):
        imports, plan = (min(run[pick] for run in taken) for taken in times)
        print(f"{what:>4}: SDK imports {imports:.2f}s  plan {plan:.2f}s  ratio {plan / imports:.2f} (goal <= 1.25)")


if __name__ == "__main__":
    main()
