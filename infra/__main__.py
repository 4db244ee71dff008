"""Offline command line of gpu-ci: `python -m infra <command>` (see --help)."""

from __future__ import annotations

import argparse
import sys

from infra.offline import check_ci, import_file, plan
from infra.review import mr_note_cmd, plan_diff_cmd

COMMANDS = (plan, import_file, check_ci, plan_diff_cmd, mr_note_cmd)
"""Modules with `add_parser(subparsers)`; each sets `handler` on its parser."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra", description=__doc__)
    subparsers = parser.add_subparsers(required=True, metavar="command")
    for command in COMMANDS:
        command.add_parser(subparsers)
    args = parser.parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
