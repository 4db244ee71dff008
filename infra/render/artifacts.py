"""Every rendered artifact of the platform, by file name: what `python -m infra plan --out DIR` writes.

The Pulumi components publish the same texts (ConfigMaps, Helm values, repository files), produced by
the same renderers, so what a reviewer reads offline is what `pulumi up` would ship.
"""

from __future__ import annotations

import json

from infra.model.platform import Platform
from infra.render.ci_templates import render_ci_templates
from infra.render.device_plugin import render_cluster_policy_patch, render_config_map
from infra.render.report import capacity_rows, render_report
from infra.render.runner import render_runner_config, render_runner_values
from infra.sim.week import CostReport
from infra.sim.weeks import WeeksReport


def render_artifacts(platform: Platform, cost: CostReport | None, weeks: WeeksReport | None = None) -> dict[str, str]:
    """File name -> content, for every artifact derived from the spec (one config and values file per runner);
    `cost` is the simulated week of the workload (`infra.sim.week.simulate_week`), `weeks` the target over many
    (`infra.sim.weeks.simulate_weeks`)."""
    artifacts = {
        "capacity.txt": render_report(platform, cost, weeks),
        "capacity.json": json.dumps(capacity_rows(platform), indent=2, sort_keys=True) + "\n",
        "ci-templates.yml": render_ci_templates(platform),
    }
    for runner in platform.runners.values():
        suffix = "" if runner.is_default else f"-{runner.name}"
        artifacts[f"runner-config{suffix}.toml"] = render_runner_config(platform, runner)
        artifacts[f"runner-values{suffix}.yaml"] = render_runner_values(platform, runner)
    if platform.gpu_pools:
        artifacts["device-plugin-config.yaml"] = render_config_map(platform)
        artifacts["cluster-policy-patch.json"] = render_cluster_policy_patch(platform)
    if cost is not None:
        artifacts["cost.json"] = json.dumps(cost.as_json(), indent=2, sort_keys=True) + "\n"
    if weeks is not None:
        artifacts["weeks.json"] = json.dumps(weeks.as_json(), indent=2, sort_keys=True) + "\n"
    return artifacts
