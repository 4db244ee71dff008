"""Merge-request review: the offline plan diff (`plan-diff`) and the one MR note (`mr-note`).

`plan_diff` and `note` are pure (no Pulumi, no network); `gitlab_notes` is the thin python-gitlab client.
"""
