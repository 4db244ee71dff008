"""The gpu-ci policy pack: `pulumi preview --policy-pack policy/` runs this file (policy/README.md).

It only builds the pack: PolicyPack(...) starts the analyzer's gRPC server and blocks, so nothing imports
this file; the rules live in the package `policies/` (this directory is on sys.path when the pack runs).
"""

from policies import ENFORCEMENT_LEVEL, PACK_NAME, POLICIES
from pulumi_policy import PolicyPack

PolicyPack(name=PACK_NAME, policies=POLICIES, enforcement_level=ENFORCEMENT_LEVEL)
