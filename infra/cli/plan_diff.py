"""`python -m infra plan-diff BASE.json HEAD.json`: what the head's offline plan changes, as preview text.

Both files are `python -m infra plan --json` documents (secrets already masked), read within the plan
files' budget and checked field by field (`infra.review.schema`): a file that is not such a plan exits 2
with one line naming the file and the field. The text has the layout of `pulumi preview --diff`, so
`python -m infra mr-note --plan-diff FILE` posts it as the same note. It leads with what a reviewer asks: the
resources, the cost and wait deltas and the target's verdict, the policy result; the simulation's own figures
(the busiest burst job by job, per class, per pool) are one line per group, each leaf with `--full`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from infra.cli import fail
from infra.documents import DocumentError
from infra.review.diff import diff_plans, render_diff
from infra.review.inputs import load_plan


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "plan-diff", help="compare two offline plans (plan --json) resource by resource, as preview-like text"
    )
    parser.add_argument("base", help="the base's plan (python -m infra plan --json)")
    parser.add_argument("head", help="the head's plan")
    parser.add_argument("--base-label", help="how to name the base in the text (default: the file name)")
    parser.add_argument("--head-label", help="how to name the head (default: the file name)")
    parser.add_argument(
        "--full",
        action="store_true",
        help="list every figure of the simulation that moved (default: one line per group, e.g. cost.burst)",
    )
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    try:
        base, _ = load_plan(args.base)
        head, _ = load_plan(args.head)
    except DocumentError as err:
        return fail(str(err))
    labels = args.base_label or Path(args.base).name, args.head_label or Path(args.head).name
    sys.stdout.write(render_diff(diff_plans(base, head), *labels, full=args.full))
    return 0
