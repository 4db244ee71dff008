"""A symlink planted where a command writes, for the tests that it replaces the link and leaves its target."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TARGET_TEXT = "ssh-ed25519 AAAA someone-else's key\n"


@contextmanager
def planted_link(path: Path) -> Iterator[Path]:
    """A symlink at `path` to a file of someone else's (created beside it). After the block, that file is as it
    was and `path` is a regular file of its own (no longer a link)."""
    target = path.parent / f"{path.name}.target"
    target.write_text(TARGET_TEXT)
    path.symlink_to(target)
    yield path
    assert target.read_text() == TARGET_TEXT, "the write went through the link"
    assert not path.is_symlink() and path.is_file()
