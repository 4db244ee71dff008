"""Measure `python -m infra plan` against a bare import of the SDK modules it uses (README: "Speed").

Both are timed as fresh processes, best of N runs, so interpreter start-up counts on both sides.
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


def best_of(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    imports = best_of([sys.executable, "-c", IMPORTS], runs)
    plan = best_of([sys.executable, "-m", "infra", "plan"], runs)
    print(f"SDK imports: {imports:.2f}s  plan: {plan:.2f}s  ratio: {plan / imports:.2f} (goal <= 1.25)")


if __name__ == "__main__":
    main()
