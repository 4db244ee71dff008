"""`python -m infra workload --from-gitlab`: the simulated week's workload measured from GitLab's job history.

`job_entries` (GitLab's JSON -> checked `Job`s, what was skipped and why), `mapping` (job -> profile), `kinds`
(job -> kind, class, day and hour), `measure` (tallies per profile and kind), `figures` (the kinds to write)
and `report` are pure; `gitlab_jobs` reads the jobs, and the pipelines' sources they lack, through
python-gitlab (`infra.gitlab_api` bounds every answer); `section` is the `workload:` section with the figures
in, which the one stack-file editor (`infra.offline.stack_edit`) writes back into `Pulumi.<stack>.yaml`.
"""
