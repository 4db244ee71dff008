"""`python -m infra workload --from-gitlab`: the cost report's workload measured from GitLab's job history.

`job_entries` (GitLab's JSON -> checked `Job`s, what was skipped and why), `mapping` (job -> profile) and
`measure` (figures, report) are pure; `gitlab_jobs` reads the jobs through python-gitlab (`infra.gitlab_api`
bounds every answer); `stack_file` writes the `workload:` section back into `Pulumi.<stack>.yaml`.
"""
