"""A training pipeline read the way GitLab reads it (`resolve`), and the platform's rules on it (`rules`).

`resolve` runs GitLab's steps over its parts: `reading` (each file within the documents' budget), `includes`,
`extends` (with `!reference`) and `jobs` (defaults, inherit, `parallel: matrix`, keyword types), sharing the
data of `resolved`; top-level keys YAML reads as no string are named by `keys`. `rules` checks each created job
with its variables from every source, once per rule that may apply (`environment`), routes it by its tags as GitLab
expands and parses them (`tags`, with `variables`) and checks it on the runner that takes it, its images included
(`images`, matched with `globs`).

Pure: no Pulumi import. `python -m infra check-ci` is the command in front of it.
"""
