"""A training pipeline read the way GitLab reads it (`resolve`), and the platform's rules on it (`rules`).

Pure: no Pulumi import. `python -m infra check-ci` is the command in front of it.
"""
