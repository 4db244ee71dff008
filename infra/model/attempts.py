"""How long a job may wait for a node, over its attempts (pure): the retries and each attempt's poll_timeout.

A pod that finds no node within `poll_timeout` fails its job as `runner_system_failure`. The CI templates
retry what the platform caused (`RETRY_WHEN`, never a script failure), `RETRY_MAX` times: each retry is a new
job at the end of GitLab's queue, with its own poll_timeout and job timeout. So the wait a job survives is
spread over `ATTEMPTS` attempts: the poll_timeout P of a pool's runner is the smallest whole minute with
ATTEMPTS x P >= `runner.node_wait_tolerance` + the pool's cold start + `runner.poll_timeout_margin_minutes`
(and never below the cold start plus the margin), and a pool survives an outage of its nodes (a stock-out,
a slow boot) of up to ATTEMPTS x P - cold start - margin minutes. The cold start is the pool's slowest figure
(`Pool.worst_cold_start_minutes`: the max boot measured, else the p90, else the median): a node that boots as
slowly as the worst one seen still finds its job waiting. Every attempt's job timeout must hold P plus
the pool's longest job (`infra.model.checks`).
"""

from __future__ import annotations

RETRY_MAX = 2
"""GitLab's most for `retry: max`."""
RETRY_WHEN = ("runner_system_failure", "stuck_or_timeout_failure", "scheduler_failure")
"""Failures the platform causes (no node within poll_timeout, a runner gone, stuck, the scheduler): retried.
Script failures and job timeouts are the job's own: never retried."""
ATTEMPTS = 1 + RETRY_MAX


def poll_timeout_minutes(cold_start: int, margin: int, tolerance: int) -> int:
    """Each attempt's poll_timeout: the attempts together outlast the tolerance plus a cold start and margin."""
    return max(cold_start + margin, -(-(tolerance + cold_start + margin) // ATTEMPTS))


def survived_outage_minutes(poll_timeout: int, cold_start: int, margin: int) -> int:
    """The longest outage of a pool's nodes its jobs survive: the node must be up, with margin, before the
    last attempt's poll_timeout."""
    return ATTEMPTS * poll_timeout - cold_start - margin
