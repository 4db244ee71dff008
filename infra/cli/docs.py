"""`python -m infra docs`: write docs/config-reference.md from the spec's models (`--check`: only compare).

The reference is generated so that it cannot drift from what `load_spec` accepts; CI's test compares the
committed file with the generated text, and this command is how it is brought back in line.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from infra.cli import fail, shown_path, write_file
from infra.documents import Budget, DocumentError, read_text
from infra.render.config_reference import REGENERATE, config_reference

REFERENCE_FILE = Budget(max_bytes=4 << 20, max_nodes=0, kind="a config reference")
"""docs/config-reference.md (~60 KiB) as `--check` reads it."""
REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "config-reference.md"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("docs", help="write the config reference (docs/config-reference.md) from the spec")
    parser.add_argument("--out", type=Path, default=REFERENCE, help="where to write it (default: %(default)s)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the file is out of date")
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    text = config_reference()
    if args.check:
        try:  # a missing file is out of date, like a stale one; one that cannot be read is an error
            exists = os.path.lexists(args.out)
            current = read_text(args.out, REFERENCE_FILE, name=shown_path(args.out)) if exists else None
        except DocumentError as err:
            return fail(str(err))
        if current != text:
            return fail(f"{shown_path(args.out)} is out of date: run `{REGENERATE}`", 1)
        return 0
    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_file(args.out, text)
    except OSError as err:
        return fail(f"--out {shown_path(args.out)}: cannot be written ({err.strerror or err})")
    print(f"wrote {shown_path(args.out)}")
    return 0
