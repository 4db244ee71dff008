"""Text helpers shared by the reports: fixed-width tables and euro amounts (pure)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction


def format_eur(amount: Fraction) -> str:
    """Euros to 4 decimals, rounded half up on the exact value (0.39375 -> 0.3938, not float's 0.3937)."""
    exact = Decimal(amount.numerator) / Decimal(amount.denominator)
    return str(exact.quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP))


WIDTH = 120
"""Columns of a report (`plan`'s): its tables and paragraphs fit them."""
MIN_COLUMN = 6
"""A wrapped column keeps at least this many characters (or its whole width, when narrower)."""


def render_table(header: Sequence[str], body: Sequence[Sequence[str]], width: int | None = None) -> str:
    """A fixed-width table: a header, a rule, one line per row, columns two spaces apart.

    With `width`, a table wider than that has its widest columns narrowed (the narrow ones keep their width) and
    their cells wrapped onto continuation lines, so that every line fits."""
    rows = [list(header), *(list(row) for row in body)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    if width is not None and sum(widths) + 2 * (len(widths) - 1) > width:
        widths = _narrowed(rows, widths, width - 2 * (len(widths) - 1))
        rows = [line for row in rows for line in _wrapped(row, widths)]
        header_lines = len(_wrapped(list(header), widths))
    else:
        header_lines = 1
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(header_lines, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"


def _narrowed(rows: list[list[str]], widths: list[int], budget: int) -> list[int]:
    """Column widths within `budget`: each at least its longest word (where they all fit; else `MIN_COLUMN`), what
    is left making whole the columns that lack the least first: as few columns wrap as can (the widest)."""
    words = [max((len(word) for row in rows for word in row[i].split()), default=0) for i in range(len(widths))]
    narrowed = [min(w, max(m, 1)) for w, m in zip(widths, words, strict=True)]
    if sum(narrowed) > budget:
        narrowed = [min(w, MIN_COLUMN) for w in widths]
    left = budget - sum(narrowed)
    for index in sorted(range(len(widths)), key=lambda i: widths[i] - narrowed[i]):  # whole columns first
        grant = min(left, widths[index] - narrowed[index])
        narrowed[index] += grant
        left -= grant
    return narrowed


def _wrapped(row: list[str], widths: list[int]) -> list[list[str]]:
    """One table row as its lines: each cell wrapped to its column (at spaces where it can)."""
    cells = [
        textwrap.wrap(cell, w, break_on_hyphens=False, drop_whitespace=True) or [""] if len(cell) > w else [cell]
        for cell, w in zip(row, widths, strict=True)
    ]
    height = max(len(lines) for lines in cells)
    return [[lines[i] if i < len(lines) else "" for lines in cells] for i in range(height)]


def wrap_text(text: str, width: int = WIDTH) -> str:
    """Each line of `text` longer than `width` wrapped at spaces, its continuation lines indented as it is (and
    under a bullet's text for `- ` items): paragraphs that fit a report's columns."""
    out = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip(" "))]
        bullet = "  " if line.lstrip(" ").startswith("- ") else ""
        out.append(
            textwrap.fill(line, width, subsequent_indent=indent + bullet, break_on_hyphens=False, break_long_words=True)
        )
    return "\n".join(out)
