"""A job's `retry:` as GitLab reads it, against the retries the platform's templates set (pure: no Pulumi import).

The templates retry what the platform causes (`infra.model.attempts`: no node within poll_timeout, a runner gone,
stuck, the scheduler), twice; a job that extends one and retries less, or not those failures, fails for good when
a GPU node is late. `check-ci` (`infra.pipeline.rules`) reports what `retry_problem` finds.
"""

from __future__ import annotations

from infra.model.attempts import RETRY_MAX, RETRY_WHEN
from infra.pipeline.variables import value_text

RETRY_KEYS = frozenset({"max", "when", "exit_codes"})
RETRY_REASONS = frozenset(
    {
        "always",
        "unknown_failure",
        "script_failure",
        "api_failure",
        "stuck_or_timeout_failure",
        "runner_system_failure",
        "runner_unsupported",
        "stale_schedule",
        "job_execution_timeout",
        "archived_failure",
        "unmet_prerequisites",
        "scheduler_failure",
        "data_integrity_failure",
    }
)
"""`retry: when:` values GitLab takes (its docs' list); any other refuses the pipeline."""


def retry_problem(retry: object) -> str | None:
    """Why a job's `retry:` no longer retries what the platform causes as the templates do, or None.

    GitLab: `retry: N` retries N times on any failure; `retry: {max: N, when: [...]}` (`when` a reason or a list;
    absent: `always`). The templates set `max: 2` on runner_system_failure, stuck_or_timeout_failure and
    scheduler_failure: a job whose pod found no node within poll_timeout is retried, twice."""
    if isinstance(retry, bool) or not isinstance(retry, int | dict):
        shown = "empty" if retry is None else repr(value_text(retry) or type(retry).__name__)
        return f"{shown} is not a retry GitLab accepts (a number or max/when)"
    maximum = retry if isinstance(retry, int) else retry.get("max", 0)
    when = ["always"] if isinstance(retry, int) else retry.get("when", ["always"])
    when = [when] if isinstance(when, str) else when
    if isinstance(maximum, bool) or not isinstance(maximum, int) or not isinstance(when, list):
        return "max and when are not a retry GitLab accepts (max: 0-2, when: a reason or a list)"
    extra = sorted(str(key) for key in retry if key not in RETRY_KEYS) if isinstance(retry, dict) else []
    unknown = [str(reason) for reason in when if reason not in RETRY_REASONS]
    if maximum > RETRY_MAX or extra or unknown:
        what = (
            f"max {maximum} (GitLab takes 0 to {RETRY_MAX})"
            if maximum > RETRY_MAX
            else f"unknown keys {', '.join(extra)}"
            if extra
            else f"when {', '.join(unknown)} (no failure reason GitLab knows)"
        )
        return f"{what}: GitLab refuses the pipeline"
    if maximum < RETRY_MAX:
        return (
            f"max {maximum}: fewer than the templates' {RETRY_MAX} retries of what the platform causes: a GPU node "
            "late or out of stock for longer than the attempts' poll_timeouts fails the job"
        )
    missing = [reason for reason in RETRY_WHEN if reason not in when and "always" not in when]
    if missing:
        return (
            f"when {when} leaves out {', '.join(missing)}: those failures come from the platform (no node within "
            "poll_timeout, a runner gone, the scheduler) and are retried by the templates"
        )
    return None
