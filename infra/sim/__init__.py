"""The dispatch simulation (pure): what GitLab, the runners and the cluster do with a day or a pipeline of jobs.

- `scenario`: what a run takes (pools, runners, jobs, upgrades) and its caps; `results`: what it reports;
- `engine.simulate`: the run, over `schedule` (the event heap), `gitlab` (the queue), `runners` (managers and
  slots, upgrades), `cluster` (scheduler, GPUs, autoscaler, billing) and `state` (the records they change);
- `bound`: the least makespan of any dispatch that runs every job; `target_bound` (from the platform:
  `target_cost`): the least a week meeting the merge-request target can cost, no dispatch beats it;
- `search` (its report: `search_report`), then `refine`: `recommend`'s two steps;
- `platform_scenario`: the derived platform and its workload as a scenario; `day`: the simulated day, new
  setup against old (the plan's cost); `pipeline`: a repository's training jobs; `what_if`: `simulate --set`.
"""
