"""`python -m infra guard-replacements PREVIEW.json`: refuse a plan that replaces or deletes a pool, a
namespace, a runner registration or the cluster, unless GPU_CI_ALLOW_REPLACE=1 (docs/security.md).

The `up` job runs it on `pulumi preview --json` just before `pulumi up`, in the same resource group, so
no other apply can change the state in between. Exit 0: nothing guarded is lost (or it is allowed);
1: refused, each resource named with the fields forcing the replacement; 2: not a preview document (one
line naming the file and the field), including a preview without steps: the guard does not call a document
it cannot read "nothing replaced".
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping

from infra.cli import fail
from infra.documents import DocumentError
from infra.review.inputs import load_preview
from infra.review.replacements import ALLOW_VARIABLE, allowed, find_destructive
from infra.untrusted import printable


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "guard-replacements",
        help="refuse a preview that replaces or deletes a pool, namespace or runner (GPU_CI_ALLOW_REPLACE=1 allows)",
    )
    parser.add_argument("preview", help="`pulumi preview --json` output ('-': stdin)")
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    try:
        findings = find_destructive(load_preview(args.preview))
    except DocumentError as err:
        return fail(str(err))
    if not findings:
        print("guard-replacements: no pool, namespace, runner registration or cluster is replaced or deleted")
        return 0
    let_through = allowed(env.get(ALLOW_VARIABLE))
    for finding in findings:
        level = "allowed" if let_through else "error"
        shown = printable(finding.describe(), None)  # a URN cannot carry a token out
        print(f"{level}: the plan {shown}", file=sys.stderr)
    if let_through:
        shown = printable(env.get(ALLOW_VARIABLE, ""), None)
        print(f"guard-replacements: {ALLOW_VARIABLE}={shown}: letting {len(findings)} through")
        return 0
    print(
        f"error: running jobs would be lost; follow docs/security.md ('Safe replacements'), or re-run `up` "
        f"with {ALLOW_VARIABLE}=1 once the drain is planned",
        file=sys.stderr,
    )
    return 1
