"""GitLab's queue of pending jobs, as a runner manager asking for work sees it (pure).

A job becomes pending at its creation. A manager with a free slot gets the lowest-id pending job whose tags
are a non-empty subset of its runner's tags (project runners order the queue by build id; a runner without
`run_untagged` never takes an untagged job). A pending job is dropped with `stuck_or_timeout_failure` 24 h
after its creation, or 1 h after it when no runner's tags match it (GitLab's stuck-builds worker).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping

from infra.sim.runners import RunnerState
from infra.sim.scenario import MS_PER_MINUTE
from infra.sim.state import JobState

GITLAB_PENDING_OUTDATED_MINUTES = 24 * 60
GITLAB_PENDING_STUCK_MINUTES = 60


class GitlabQueue:
    """The pending jobs, one id heap per tag set, and which runners match each tag set."""

    def __init__(self, jobs: Mapping[int, JobState], runners: Iterable[RunnerState]) -> None:
        self.jobs = jobs
        self.queues: dict[frozenset[str], list[int]] = {
            tags: [] for tags in {j.spec.tags for j in jobs.values() if j.spec.tags}
        }
        self.matchers: dict[frozenset[str], list[RunnerState]] = {tags: [] for tags in self.queues}
        for runner in runners:
            runner.groups = [heap for tags, heap in self.queues.items() if tags <= runner.spec.tags]
            for tags in self.queues:
                if tags <= runner.spec.tags:
                    self.matchers[tags].append(runner)

    def enqueue(self, job: JobState, now: int) -> tuple[int, str]:
        """The job is pending from `now`; returns when GitLab drops it if no runner took it, and why."""
        job.state = "queued"
        tags = job.spec.tags
        matched = bool(tags) and bool(self.matchers[tags])
        if tags:
            heapq.heappush(self.queues[tags], job.spec.id)
            for runner in self.matchers[tags]:
                runner.starved = False
        if matched:
            return now + GITLAB_PENDING_OUTDATED_MINUTES * MS_PER_MINUTE, "outdated"
        return now + GITLAB_PENDING_STUCK_MINUTES * MS_PER_MINUTE, "stuck"

    def next_for(self, runner: RunnerState) -> JobState | None:
        """The lowest-id queued job among the tag sets the runner matches (GitLab: build_id ASC), taken off."""
        best: list[int] | None = None
        for heap in runner.groups:
            while heap and self.jobs[heap[0]].state != "queued":
                heapq.heappop(heap)
            if heap and (best is None or heap[0] < best[0]):
                best = heap
        return self.jobs[heapq.heappop(best)] if best is not None else None
