"""A figure before and after a change, the way every comparison in gpu-ci shows it (pure).

`compare(before, after, show)` -> (before, after, change): `-` for a figure one side lacks, `=` when equal,
else the signed change (`+4`, `-12.5`); `simulate --set` prints these as a table, the MR note's cost delta
as bullets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def compare(before: Any, after: Any, show: Callable[[Any], str]) -> tuple[str, str, str]:
    """(current, changed, change) of a figure; `show` formats a value and the size of a change."""
    shown = ("-" if before is None else show(before), "-" if after is None else show(after))
    if before is None or after is None:
        return (*shown, "")
    if before == after:
        return (*shown, "=")
    delta = after - before
    return (*shown, ("+" if delta > 0 else "-") + show(abs(delta)))
