"""Measure `python -m infra plan` against a bare import of the SDK modules it uses (README: "Speed").

Both are timed as fresh processes, best of N runs, so interpreter start-up counts on both sides; the runs
alternate (imports, plan, imports, ...) so that a machine slowing down or speeding up weighs on both alike.
Usage: python scripts/measure_plan.py [runs]
"""

from __future__ import annotations

import subprocess
import sys
import time

IMPORTS = (
    "import warnings; warnings.simplefilter('ignore');"
    "import pulumi, pulumi_kubernetes, pulumiverse_scaleway.kubernetes, pulumiverse_scaleway.network,"
    " pulumi_gitlab, pydantic, yaml, tomli_w; from pydantic import BaseModel, Field;"
    " import pulumi_kubernetes.core.v1, pulumi_kubernetes.meta.v1, pulumi_kubernetes.helm.v3,"
    " pulumi_kubernetes.apiextensions, pulumi_kubernetes.networking.v1, pulumi_policy,"
    " pulumiverse_scaleway.registry, pulumiverse_scaleway.iam, pulumiverse_scaleway.object"
)


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    commands = ([sys.executable, "-c", IMPORTS], [sys.executable, "-m", "infra", "plan"])
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs):
        for command, taken in zip(commands, times, strict=True):
            taken.append(timed(command))
    imports, plan = min(times[0]), min(times[1])
    print(f"SDK imports: {imports:.2f}s  plan: {plan:.2f}s  ratio: {plan / imports:.2f} (goal <= 1.25)")


if __name__ == "__main__":
    main()
