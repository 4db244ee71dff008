"""Every rendered artifact of the platform, by file name: what `python -m infra plan --out DIR` writes.

The Pulumi components publish the same texts (ConfigMaps, Helm values, repository files), produced by
the same renderers, so what a reviewer reads offline is what `pulumi up` would ship.
"""

from __future__ import annotations

import json

from infra.capacity import pool_reports
from infra.config.platform import PlatformSpec
from infra.cost import cost_report
from infra.render.ci_templates import render_ci_templates
from infra.render.device_plugin import render_cluster_policy_patch, render_config_map
from infra.render.report import render_report
from infra.render.runner import render_runner_config, render_runner_values


def render_artifacts(spec: PlatformSpec) -> dict[str, str]:
    """File name -> content, for every artifact derived from the spec."""
    rows = pool_reports(spec)
    artifacts = {
        "capacity.txt": render_report(spec),
        "capacity.json": json.dumps([r.as_json() for r in rows], indent=2, sort_keys=True) + "\n",
        "runner-config.toml": render_runner_config(spec),
        "runner-values.yaml": render_runner_values(spec),
        "ci-templates.yml": render_ci_templates(spec),
    }
    if spec.gpu_pools():
        artifacts["device-plugin-config.yaml"] = render_config_map(spec)
        artifacts["cluster-policy-patch.json"] = render_cluster_policy_patch(spec)
    cost = cost_report(spec)
    if cost is not None:
        artifacts["cost.json"] = json.dumps(cost.as_json(), indent=2, sort_keys=True) + "\n"
    return artifacts
