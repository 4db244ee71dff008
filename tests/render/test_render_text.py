"""Fixed-width tables that fit a width: the widest columns wrap, the narrow ones keep theirs."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from infra.render.text import render_table, wrap_text

WORDS = st.text(alphabet="abcdefghij-", min_size=1, max_size=6)
CELLS = st.lists(WORDS, min_size=0, max_size=6).map(" ".join)


def test_a_table_that_fits_is_unchanged_by_a_width() -> None:
    header, body = ("pool", "slots"), [("ci-compile", "2"), ("ci-training", "4")]
    assert render_table(header, body, 120) == render_table(header, body)


def test_a_wide_table_wraps_its_widest_column_at_spaces() -> None:
    text = render_table(("pool", "limited by"), [("ci-compile", "GPU replicas = CPU and memory of the node")], 30)
    assert text.splitlines() == [
        "pool        limited by",
        "----------  ------------------",
        "ci-compile  GPU replicas = CPU",
        "            and memory of the",
        "            node",
    ]


@given(st.lists(st.tuples(CELLS, CELLS, CELLS), min_size=1, max_size=5), st.integers(min_value=30, max_value=80))
def test_every_line_fits_and_every_word_is_kept(body: list[tuple[str, str, str]], width: int) -> None:
    """Words of at most 6 letters always fit their column (3 columns in 26 or more): none is broken or lost."""
    lines = render_table(("a", "b", "c"), body, width).splitlines()
    assert all(len(line) <= width for line in lines)
    shown = [word for index, line in enumerate(lines) if index != 1 for word in line.split()]  # 1: the rule
    assert shown == ["a", "b", "c", *shown[3:]]
    assert sorted(shown[3:]) == sorted(word for row in body for cell in row for word in cell.split())


def test_long_lines_wrap_under_their_bullet() -> None:
    text = wrap_text("  - " + "word " * 40, 40)
    lines = text.splitlines()
    assert all(len(line) <= 40 for line in lines)
    assert lines[0].startswith("  - word") and all(line.startswith("    word") for line in lines[1:])
