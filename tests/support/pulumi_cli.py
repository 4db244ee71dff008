"""The Pulumi CLI's version, as `tools/engine/go.mod` pins it once (docs/operations.md, "One CLI version")."""

from __future__ import annotations

import re

from support.paths import ROOT

GO_MOD = ROOT / "tools" / "engine" / "go.mod"


def cli_version() -> str:
    """The CLI's version as tools/engine/go.mod requires it (`3.274.1`): what scripts/engine/build builds."""
    found = re.findall(r"^require github\.com/pulumi/pulumi/pkg/v3 v(\S+)$", GO_MOD.read_text(), re.MULTILINE)
    assert len(found) == 1, f"{GO_MOD}: one `require github.com/pulumi/pulumi/pkg/v3 vX.Y.Z` line, found {found}"
    return str(found[0])
