"""`python -m infra workload --from-gitlab`: the cost report's workload measured from GitLab's job history.

`mapping` (job -> profile) and `measure` (figures, report, YAML) are pure; `gitlab_jobs` reads the jobs
through python-gitlab; `stack_file` writes the `workload:` section back into `Pulumi.<stack>.yaml`.
"""
