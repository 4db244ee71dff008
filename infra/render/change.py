"""A figure before and after a change, the way every comparison in gpu-ci shows it (pure).

`compare(before, after, show)` -> (before, after, change): `-` for a figure one side lacks, `=` when equal,
else the signed change (`+4`, `-12.5`); `simulate --set` prints these as a table, the MR note's cost delta
(`infra.review.delta`) as bullets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def compare(
    before: Any,
    after: Any,
    show: Callable[[Any], str],
    *,
    change: Callable[[Any], str] | None = None,
    missing: str = "-",
) -> tuple[str, str, str]:
    """(current, changed, change) of a figure: `show` formats a value; `change` the signed difference (default:
    its sign and `show` of its size); `missing` stands for a figure one side lacks. Equal within 1e-9: `=`."""
    shown = (missing if before is None else show(before), missing if after is None else show(after))
    if before is None or after is None:
        return (*shown, "")
    delta = after - before
    if abs(delta) <= 1e-9:
        return (*shown, "=")
    return (*shown, change(delta) if change is not None else ("+" if delta > 0 else "-") + show(abs(delta)))
