"""The closest known word to a typo: the one suggestion every "unknown key" line makes (pure)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.6
"""difflib's default: `max_sise` finds `max_size`, `regoin` finds `region`, `zzz` finds nothing."""


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate `word` is most likely a typo of: one that differs only in case first (`baseURL`, `baseUrl`),
    else difflib's closest; None when none is close."""
    options = list(dict.fromkeys(candidates))
    if same := [option for option in options if option.lower() == word.lower()]:
        return same[0]
    found = difflib.get_close_matches(word, options, n=1, cutoff=CUTOFF)
    return found[0] if found else None
