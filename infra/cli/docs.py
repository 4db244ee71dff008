"""`python -m infra docs`: write docs/config-reference.md from the spec's models (`--check`: only compare).

The reference is generated so that it cannot drift from what `load_spec` accepts; CI's test compares the
committed file with the generated text, and this command is how it is brought back in line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from infra.render.config_reference import REGENERATE, config_reference

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "config-reference.md"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("docs", help="write the config reference (docs/config-reference.md) from the spec")
    parser.add_argument("--out", type=Path, default=REFERENCE, help="where to write it (default: %(default)s)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the file is out of date")
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    text = config_reference()
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else None
        if current != text:
            print(f"error: {args.out} is out of date: run `{REGENERATE}`", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0
