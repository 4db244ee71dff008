"""Reading the review commands' files: through `infra.documents` (regular files, byte caps, JSON depth and
numbers), then `infra.review.schema` (every field the commands read). Each failure is one DocumentError
line naming the file: a missing file, a directory, JSON that is not JSON, a field of the wrong type.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from infra.documents import (
    DIFF_TEXT,
    MAX_SHOWN_NAME,
    PLAN_FILE,
    Budget,
    DocumentError,
    JSONSyntaxError,
    decode,
    parse_json,
    read_text,
)
from infra.review.schema import PlanDocument, PreviewDocument, check_plan, check_preview
from infra.untrusted import printable

STDIN = "-"


def shown(name: str) -> str:
    """How the messages name an input: its path, or `stdin`."""
    return "stdin" if name == STDIN else printable(name, MAX_SHOWN_NAME)


def read_input(name: str, budget: Budget = DIFF_TEXT) -> str:
    """The text of the file `name`, or of standard input for `-`, within `budget`."""
    if name == STDIN:
        return decode(sys.stdin.buffer.read(budget.max_bytes + 1), shown(name), budget)
    return read_text(Path(name), budget, name=shown(name))


def read_json(name: str) -> Any:
    """The JSON document in the file `name` (or stdin), within the plan files' budget."""
    text = read_input(name, PLAN_FILE)
    try:
        return parse_json(text, shown(name), PLAN_FILE)
    except JSONSyntaxError as err:
        raise DocumentError(f"{shown(name)}: not JSON (line {err.line}: {err.reason})") from None


def load_plan(name: str) -> tuple[Mapping[str, Any], PlanDocument]:
    """A `plan --json` file: the document as read (what the diff and the delta compare) and its checked model."""
    document = read_json(name)
    return document, check_plan(document, shown(name))


def load_preview(name: str) -> PreviewDocument:
    """A `pulumi preview --json` file, checked."""
    return check_preview(read_json(name), shown(name))
