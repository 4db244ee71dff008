"""Text helpers shared by the reports: fixed-width tables and euro amounts (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction


def format_eur(amount: Fraction) -> str:
    """Euros to 4 decimals, rounded half up on the exact value (0.39375 -> 0.3938, not float's 0.3937)."""
    exact = Decimal(amount.numerator) / Decimal(amount.denominator)
    return str(exact.quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP))


def render_table(header: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    """A fixed-width table: a header, a rule, one line per row, columns two spaces apart."""
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in [header, *body]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"
