"""What `workload --from-gitlab` prints on stderr: the figures per profile and kind, and assumed vs measured (pure)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from infra.config.workload import JobClass
from infra.render.text import render_table
from infra.workload.figures import Figure, Resolution
from infra.workload.measure import RUNNER_SYSTEM_FAILURE, Measurement, Tally, percentile
from infra.workload.model_error import ModelError
from infra.workload.waits import PoolStarts, Waits

MAX_REASONS_SHOWN = 5
"""Failure reasons a row names; the rest are counted together."""
HEADER = (
    "profile",
    "kind",
    "class",
    "jobs",
    "jobs/day",
    "days",
    "hours",
    "duration p50 / p90 (min)",
    "queued p50 / p90 (min)",
    "failures by reason",
    "",
)


def _pair(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"{low:.1f} / {high:.1f}"


def _failures(counter: Counter[str], shown: int = MAX_REASONS_SHOWN) -> str:
    ordered = sorted(counter.items(), key=lambda i: (-i[1], i[0]))
    text = ", ".join(f"{count} {reason}" for reason, count in ordered[:shown])
    rest = sum(count for _, count in ordered[shown:])
    return text + (f", {rest} of {len(ordered) - shown} other reasons" if rest else "")


def _cells(tally: Tally) -> tuple[str, str, str, str]:
    return (
        str(tally.jobs),
        _pair(tally.duration_minutes(50), tally.duration_minutes(90)),
        _pair(tally.queued_minutes(50), tally.queued_minutes(90)),
        _failures(tally.failures) or "-",
    )


def render_report(
    measurement: Measurement, resolution: Resolution, project: str, poll_timeouts: Mapping[str, int] | None = None
) -> str:
    """One row per kind of each profile (jobs a day on the days it runs, its days and hours), the other jobs,
    bursts per day, and what failures usually mean. `poll_timeouts`: each runner's poll_timeout in seconds, by
    pool."""
    days = measurement.days
    zone = getattr(measurement.zone, "key", "UTC")
    head = (
        f"{project}: {measurement.seen} jobs created {measurement.since:%Y-%m-%d %H:%M} .. "
        f"{measurement.until:%Y-%m-%d %H:%M} UTC ({days:.1f} days observed)\n\n"
    )
    rows: list[tuple[str, ...]] = []
    for kind in resolution.kinds:
        jobs, durations, queued, failures = _cells(kind.tally)
        rows.append(
            (
                kind.profile,
                kind.name,
                kind.job_class or "unknown",
                jobs,
                "-" if kind.per_day is None else f"{kind.per_day:.1f}",
                kind.days or "-",
                "-" if kind.window is None else "-".join(kind.window),
                durations,
                queued,
                failures,
                kind.note,
            )
        )
    other = measurement.other
    jobs, durations, queued, failures = _cells(other)
    rows.append((other.name, "-", "-", jobs, f"{other.per_day(days):.1f}", "-", "-", durations, queued, failures, ""))
    if not any(kind.note for kind in resolution.kinds):
        rows = [row[:-1] for row in rows]
    text = head + render_table(HEADER if len(rows[0]) == len(HEADER) else HEADER[:-1], rows)
    pipelines = measurement.training_pipelines
    text += (
        f"\nbursts: {len(pipelines)} pipelines with a training job, {measurement.bursts_per_day:.1f} per day\n"
        f"a kind's jobs/day are on the days it runs; days and hours are in {zone} (hours: its middle 90 % of "
        "arrivals)\n"
        "durations are of successful jobs; jobs/day counts every job a runner took (failed ones too)\n"
        f"a duration is the run alone: the wait for the pod is taken off where the trace told it "
        f"({_with_prepare(measurement)}); a job that shared its GPU ran slower: see docs/workload.md\n"
    )
    if any(RUNNER_SYSTEM_FAILURE in p.failures for p in measurement.profiles.values()):
        waited = _poll_timeouts(poll_timeouts or {})
        text += (
            f"note: {RUNNER_SYSTEM_FAILURE} is usually a job pod that waited past the runner's poll_timeout{waited} "
            "for a node: a GPU pool scaling up from zero took longer, or no node could be added\n"
        )
    return text


def _with_prepare(measurement: Measurement) -> str:
    durations = sum(len(p.durations) for p in measurement.profiles.values())
    told = sum(p.with_prepare for p in measurement.profiles.values())
    return f"{told} of {durations} durations"


def _poll_timeouts(seconds: Mapping[str, int]) -> str:
    if not seconds:
        return ""
    if len(set(seconds.values())) == 1:
        return f" ({next(iter(seconds.values()))} s here)"
    return " (" + ", ".join(f"{pool}: {value} s" for pool, value in sorted(seconds.items())) + ")"


def render_comparison(figures: list[Figure], section: str = "platform.workload") -> str:
    """Assumed (the stack file) vs measured (GitLab) vs what is written, one row per key."""
    rows = [(f.key, "-" if f.assumed is None else str(f.assumed), f.measured, str(f.written), f.note) for f in figures]
    return f"assumed vs measured ({section}):\n" + render_table(("key", "assumed", "measured", "written", ""), rows)


def _minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 60:.1f}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def render_prepares(starts: Mapping[str, PoolStarts], waits: Mapping[JobClass, Waits], error: ModelError | None) -> str:
    """The traces' figures: each pool's cold and warm prepares, each class's wait from queued to running, and
    the model's error (the window replayed) beside it."""
    rows = []
    for pool, start in starts.items():
        cold = [percentile(start.cold, 50), percentile(start.cold, 90), max(start.cold, default=None)]
        rows.append(
            (
                pool,
                str(len(start.cold)),
                " / ".join(_minutes(value) for value in cold),
                str(len(start.warm)),
                " / ".join(_minutes(percentile(start.warm, pct)) for pct in (50, 90)),
            )
        )
    text = "prepare: from a runner taking a job to its pod running (the traces; cold: the pod waited for a node)\n"
    text += render_table(("pool", "cold starts", "p50 / p90 / max (min)", "warm", "p50 / p90 (min)"), rows)
    replayed = {c.job_class: c for c in error.classes} if error is not None else {}
    rows = []
    for job_class, wait in waits.items():
        model = replayed.get(job_class)
        rows.append(
            (
                job_class,
                str(wait.n),
                f"{_minutes(wait.p(50))} / {_minutes(wait.p(95))}",
                "-"
                if model is None
                else f"{_minutes(percentile(model.replayed, 50))} / {_minutes(percentile(model.replayed, 95))}",
                "-" if model is None else f"{_ratio(model.ratio(50))} / {_ratio(model.ratio(95))}",
            )
        )
    text += "\nwait from queued to running (queued_duration + prepare), measured and by the model (the window replayed)"
    text += ":\n"
    text += render_table(("class", "n", "measured p50 / p95 (min)", "model p50 / p95 (min)", "model / measured"), rows)
    lost = sum(c.lost for c in replayed.values())
    if lost:
        text += f"note: {lost} jobs the replay did not run (they failed in the model) are left out of both sides\n"
    if error is not None and error.note:
        text += f"note: the model's error: {error.note}\n"
    return text
