"""Offline command line of gpu-ci: `python -m infra <command>`, or `gpu-ci <command>` (see --help).

`gpu-ci` is pyproject.toml's console script, the same commands: it exists once the checkout is installed into its
venv, and runs from any directory.

Each command lives in its own module under `infra/cli/`, imported only when it runs: `plan` does not pay
for check-ci's or the review tools' imports. The commands read the checkout this package sits in (its stack files,
`__main__.py`, policy pack), never the current directory's: paths given on the command line are the current
directory's.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path

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
CHECKOUT = Path(__file__).resolve().parent.parent
"""The project the commands read: where `Pulumi.yaml` sits beside `infra/`."""
INSTALL = "pip install --no-deps --no-build-isolation -e <checkout>"
WHERE = (
    "runs from gpu-ci's checkout (its root), or from any directory once the checkout is installed into its venv "
    f"({INSTALL}, which adds the `gpu-ci` command)"
)
"""Where the commands run, said by --help and by the error below."""
STANDALONE = frozenset({"plan-diff", "mr-note", "guard-replacements"})
"""Commands that read only the files they are given, never the checkout's: they run without one too."""


def main(argv: list[str] | None = None, prog: str = "python -m infra") -> int:
    argv = sys.argv[1:] if argv is None else argv
    chosen = next((arg for arg in argv if not arg.startswith("-")), None)
    if chosen in COMMANDS and chosen not in STANDALONE and not (CHECKOUT / "Pulumi.yaml").is_file():
        # a copy of the package without its project (`pip install .`, not `-e`): say where the commands run
        print(f"error: {prog} {WHERE}; {CHECKOUT} holds no Pulumi.yaml beside infra/", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0], epilog=f"{prog} {WHERE}.")
    subparsers = parser.add_subparsers(required=True, metavar="command")
    for name, (module, summary) in COMMANDS.items():
        if name == chosen:
            importlib.import_module(module).add_parser(subparsers)
        else:
            subparsers.add_parser(name, help=summary, add_help=False)
    args = parser.parse_args(argv)
    return int(args.handler(args))


SIGPIPE_EXIT = 141
"""What a shell reports for a program its reader stopped listening to (128 + SIGPIPE), as for `plan --json | head`."""


def exit_code(command: Callable[[], int]) -> int:
    """`command`'s exit code, its output flushed here: a reader that closed the pipe early (`| head`) ends the
    command quietly with SIGPIPE_EXIT, not with a BrokenPipeError traceback (the recipe of Python's signal docs:
    stdout is pointed at /dev/null so that the interpreter's own flush at exit cannot fail again)."""
    try:
        try:
            code = command()
        except SystemExit as done:  # --help, argparse's usage errors
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 2)
            if done.code is not None and not isinstance(done.code, int):
                print(done.code, file=sys.stderr)
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return SIGPIPE_EXIT
    return code


def console() -> int:
    """`gpu-ci`, pyproject.toml's console script: `main` under its own name."""
    return exit_code(lambda: main(prog="gpu-ci"))


if __name__ == "__main__":
    sys.exit(exit_code(main))
