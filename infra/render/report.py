"""The capacity report as text: printed by `python -m infra plan`, written as an artifact, posted in MRs."""

from __future__ import annotations

from fractions import Fraction

from infra.capacity import (
    format_eur,
    format_gb,
    gpu_memory_per_replica_gb,
    pool_reports,
    render_pool_table,
    render_table,
)
from infra.config.platform import PlatformSpec
from infra.cost import CostReport, cost_report, price_rows
from infra.render.device_plugin import DEVICE_PLUGIN_CONFIG_LABEL, NO_SHARING_KEY, config_key


def render_report(spec: PlatformSpec) -> str:
    """Per pool: node type, allocatable, jobs per node and what binds it, EUR/h while up and idle; then GPU
    sharing, prices against the old way, and (with a workload) the daily cost and drain time, new against old."""
    parts = ["Capacity (per node, while a pool is up):\n" + render_pool_table(pool_reports(spec))]
    if spec.gpu_pools():
        parts += [render_sharing(spec), render_prices(spec)]
    cost = cost_report(spec)
    if cost is not None:
        parts.append(render_cost(spec, cost))
    return "\n".join(parts)


def render_sharing(spec: PlatformSpec) -> str:
    """Per GPU pool: its config key (= node label), strategy, jobs per GPU and each job's GPU memory."""
    operator = spec.gpu_operator
    policy = (
        f"ClusterPolicy {operator.cluster_policy} points at it, default {NO_SHARING_KEY}"
        if operator.patch_cluster_policy
        else "ClusterPolicy left alone: set its devicePlugin.config from cluster-policy-patch.json"
    )
    rows = []
    for name in spec.gpu_pools():
        pool = spec.pools[name]
        node = spec.catalog[pool.node_type]
        replicas = pool.sharing_replicas()
        strategy = pool.gpu_sharing.strategy if pool.gpu_sharing and replicas > 1 else "none"
        share = format_gb(gpu_memory_per_replica_gb(pool, node))
        memory = {
            "mps": f"{share}, enforced; {100 // replicas} % of SMs each",
            "time-slicing": f"{share} if shared evenly; not isolated",
            "none": f"{share}, whole GPU",
        }[strategy]
        rows.append((name, config_key(name), strategy, str(replicas), memory))
    header = ("pool", f"label {DEVICE_PLUGIN_CONFIG_LABEL}", "strategy", "jobs/GPU", "GPU memory per job")
    return (
        f"GPU sharing (ConfigMap {operator.namespace}/{operator.config_map}, one key per pool; {policy}):\n"
        + render_table(header, rows)
    )


def render_prices(spec: PlatformSpec) -> str:
    """Each GPU pool's price per node-hour and per job-hour, against one job at a time on the reference node."""
    rows = price_rows(spec)
    reference = rows[0].reference
    body = [
        (
            r.pool,
            r.node_type,
            format_eur(r.eur_per_hour),
            _vs(r.node_ratio),
            str(r.jobs_per_node),
            format_eur(r.eur_per_job_hour),
            _vs(r.job_ratio),
        )
        for r in rows
    ]
    header = (
        "pool",
        "node type",
        "EUR/h node",
        f"vs {reference}",
        "jobs/node",
        "EUR/h per job",
        f"vs one job on {reference}",
    )
    return (
        f"Prices (catalogue, EUR/h excl. VAT) against one job at a time on {reference} "
        f"({format_eur(rows[0].reference_eur_per_hour)} EUR/h):\n" + render_table(header, body)
    )


def render_cost(spec: PlatformSpec, cost: CostReport) -> str:
    """The workload's day: per profile run times, per pool cost, new setup against the old one."""
    loads = [
        (
            p.profile,
            p.pool,
            str(p.jobs_per_day),
            _minutes(p.minutes_alone),
            _minutes(p.minutes_full_node),
        )
        for p in cost.profiles
    ]
    load_table = render_table(("profile", "pool", "jobs/day", "min/job, GPU to itself", "min/job, node full"), loads)
    rows = []
    for day in cost.pools:
        pool = spec.pools[day.pool]
        always_on = pool.min_size and pool.min_size == pool.max_size
        scaling = "always on" if always_on else f"scales {pool.min_size}-{pool.max_size}"
        rows.append(
            (
                f"{day.pool} ({day.node_type}, {scaling})",
                format_eur(day.eur_per_day),
                _hours(day.scaled_node_hours + day.always_on_node_hours),
                _minutes(day.drain_minutes) if any(b.jobs for b in day.bursts) else "-",
            )
        )
    baseline = cost.baseline
    old_label = f"old: {baseline.node_type}, one job at a time, always on" + "".join(
        f" + idle {t}" for t in baseline.idle_node_types
    )
    rows.append(("new setup", format_eur(cost.eur_per_day), "", _minutes(cost.drain_minutes)))
    rows.append(
        (
            old_label,
            format_eur(baseline.eur_per_day),
            _hours(Fraction(24 * (1 + len(baseline.idle_node_types)))),
            _minutes(baseline.drain_minutes),
        )
    )
    table = render_table(("", "EUR/day", "node-hours/day", "drain largest burst (min)"), rows)
    jobs = cost.jobs_per_day
    lines = [
        f"Workload (platform.workload): {jobs} jobs a day in {cost.batches_per_day} burst(s):\n" + load_table,
        "A day, new setup against old:\n" + table,
        _summary(cost),
    ]
    notes = [
        f"  - {day.pool}: bursts overlap (a burst's nodes are still up when the next arrives): "
        "cold starts are over-counted\n"
        for day in cost.pools
        if day.bursts_overlap
    ]
    if not baseline.keeps_up:
        notes.append(
            f"  - old setup: {_hours(baseline.busy_hours_per_day)} h of jobs a day do not fit in 24 h "
            "on one node: its queue never drains\n"
        )
    lines.append(
        "Model (docs/cost.md): bursts find GPU pools at zero; waves of max_size x jobs/node; nodes billed "
        "from creation (cold start included) to scale_down_unneeded_time after their last job; a job slows by "
        "max(1, gpu_utilization x jobs sharing its GPU; MPS: x replicas).\n" + "".join(notes)
    )
    return "\n".join(lines)


def _summary(cost: CostReport) -> str:
    old, new = cost.baseline, cost
    if not old.eur_per_day:
        return ""
    per_job = (
        f"; {format_eur(new.eur_per_day / new.jobs_per_day)} vs {format_eur(old.eur_per_day / new.jobs_per_day)} "
        "EUR per job"
        if new.jobs_per_day
        else ""
    )
    return (
        f"New setup: {_percent(new.eur_per_day / old.eur_per_day)} of the old daily cost{per_job}; "
        f"the largest burst drains in {_minutes(new.drain_minutes)} min instead of {_minutes(old.drain_minutes)}.\n"
    )


def _vs(ratio: Fraction) -> str:
    if ratio == 1:
        return "100.0 %"
    word = "cheaper" if ratio < 1 else "dearer"
    return f"{_percent(ratio)} ({_percent(abs(1 - ratio))} {word})"


def _percent(ratio: Fraction) -> str:
    return f"{float(ratio) * 100:.1f} %"


def _minutes(value: Fraction) -> str:
    return f"{float(value):.0f}" if value.denominator == 1 else f"{float(value):.1f}"


def _hours(value: Fraction) -> str:
    return f"{float(value):.2f}"
