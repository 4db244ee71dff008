"""`python -m infra plan-diff BASE.json HEAD.json`: what the head's offline plan changes, as preview text.

Both files are `python -m infra plan --json` documents (secrets already masked). The text has the layout
of `pulumi preview --diff`, so `python -m infra mr-note --plan-diff FILE` posts it as the same note.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from infra.review.diff import PlanDocumentError, check_document, diff_plans, render_diff


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "plan-diff", help="compare two offline plans (plan --json) resource by resource, as preview-like text"
    )
    parser.add_argument("base", type=Path, help="the base's plan (python -m infra plan --json)")
    parser.add_argument("head", type=Path, help="the head's plan")
    parser.add_argument("--base-label", help="how to name the base in the text (default: the file name)")
    parser.add_argument("--head-label", help="how to name the head (default: the file name)")
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    try:
        base = check_document(_load(args.base), str(args.base))
        head = check_document(_load(args.head), str(args.head))
    except (OSError, ValueError) as err:  # PlanDocumentError and JSONDecodeError are ValueErrors
        print(f"error: {err}", file=sys.stderr)
        return 2
    diff = diff_plans(base, head)
    sys.stdout.write(render_diff(diff, args.base_label or args.base.name, args.head_label or args.head.name))
    return 0


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise PlanDocumentError(f"{path}: not JSON ({err})") from None
