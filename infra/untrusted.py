"""Untrusted text, shown: the one escaper of gpu-ci, and its one definition of what is shown as it is (pure).

Whatever gpu-ci prints or writes that it did not write itself (a value of the spec, a job's name, GitLab's
answer, a path or a `--set` from the command line, a field of a plan file, a line of a preview) goes through
`printable`: every credential-shaped part redacted first (`infra.config.credentials.redact_credentials`, the
one redactor), then every character that is not shown as it is written as its Python escape (`\\x1b`, `\\n`,
`\\u202e`, `\\U000e0001`), then the text cut. A terminal, a job log and the MR note all get the same line.

Shown as it is: what `str.isprintable` calls printable, that is letters, marks, digits, punctuation, symbols
and the ASCII space. Escaped: C0 and C1 controls (ESC, BEL, CR, NEL U+0085), format characters (the bidi
embeddings, overrides and isolates U+202A-202E and U+2066-2069, the zero-width U+200B-200F, U+FEFF), the
line and paragraph separators U+2028 and U+2029, every space but the ASCII one (a no-break space U+00A0
looks like a space and is not one), lone surrogates, private-use and unassigned code points. `repr` escapes
exactly these characters, which is why `quoted` (an error line's `'value'`) may use it: the two agree
character for character (tests/test_untrusted.py holds them together over all of Unicode).
"""

from __future__ import annotations

from infra.config.credentials import redact_credentials

ELLIPSIS = "…"
_SCAN_MARGIN = 256
"""Characters past the cut still read by the redactor, so that a token straddling the cut is redacted whole
rather than shown by its first characters."""


def shown_as_is(char: str) -> bool:
    """Whether `char` is written as it is (see the module docstring): the one definition."""
    return char.isprintable()


def first_hidden(text: str, allowed: str = "") -> str | None:
    """The first character of `text` that would be escaped, other than those in `allowed`; or None."""
    if text.isprintable():
        return None
    return next((char for char in text if char not in allowed and not shown_as_is(char)), None)


def escape(char: str) -> str:
    """A character that is not shown as it is, as its Python escape (`\\x1b`, `\\u202e`, `\\U000e0001`)."""
    return repr(char)[1:-1]


def printable(text: str, limit: int | None = 200, *, keep: str = "") -> str:
    """`text` redacted, escaped and cut at `limit` characters (with `…`; None: not cut): safe on one line of a
    terminal, a log or the MR note. `keep` names characters left as they are (a code block keeps `\\n\\t`)."""
    if limit is not None and len(text) > limit + _SCAN_MARGIN:
        text = text[: limit + _SCAN_MARGIN]
    text = redact_credentials(text)
    if text.isprintable():  # the common case: nothing to escape
        return text if limit is None or len(text) <= limit else text[:limit] + ELLIPSIS
    pieces, size = [], 0
    for char in text:
        piece = char if char in keep or shown_as_is(char) else escape(char)
        if limit is not None and size + len(piece) > limit:  # cut between escapes, never inside one
            pieces.append(ELLIPSIS)
            break
        pieces.append(piece)
        size += len(piece)
    return "".join(pieces)


def quoted(text: str, limit: int) -> str:
    """`text` in quotes for a message (`'gpu\\n'`), cut at `limit` characters: what `printable` escapes, `repr`
    escapes too (the module docstring), and it also escapes the quote and the backslash, so the value reads
    back exactly. Not redacted: the lines it goes into are (`Problem`, `fail`)."""
    return repr(text[:limit]) + (ELLIPSIS if len(text) > limit else "")
