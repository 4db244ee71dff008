"""`python -m infra check-ci PATH`: lint a training repository's .gitlab-ci.yml against the platform spec.

Prints one line per violation (`file: job: what is wrong`) and exits 1 if there is any; notes on what
cannot be checked offline go to stderr as `warning:` lines. Exit 2: the file or the stack config is unusable.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from infra.cicheck import check_pipeline
from infra.config.errors import SpecError
from infra.config.platform import load_spec
from infra.offline.stack_config import StackFileError, load_stack_config

PIPELINE_FILE = ".gitlab-ci.yml"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check-ci", help="lint a training repo's .gitlab-ci.yml against the spec (templates, maxima, pools)"
    )
    parser.add_argument("path", type=Path, help=f"the pipeline file, or a repository directory holding {PIPELINE_FILE}")
    parser.add_argument("--root", type=Path, help="repository root for local includes (default: the file's directory)")
    parser.add_argument("--stack", default="dev", help="stack whose Pulumi.<stack>.yaml holds the spec (default: dev)")
    parser.add_argument("--config", type=Path, help="use this stack file instead of Pulumi.<stack>.yaml")
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    path: Path = args.path / PIPELINE_FILE if args.path.is_dir() else args.path
    if not path.is_file():
        print(f"error: no pipeline file {path}", file=sys.stderr)
        return 2
    try:
        spec = load_spec(load_stack_config(args.stack, path=args.config).get("platform"))
    except (FileNotFoundError, StackFileError, SpecError) as err:
        for line in str(err).splitlines():
            print(f"error: {line}", file=sys.stderr)
        return 2
    result = check_pipeline(path, spec, root=args.root)
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for violation in result.violations:
        print(violation)
    if result.violations:
        print(f"{len(result.violations)} violation(s) in {result.jobs_checked} jobs", file=sys.stderr)
        return 1
    print(f"{result.jobs_checked} jobs checked: no violation", file=sys.stderr)
    return 0
