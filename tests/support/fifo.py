"""A named pipe for the tests of commands that must refuse one before opening it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def fifo_with_a_reader(path: Path) -> Iterator[Path]:
    """A named pipe at `path`, a reader held open on it: opening it for writing does not wait, so a command that
    should have refused it fails its test instead of hanging it."""
    os.mkfifo(path)
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        yield path
    finally:
        os.close(reader)
