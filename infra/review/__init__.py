"""Merge-request review: the offline plan diff (`plan-diff`), the replacement guard, and the one MR note (`mr-note`).

`diff`, `delta`, `note`, `replacements`, `schema` (what a plan or a preview file must hold) and `markdown`
(how a value is written into the note) are pure (no Pulumi, no network); `inputs` reads the commands' files
through `infra.documents`; `gitlab_notes` is the thin python-gitlab client.
"""
