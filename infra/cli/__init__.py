"""The command-line entry points of `python -m infra`, one module per command (each has `add_parser`)."""

from __future__ import annotations

import errno
import stat
import sys
from pathlib import Path

from infra.config.credentials import redact_credentials
from infra.documents import printable

MAX_ERROR_LINE = 1_000
"""Characters of one `error:` line: a value of 100 KiB (a flag, a path) is shown by its start."""


def fail(message: str, code: int = 2) -> int:
    """Print each line of `message` as an `error:` line on stderr, credentials redacted and control characters
    escaped (a flag or a file name holding a terminal escape cannot garble the terminal); the exit code (2: bad
    input)."""
    for line in message.splitlines():
        print(f"error: {printable(redact_credentials(line), MAX_ERROR_LINE)}", file=sys.stderr)
    return code


def shown_path(path: object, limit: int = 200) -> str:
    """A path from the command line, for one line of a message: control characters (a newline that would forge
    a line) escaped, cut at `limit` characters, credentials redacted."""
    return printable(redact_credentials(str(path)), limit)


def write_file(path: Path, text: str) -> None:
    """Write `text` into the regular file `path` (created or replaced); OSError, before anything is opened, for
    an existing directory, device or named pipe (opening a pipe nobody reads would wait forever)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "a device, pipe or socket, not a regular file"
        raise OSError(errno.EINVAL, f"it is {kind}", str(path))
    path.write_text(text, encoding="utf-8")
