"""Offline command line of gpu-ci: `python -m infra <command>` (see --help).

Each command lives in its own module under `infra/cli/`, imported only when it runs: `plan` does not pay
for check-ci's or the review tools' imports.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = {
    "plan": ("infra.cli.plan", "run the program offline under mocks and show what it would create"),
    "check-ci": ("infra.cli.check_ci", "check a training repo's .gitlab-ci.yml against the platform"),
    "import-file": ("infra.cli.import_file", "write a `pulumi import --file` document for existing resources"),
    "plan-diff": ("infra.cli.plan_diff", "compare two offline plans (plan --json) like `pulumi preview --diff`"),
    "mr-note": ("infra.cli.mr_note", "post or update the merge request's preview note"),
    "guard-replacements": (
        "infra.cli.guard_replacements",
        "refuse a `pulumi preview --json` that replaces or deletes a pool, namespace or runner",
    ),
    "simulate": ("infra.cli.simulate", "simulate the dispatch of a pipeline or a day of jobs on the platform"),
    "workload": ("infra.cli.workload", "measure platform.workload from the training project's GitLab jobs"),
    "recommend": (
        "infra.cli.recommend",
        "the cheapest platform whose merge-request wait meets the target, by simulation",
    ),
    "docs": ("infra.cli.docs", "write the config reference (docs/config-reference.md) from the spec's models"),
}
"""Command name -> (module with `add_parser(subparsers)`, one-line help)."""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m infra", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(required=True, metavar="command")
    chosen = next((arg for arg in argv if not arg.startswith("-")), None)
    for name, (module, summary) in COMMANDS.items():
        if name == chosen:
            importlib.import_module(module).add_parser(subparsers)
        else:
            subparsers.add_parser(name, help=summary, add_help=False)
    args = parser.parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
