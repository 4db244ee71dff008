"""GitLab: who may send jobs to the runners (registrations take tagged jobs only, a project runner is locked,
its access level allowed, and protected refs only on an MPS pool: a stack rule) and who may read a credential
kept in a CI/CD variable (masked and protected).

A credential name's words are `definitions.CREDENTIAL_NAME_WORDS`, which the spec reads too; the value shapes
are also in `infra/config/credentials.py` (the spec's are more, and it redacts them wherever text is shown):
`tests/config/test_credentials_agree.py` holds the two together."""

from __future__ import annotations

import re
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs, StackValidationArgs

from . import definitions
from .cluster_pools import CONFIG_MAP_TYPE, DEVICE_PLUGIN_CONFIG_LABEL, POOL_TYPES
from .inputs import as_list, config_list, config_value, known, show

RUNNER_REGISTRATION_TYPES = frozenset({"gitlab:index/userRunner:UserRunner", "gitlab:index/runner:Runner"})
VARIABLE_TYPES = frozenset(
    {
        "gitlab:index/projectVariable:ProjectVariable",
        "gitlab:index/groupVariable:GroupVariable",
        "gitlab:index/instanceVariable:InstanceVariable",
    }
)
ACCESS_LEVELS = ["not_protected", "ref_protected"]
"""GitLab runner access levels: `ref_protected` takes jobs of protected branches and tags only."""

CREDENTIAL_KEY = re.compile(definitions.CREDENTIAL_NAME_WORDS, re.IGNORECASE)
"""Variable names that say "credential", in any case (`definitions.CREDENTIAL_NAME_WORDS`)."""
CREDENTIAL_VALUE = re.compile(
    r"\bgl[a-z]{1,6}-[0-9A-Za-z_-]{16,}"  # GitLab tokens: glpat-, glrt-, gldt-, ...
    r"|\bgh[pousr]_[0-9A-Za-z]{30,}|\bgithub_pat_[0-9A-Za-z_]{30,}"  # GitHub
    r"|\bSCW[0-9A-Z]{17}\b"  # Scaleway access key
    r"|\b(AKIA|ASIA)[0-9A-Z]{16}\b"  # AWS access key
    r"|\bhf_[0-9A-Za-z]{30,}"  # Hugging Face
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|\beyJ[0-9A-Za-z_-]{10,}\.eyJ[0-9A-Za-z_-]{10,}"  # a JWT
)
"""Values that are credentials whatever the variable is called."""


def runner_registration_scoped(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """The GitLab runner registration takes tagged jobs only, a project runner is locked to its project,
    and its access level is one the policy config allows.

    Why: an untagged runner takes any job of any project that can use it (the GPU nodes become everyone's
    shared runner); an unlocked project runner can be enabled by any Maintainer of another project;
    `not_protected` lets jobs of every branch run there, which a stack may forbid (`allowed_access_levels`).
    """
    if args.resource_type not in RUNNER_REGISTRATION_TYPES:
        return
    props, where = args.props, f"GitLab runner '{known(args.props, 'description') or args.name}'"
    untagged = props.get("untagged") if args.resource_type.endswith("UserRunner") else props.get("runUntagged")
    if untagged is not False:
        report_violation(f"{where}: untagged={show(untagged)}: set untagged: false (tagged jobs only)", None)
    runner_type = known(props, "runnerType")
    if runner_type == "project_type" and props.get("locked") is not True:
        report_violation(
            f"{where}: locked={show(props.get('locked'))}: a project runner must be locked to its project", None
        )
    level = props.get("accessLevel")
    allowed = [str(a) for a in as_list(config_value(args, "allowed_access_levels", ACCESS_LEVELS))]
    if level not in allowed:
        report_violation(
            f"{where}: accessLevel={show(level)}: allowed are {allowed} (this policy's allowed_access_levels; "
            "gpu-ci: platform.runner.access_level)",
            None,
        )


# ---------------------------------------------------------------------------------------------------------
# CI/CD variables


def looks_like_credential(key: str, value: Any) -> str | None:
    """Why a variable looks like a credential ("its name", "its value"), or None."""
    if CREDENTIAL_KEY.search(key):
        return "its name"
    if isinstance(value, str) and CREDENTIAL_VALUE.search(value):
        return "its value"
    return None


def ci_secret_variables_masked(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """A CI/CD variable holding a credential is masked (or hidden) and protected.

    Why: unmasked, a credential prints in clear in any job log that echoes it; unprotected, any branch's
    pipeline (anyone with push access) can read it. The value itself never appears in the message.
    """
    if args.resource_type not in VARIABLE_TYPES:
        return
    key = known(args.props, "key")
    if not isinstance(key, str):
        return
    if key in as_list(config_value(args, "extra_secret_keys", [])):
        reason: str | None = "the policy's extra_secret_keys"
    else:
        reason = looks_like_credential(key, known(args.props, "value"))  # unknown during preview: name only
    if reason is None:
        return
    masked = args.props.get("masked") is True or args.props.get("hidden") is True
    if not definitions.unguarded_knobs(
        key, masked, args.props.get("protected"), config_list(args, "allow_unprotected")
    ):
        return
    scope = known(args.props, "project") or known(args.props, "group") or "instance"
    scope = scope if isinstance(scope, str) else show(scope)  # a numeric project id arrives as a float
    report_violation(
        f"CI variable '{key}' ({scope}): masked={show(args.props.get('masked'))}, "
        f"protected={show(args.props.get('protected'))}: it looks like a credential ({reason}) and must be "
        f"masked and protected (gpu-ci: platform.ci.variables.{key}.secret, which defaults to both)",
        None,
    )


# ---------------------------------------------------------------------------------------------------------
# Stack: MPS only where the runners take protected branches' jobs

MERGE_REQUEST_TAG_SUFFIX = "-merge_request_event"
"""gpu-ci's held merge-request slots: that runner holds `<pool>-merge_request_event`, not the pool's name."""
_MPS_SECTION = re.compile(r"""^[^#\n]*?["']?\bmps["']?\s*:""", re.MULTILINE)
"""A device-plugin config (YAML) with a `sharing.mps` section, block or flow style (the pack reads no YAML: a
key named `mps` anywhere outside a comment counts, which can only over-report)."""


def mps_pools_protected_runners(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """A GPU pool whose device-plugin config is MPS is served only by runners that take protected refs' jobs.

    Why: NVIDIA's device plugin mounts the MPS daemon's pipe directory and a node-wide `/dev/shm` into every
    client on the GPU: a job of an unprotected branch could read a protected job's shared memory or tell the
    daemon to lift the MPS limits. A runner serves a pool when it holds the pool's name (gpu-ci's tags), or
    the pool's merge-request tag.
    """
    configs = {
        key: text
        for r in args.resources
        if r.resource_type == CONFIG_MAP_TYPE
        for key, text in (known(r.props, "data") or {}).items()
        if isinstance(text, str)
    }
    mps_pools = {
        str(known(pool.props, "name") or pool.name)
        for pool in args.resources
        if pool.resource_type in POOL_TYPES
        and _MPS_SECTION.search(configs.get(str(known(pool.props, "labels", DEVICE_PLUGIN_CONFIG_LABEL)), ""))
    }
    for runner in args.resources:
        if runner.resource_type not in RUNNER_REGISTRATION_TYPES:
            continue
        tags = {str(tag) for tag in as_list(known(runner.props, "tagLists") or known(runner.props, "tagList"))}
        served = sorted(p for p in mps_pools if p in tags or f"{p}{MERGE_REQUEST_TAG_SUFFIX}" in tags)
        level = known(runner.props, "accessLevel")
        if served and not definitions.may_serve_mps(level):
            report_violation(
                f"GitLab runner '{known(runner.props, 'description') or runner.name}': accessLevel={show(level)} on "
                f"MPS pool(s) {', '.join(served)}: jobs of unprotected branches would share the MPS daemon's pipe "
                f"and /dev/shm with protected ones; set accessLevel {definitions.MPS_ACCESS_LEVEL} (gpu-ci: "
                "runner.access_level) or use time-slicing on the pool",
                runner.urn,
            )
