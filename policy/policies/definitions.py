"""The rules the program also judges, each written once: its name, its default config and its predicate.

Pure: the standard library only (no pulumi_policy), so the program imports this module, and only this one, of
the pack: the spec's warnings (`infra.model.checks`) and refusals (`infra.config.checks`) say a rule's
verdict at the spec's key before any resource exists, naming the rule (`Problem.policy`), and `recommend`
skips a candidate the pack would refuse by those names (`infra.sim.search.pack_refusals`). The pack's rules
read the same predicates and defaults here to judge a resource's inputs. So a rule changed here changes the
pack's verdict, the spec's warning and recommend's refusal together (`tests/policy/test_definitions.py`).

The pack stays standalone: this file is part of `policy/`, copied with it as the trusted pack, and the
pack's rules reach it relatively. Everyone reads the defaults at call time (`definitions.NAME`, never a copy
taken at import), so there is one value to change.

A rule's verdict on its inputs, as the pack sees them: `None`, a float where the spec has an int, a name the
pack's config lists.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

# ---------------------------------------------------------------------------------------------------------
# gpu-pool-scales-to-zero

GPU_POOL_SCALES_TO_ZERO = "gpu-pool-scales-to-zero"
DEFAULT_ALWAYS_ON_POOLS: tuple[str, ...] = ()
"""`always_on_pools`: the GPU pools allowed to keep nodes up while no job runs."""


def keeps_gpu_nodes_up(fewest_nodes: Any, pool: str, always_on_pools: Collection[str] | None = None) -> bool:
    """Whether a GPU pool that keeps `fewest_nodes` up at every minute (its `minSize`; the spec also counts warm
    windows over the whole week) is refused: any but 0, unless the pool is one of `always_on_pools`."""
    allowed = DEFAULT_ALWAYS_ON_POOLS if always_on_pools is None else always_on_pools
    return fewest_nodes != 0 and pool not in allowed


# ---------------------------------------------------------------------------------------------------------
# runner-poll-timeout-covers-cold-start

RUNNER_POLL_TIMEOUT_COVERS_COLD_START = "runner-poll-timeout-covers-cold-start"
DEFAULT_MIN_POLL_TIMEOUT_SECONDS = 900
"""`min_poll_timeout_seconds`: a GPU node takes ~10-15 min from zero to a running pod on Kapsule
(docs/runbook.md): 15 min by default, the program's default `cold_start_minutes`."""


def min_poll_timeout_seconds(configured: Any = None) -> float:
    """The floor the rule holds a poll_timeout to: the policy config's, else the default."""
    return float(DEFAULT_MIN_POLL_TIMEOUT_SECONDS if configured is None else configured)


def poll_timeout_too_short(poll_timeout_seconds: Any, minimum: float | None = None) -> bool:
    """Whether a Kubernetes runner's poll_timeout is refused: not a number, or below the floor."""
    floor = min_poll_timeout_seconds() if minimum is None else minimum
    return not isinstance(poll_timeout_seconds, int | float) or poll_timeout_seconds < floor


# ---------------------------------------------------------------------------------------------------------
# registry-namespace-private

REGISTRY_NAMESPACE_PRIVATE = "registry-namespace-private"
DEFAULT_ALLOWED_PUBLIC_NAMESPACES: tuple[str, ...] = ()
"""`allowed_public_namespaces`: registry namespaces meant to be public."""


def namespace_public(is_public: Any, namespace: str, allowed: Collection[str] | None = None) -> bool:
    """Whether a registry namespace is refused: public, and not one of `allowed`."""
    allowed = DEFAULT_ALLOWED_PUBLIC_NAMESPACES if allowed is None else allowed
    return is_public is True and namespace not in allowed


# ---------------------------------------------------------------------------------------------------------
# ci-secret-variables-masked

CI_SECRET_VARIABLES_MASKED = "ci-secret-variables-masked"
CREDENTIAL_NAME_WORDS = (
    r"(?:^|_)(?:TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|APIKEY|AUTH|KUBECONFIG|"
    r"(?:API|ACCESS|SECRET|PRIVATE|SSH|SIGNING|ENCRYPTION|DEPLOY|CLIENT)_KEY)(?:_|$)"
)
"""The words (a regex over `_`-separated upper-case words) of a variable name that say it holds a credential:
HF_TOKEN, WANDB_API_KEY, SCW_SECRET_KEY, DB_PASSWORD (not MAX_TOKENS). The pack reads names in any case; the spec
refuses such a name as a plain value and its redactor reads the environment's names by them
(`infra.config.credentials`)."""
DEFAULT_ALLOW_UNPROTECTED: tuple[str, ...] = ()
"""`allow_unprotected`: credentials that may stay unprotected (still masked)."""


def unguarded_knobs(
    key: str, masked: Any, protected: Any, allow_unprotected: Collection[str] | None = None
) -> list[str]:
    """What a credential's CI/CD variable leaves off that the rule refuses: `protected` (unless the key is one
    of `allow_unprotected`), then `masked`; [] when the variable passes."""
    allowed = DEFAULT_ALLOW_UNPROTECTED if allow_unprotected is None else allow_unprotected
    off = [] if protected is True or key in allowed else ["protected"]
    return off + ([] if masked is True else ["masked"])


# ---------------------------------------------------------------------------------------------------------
# mps-pools-protected-runners

MPS_POOLS_PROTECTED_RUNNERS = "mps-pools-protected-runners"
MPS_ACCESS_LEVEL = "ref_protected"
"""The one GitLab runner access level that may serve an MPS pool: jobs of protected branches and tags only."""


def may_serve_mps(access_level: Any) -> bool:
    """Whether a runner registration with this access level may serve a pool whose GPUs MPS shares."""
    return bool(access_level == MPS_ACCESS_LEVEL)


RULES = (
    GPU_POOL_SCALES_TO_ZERO,
    RUNNER_POLL_TIMEOUT_COVERS_COLD_START,
    REGISTRY_NAMESPACE_PRIVATE,
    CI_SECRET_VARIABLES_MASKED,
    MPS_POOLS_PROTECTED_RUNNERS,
)
"""The pack's rules defined here: the ones whose verdict the program also says (`Problem.policy` names one)."""
