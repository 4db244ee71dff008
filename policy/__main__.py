"""The gpu-ci policy pack: `pulumi preview --policy-pack policy/` runs this file (policy/README.md).

It only builds the pack: PolicyPack(...) starts the analyzer's gRPC server and blocks, so nothing imports
this file; the rules live in the package `policies/` (this directory is on sys.path when the pack runs).
"""

# `policies` as the analyzer finds it (policy/ on sys.path); mypy checks those files as `policy.policies`.
from policies.pack import ENFORCEMENT_LEVEL, PACK_NAME, POLICIES  # type: ignore[import-not-found]
from pulumi_policy import PolicyPack

PolicyPack(name=PACK_NAME, policies=POLICIES, enforcement_level=ENFORCEMENT_LEVEL)
