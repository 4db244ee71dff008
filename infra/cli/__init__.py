"""The command-line entry points of `python -m infra`, one module per command (each has `add_parser`)."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
from pathlib import Path

from infra.config.errors import SpecError
from infra.config.stack_keys import in_file, stack_file_name
from infra.offline.stack_config import StackFileError, load_stack_config
from infra.untrusted import printable

MAX_ERROR_LINE = 1_000
"""Characters of one `error:` line: a value of 100 KiB (a flag, a path) is shown by its start."""


def fail(message: str, code: int = 2) -> int:
    """Print each line of `message` as an `error:` line on stderr, credentials redacted and control characters
    escaped (a flag or a file name holding a terminal escape cannot garble the terminal), a tab laid out as a space
    (a library's message indents with one: shown escaped, it read as a literal `\\t`); the exit code (2: bad
    input)."""
    for line in message.splitlines():
        if text := " ".join(line.split("\t")).strip():  # a library's tab-indented second line: no literal `\t`
            print(f"error: {printable(text, MAX_ERROR_LINE)}", file=sys.stderr)
    return code


def stack_file_shown(stack: str, config: Path | None) -> str:
    """The stack file a config error names: the file `--config` gave, else `Pulumi.<stack>.yaml`; by its name, as
    the stack file's own errors (infra.offline.stack_config) name it."""
    return shown_path(config.name) if config is not None else stack_file_name(stack)


def fail_spec(err: SpecError, stack: str, config: Path | None = None) -> int:
    """`fail` for the spec's problems, each line naming the stack file it is in and the line of its key (as `plan`
    names them): the file is read again for its lines, a file that no longer reads gives the lines without."""
    lines = in_file(stack_file_shown(stack, config), str(err))
    try:
        stack_config = load_stack_config(stack, path=config)
    except (FileNotFoundError, StackFileError):
        return fail(lines)
    return fail("\n".join(stack_config.located(line) for line in lines.splitlines()))


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
