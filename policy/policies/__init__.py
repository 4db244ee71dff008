"""gpu-ci's guard rails as Pulumi policies: pure `validate(args, report_violation)` functions, and the pack.

`__main__.py` builds the pack from `POLICIES` (`policy/` is on sys.path when the pack runs, so this package
is `policies` there); tests import it as `policy.policies` and `python -m infra plan` loads it from its
files (never `__main__.py`: building a PolicyPack starts a gRPC server and blocks). The pack is
self-contained: it runs in its own virtualenv next to the program, so it imports nothing from `infra/`
(tests check that its constants agree with the program's). The program imports one module of it,
`definitions` (pure), to say the pack's verdicts at the spec's keys. Modules import each other relatively, so the
package works under any of those names.

- `definitions`: the rules the program also judges, each written once (name, default config, predicate);
  pure, the one module the program imports.
- `inputs`: how a rule reads a resource's inputs (unknown during preview, floats, unwrapped secrets) and
  its config; no rule.
- `cluster_pools`: the Kapsule cluster and its pools (GPU pools scale to zero, taint and config label, the
  config exists, everything protected).
- `runner_release`: the gitlab-runner Helm release (which release is the runner, its RBAC, every Helm
  release atomic or draining) and RBAC Roles.
- `runner_toml`: the runner's config.toml (poll timeout, unprivileged job pods, identity, isolation).
- `namespace_isolation`: Pod Security on namespaces, a default-deny NetworkPolicy in each.
- `gitlab_access`: runner registrations, credentials in CI/CD variables.
- `public_storage`: buckets and registry namespaces stay private.
- `pack`: every rule's name, description and config schema, the enforcement level (what `__main__.py`
  builds the pack from).

This file imports nothing: a package that re-exported its modules would import them while they import it.
"""
