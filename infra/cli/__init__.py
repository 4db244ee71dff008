"""The command-line entry points of `python -m infra`, one module per command (each has `add_parser`)."""

from __future__ import annotations

import sys

from infra.config.credentials import redact_credentials


def fail(message: str, code: int = 2) -> int:
    """Print each line of `message` as an `error:` line on stderr, credentials redacted; the exit code (2: bad
    input)."""
    for line in message.splitlines():
        print(f"error: {redact_credentials(line)}", file=sys.stderr)
    return code
