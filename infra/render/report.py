"""The capacity report as text: printed by `python -m infra plan`, written as an artifact, posted in MRs."""

from __future__ import annotations

from fractions import Fraction

from infra.capacity import format_gb
from infra.model.attempts import ATTEMPTS
from infra.model.platform import Platform
from infra.model.pools import DEVICE_PLUGIN_CONFIG_LABEL, Pool
from infra.model.prices import price_rows
from infra.model.routes import PIPELINE_SOURCES, source_tag
from infra.model.runners import Runner
from infra.model.timeouts import gitlab_duration
from infra.quantity import format_gib
from infra.render.device_plugin import NO_SHARING_KEY
from infra.render.text import WIDTH, format_eur, render_table, wrap_text
from infra.render.weeks import render_weeks, verdict_line
from infra.sim.week import CostReport
from infra.sim.weeks import WeeksReport


def capacity_rows(platform: Platform) -> list[dict[str, object]]:
    """Per pool, JSON-ready: node type, allocatable, GPU, sharing, jobs per node and what binds it, slots, prices
    (the stack's `capacity` output and the plan's `capacity`)."""
    return [
        {
            "pool": pool.name,
            "node_type": pool.node_type,
            "zone": pool.zone,
            "min_size": pool.min_size,
            "max_size": pool.max_size,
            "allocatable_cpu": pool.node.allocatable_cpu.text,
            "allocatable_memory": format_gib(pool.node.allocatable_memory.gib),
            "gpu": _gpu(pool),
            "sharing": pool.sharing.label if pool.is_gpu else "-",
            "profiles": list(pool.profiles),
            "jobs_per_node": pool.jobs_per_node,
            "binding": pool.binding,
            "max_concurrent_jobs": pool.slots,
            "runner": pool.runner,
            "eur_per_hour_per_node": round(float(pool.eur_per_hour), 6),
            "idle_eur_per_hour": round(float(pool.idle_eur_per_hour), 6),
        }
        for pool in platform.pools.values()
    ]


def _gpu(pool: Pool) -> str:
    return pool.node.gpu_summary or "-"


def render_report(platform: Platform, cost: CostReport | None, weeks: WeeksReport | None = None) -> str:
    """Per pool: node type, allocatable, jobs per node and what binds it, EUR/h while up and idle; the runners;
    then GPU sharing, prices against the old way, and (with a workload: `cost`, its simulated week) the daily
    cost and drain time; with `weeks` (`infra.sim.weeks`), the target judged over them."""
    parts = [
        "Capacity (per node, while a pool is up: jobs at once, what limits them, EUR/h a node; idle: EUR/h of the "
        "pool at its minimum):\n" + render_pool_table(platform) + render_quota(platform),
        render_runners(platform),
    ]
    if platform.gpu_pools:
        parts += [render_sharing(platform), render_prices(platform)]
    if cost is not None:
        parts.append(render_cost(platform, cost, weeks))
    return wrap_text("\n".join(parts))


def render_quota(platform: Platform) -> str:
    """How many GPU nodes the spec can ask for at once: Scaleway's quotas (per Organization) must allow them."""
    nodes = platform.gpu_nodes_at_once
    if not nodes:
        return ""
    listed = ", ".join(f"{count} {node_type}" for node_type, count in nodes.items())
    return (
        f"GPU nodes at once (every GPU pool at max_size, plus an upgrade's surge): {listed}; "
        f"{sum(nodes.values())} nodes, {platform.gpus_at_once} GPUs. Scaleway's GPU quotas are per Organization, "
        "shared with its other projects: compare them (docs/runbook.md).\n"
    )


def render_pool_table(platform: Platform) -> str:
    """The capacity report as a fixed-width text table."""
    header = (
        "pool",
        "node type",
        "zone",
        "nodes",
        "allocatable",
        "GPU sharing",
        "profiles",
        "jobs",
        "limited by",
        "EUR/h",
        "idle",
    )
    body = [
        (
            pool.name,
            pool.node_type,
            pool.zone,
            f"{pool.min_size}-{pool.max_size}",
            f"{pool.node.allocatable_cpu} CPU, {format_gib(pool.node.allocatable_memory.gib)}",
            pool.sharing.label if pool.is_gpu else "-",
            ",".join(pool.profiles) or "-",
            str(pool.jobs_per_node),
            pool.binding,
            format_eur(pool.eur_per_hour),
            format_eur(pool.idle_eur_per_hour),
        )
        for pool in platform.pools.values()
    ]
    return render_table(header, body, WIDTH)


def render_runners(platform: Platform) -> str:
    """Per GPU pool its runner (and the runner of its held merge-request slots): the tags that reach it, its job
    slots, how long one attempt may wait for a node, the outage of the pool's nodes its jobs survive, and the
    `timeout:` its templates set."""
    body = [
        (
            runner.name if runner.name == runner.pool else f"{runner.name} ({runner.pool})",
            _tags(runner),
            str(runner.concurrent) + (" held for merge requests" if runner.merge_requests_only else ""),
            f"{runner.poll_timeout_seconds // 60} min x {ATTEMPTS}",
            f"{runner.survives_outage_minutes} min",
            gitlab_duration(runner.template_timeout_seconds),
            ", ".join(f"{platform.profiles[p].template}" for p in runner.profiles),
            "yes" if runner.is_default else "",
        )
        for runner in platform.runners.values()
    ]
    maximum = gitlab_duration(platform.spec.runner.job_timeout_seconds)
    header = ("runner (pool)", "tags", "slots", "poll x attempts", "survives outage", "timeout", "templates", "default")
    return (
        f"Runners (per GPU pool; managers on {platform.manager_pool}; slots: its `concurrent`, a job beyond them waits "
        f"in GitLab; a job whose pod finds no node is retried, poll_timeout each, {ATTEMPTS} attempts in all; survives "
        "outage: the longest outage of the pool's nodes its jobs ride out; timeout: the templates', which holds one "
        f"attempt's wait and the pool's longest job on a full node, within the runners' maximum {maximum}):\n"
        + render_table(header, body, WIDTH)
    )


def _tags(runner: Runner) -> str:
    """A runner's tags, the tags of every pipeline source of its pool said once (`ci-compile-<any source>`)."""
    sources = {source_tag(runner.pool, source) for source in PIPELINE_SOURCES}
    shown = list(runner.tags)
    if sources <= set(shown):
        shown = [tag for tag in shown if tag not in sources] + [source_tag(runner.pool, "<any source>")]
    return "[" + ", ".join(shown) + "]"


def render_sharing(platform: Platform) -> str:
    """Per GPU pool: its config key (= node label), strategy, jobs per GPU and each job's GPU memory."""
    operator = platform.spec.gpu_operator
    policy = (
        f"ClusterPolicy {operator.cluster_policy} points at it, default {NO_SHARING_KEY}"
        if operator.patch_cluster_policy
        else "ClusterPolicy left alone: set its devicePlugin.config from cluster-policy-patch.json"
    )
    rows = []
    for pool in platform.pools.values():
        if not pool.is_gpu:
            continue
        sharing, share = pool.sharing, format_gb(pool.gpu_memory_per_job_gb)
        if sharing.replicas_per_gpu == 1:
            memory = f"{share}, whole GPU"
        elif sharing.isolates_memory:
            memory = f"{share}, enforced; {100 // sharing.replicas_per_gpu} % of SMs each"
        else:
            memory = f"{share} if shared evenly; not isolated"
        rows.append((pool.name, str(pool.device_plugin_key), sharing.strategy, str(sharing.replicas_per_gpu), memory))
    header = ("pool", f"label {DEVICE_PLUGIN_CONFIG_LABEL}", "strategy", "jobs/GPU", "GPU memory per job")
    return (
        f"GPU sharing (ConfigMap {operator.namespace}/{operator.config_map}, one key per pool; {policy}):\n"
        + render_table(header, rows, WIDTH)
        + _operator_drift(platform)
    )


def _operator_drift(platform: Platform) -> str:
    """What of Scaleway's operator gpu-ci writes, and how a reset of it shows (docs/routing-and-sharing.md)."""
    operator = platform.spec.gpu_operator
    if not operator.patch_cluster_policy:
        return ""
    return (
        f"The operator is Scaleway's ({operator.namespace}, its Helm release): gpu-ci adds the ConfigMap and owns "
        f"spec.devicePlugin.config of ClusterPolicy {operator.cluster_policy} (field manager gpu-ci). An operator "
        "upgrade or an Easy Deploy edit may reset them: `pulumi preview --refresh --diff` then shows "
        "gpu-sharing-cluster-policy to update, and `pulumi up --refresh` sets them back (docs/runbook.md).\n"
    )


def render_prices(platform: Platform) -> str:
    """Each GPU pool's price per node-hour and per job-hour, against one job at a time on the reference node."""
    rows = price_rows(platform)
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
        f"({format_eur(rows[0].reference_eur_per_hour)} EUR/h):\n" + render_table(header, body, WIDTH)
    )


def render_cost(platform: Platform, cost: CostReport, weeks: WeeksReport | None = None) -> str:
    """The workload's simulated week: per profile run times, waits per class, per pool cost, failures, the
    target (over `weeks` when given), new setup against old."""
    loads = [
        (p.profile, p.pool, str(p.jobs_per_week), _minutes(p.minutes_alone), _minutes(p.minutes_as_run))
        for p in cost.profiles
    ]
    load_table = render_table(
        ("profile", "pool", "jobs/week", "min/job, GPU to itself", "min/job, as run"), loads, WIDTH
    )
    rows = []
    for day in cost.pools:
        pool = platform.pools[day.pool]
        always_on = pool.min_size and pool.min_size == pool.max_size
        scaling = "always on" if always_on else f"scales {pool.min_size}-{pool.max_size}"
        rows.append(
            (
                f"{day.pool} ({day.node_type}, {scaling})",
                format_eur(day.eur_per_day),
                _hours(day.scaled_node_hours + day.always_on_node_hours),
                f"{day.peak_pods}/{day.slots}" if pool.runner else "-",
            )
        )
    baseline = cost.baseline
    old_label = f"old: {baseline.node_type}, one job at a time, always on" + "".join(
        f" + idle {t}" for t in baseline.idle_node_types
    )
    rows.append(("new setup", format_eur(cost.eur_per_day), "", ""))
    rows.append(
        (old_label, format_eur(baseline.eur_per_day), _hours(Fraction(24 * (1 + len(baseline.idle_node_types)))), "")
    )
    table = render_table(("", "EUR/day", "node-hours/day", "peak pods/slots"), rows, WIDTH)
    failed = ", ".join(f"{n} {reason}" for reason, n in sorted(cost.failed_by_reason.items())) or "none"
    retried = sum(cost.retried_by_reason.values())
    workload = platform.spec.workload
    zone = workload.time_zone if workload is not None else "UTC"
    lines = [
        f"Workload (platform.workload): {cost.jobs_per_week} jobs a week, simulated from Monday 00:00 ({zone}):\n"
        + load_table,
        "Waits from queued to running, per class (p95: nearest rank; over every attempt of a retried job):\n"
        + render_waits(cost),
        _target(cost, weeks),
        "" if weeks is None else render_weeks(weeks, verdict=False),
        f"An average day of the simulated week above (that week: {format_eur(cost.eur_per_week)} EUR), new setup "
        "against old:\n" + table,
        f"Failed jobs: {failed}"
        + (f" ({retried} attempts retried, counted once)" if retried else "")
        + f". Largest burst: {_minutes(cost.makespan_minutes)} min (old setup: {_minutes(baseline.makespan_minutes)} "
        "min).\n",
        _summary(cost),
    ]
    if not baseline.keeps_up:
        lines.append(
            f"Old setup: {_hours(baseline.busy_hours_per_day)} h of jobs a day do not fit in 24 h on one node: "
            "its queue never drains.\n"
        )
    lines.append(
        "Model (docs/simulation.md): GitLab's queue in id order and tags, each runner's slots held while a pod is "
        "Pending, poll_timeout and the templates' retries, cold starts, warm windows, scale-down after "
        "scale_down_unneeded_time, per-minute billing; jobs sharing a GPU slow down by max(1, gpu_utilization x "
        "jobs on it; MPS: x replicas).\n"
    )
    return "\n".join(part for part in lines if part)


def render_waits(cost: CostReport) -> str:
    """One row per class: jobs, failed, and the waits (min)."""
    header = ("class", "jobs", "failed", "wait p50", "wait p95", "longest", "p95 for a slot", "p95 for a node")
    body = [
        (
            c.job_class,
            str(c.jobs),
            str(c.failed),
            *("-" if value is None else _minutes(value) for value in (c.p50, c.p95, c.longest, c.slot_p95, c.node_p95)),
        )
        for c in cost.classes
    ]
    return render_table(header, body, WIDTH)


def _target(cost: CostReport, weeks: WeeksReport | None) -> str:
    target = cost.merge_request_target_minutes
    if target is None:
        return ""
    if weeks is not None and (line := verdict_line(weeks)):
        first = (
            "" if cost.merge_request_p95 is None else f" (the week above: p95 {_minutes(cost.merge_request_p95)} min)"
        )
        return f"Target platform.slo.merge_request_wait_minutes = {target:g} min: {line}{first}.\n"
    p95 = cost.merge_request_p95
    verdict = {True: "met", False: "MISSED", None: "not judged (no merge-request job in the week)"}[cost.target_met]
    parts = [] if p95 is None else [f"merge-request jobs wait {_minutes(p95)} min (p95)"]
    if failed := cost.waits("merge_request").failed:
        parts.append(f"{failed} merge-request job(s) failed")
    shown = "".join(f": {part}" if not index else f"; {part}" for index, part in enumerate(parts))
    return f"Target platform.slo.merge_request_wait_minutes = {target:g} min: {verdict}{shown}.\n"


def _summary(cost: CostReport) -> str:
    old, new = cost.baseline, cost
    if not old.eur_per_day:
        return ""
    jobs = new.jobs_per_week
    per_job = (
        f"; {format_eur(new.eur_per_week / jobs)} vs {format_eur(old.eur_per_day * 7 / jobs)} EUR per job"
        if jobs
        else ""
    )
    return f"New setup: {_percent(new.eur_per_day / old.eur_per_day)} of the old daily cost{per_job}.\n"


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


def stack_report(platform: Platform, cost: CostReport | None) -> dict[str, object]:
    """The figures the stack exports beside its resources (`capacity`, and `cost`: the simulated day of a
    workload): computed before any registration, from the derived platform."""
    report: dict[str, object] = {"capacity": capacity_rows(platform)}
    if cost is not None:
        report["cost"] = cost.as_json()
    return report
