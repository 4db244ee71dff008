"""The command-line entry points of `python -m infra`, one module per command (each has `add_parser`)."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
from pathlib import Path

from infra.untrusted import printable

MAX_ERROR_LINE = 1_000
"""Characters of one `error:` line: a value of 100 KiB (a flag, a path) is shown by its start."""


def fail(message: str, code: int = 2) -> int:
    """Print each line of `message` as an `error:` line on stderr, credentials redacted and control characters
    escaped (a flag or a file name holding a terminal escape cannot garble the terminal); the exit code (2: bad
    input)."""
    for line in message.splitlines():
        print(f"error: {printable(line, MAX_ERROR_LINE)}", file=sys.stderr)
    return code


def shown_path(path: object, limit: int = 200) -> str:
    """A path from the command line, for one line of a message: control characters (a newline that would forge
    a line) escaped, cut at `limit` characters, credentials redacted."""
    return printable(str(path), limit)


def write_file(path: Path, text: str) -> None:
    """Write `text` as the regular file `path`: a new file in its folder, renamed into place, so an existing
    symlink at `path` is replaced, never followed (a link placed there cannot aim the write at another file).
    OSError, before anything is written, for an existing directory, device, socket or named pipe."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        kind = "a directory" if stat.S_ISDIR(mode) else "a device, pipe or socket, not a regular file"
        raise OSError(errno.EINVAL, f"it is {kind}", str(path))
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".gpu-ci-", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
            stream.write(text)
        umask = os.umask(0)
        os.umask(umask)
        Path(temporary).chmod(0o666 & ~umask)  # as open() would have made it, not mkstemp's 0600
        Path(temporary).replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(temporary).unlink()
        raise


def real_folder(folder: Path, what: str) -> None:
    """Make `folder` if it is missing; OSError if it is a symlink (`what` names the flag): a link placed there
    would aim every file written into it elsewhere."""
    if folder.is_symlink():
        raise OSError(errno.ELOOP, f"is a symlink, not followed ({what} writes into real folders only)", str(folder))
    folder.mkdir(exist_ok=True)
