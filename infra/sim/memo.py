"""Bounded memos of the simulation's pure work within one process (pure): a plan simulates 20 weeks, and a search,
its bound and its confirmations ask for the same weeks, jobs and runs again.

Why emptied whole when full, not least-recently-used: a search's working set fits in the bound, a long process
(the test suite) stays bounded, and the bookkeeping of an LRU on every hit would cost more than an odd miss.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")
V = TypeVar("V")


class Memo(Generic[K, V]):
    """Answers by a key of what they are made of (frozen values), at most `size` of them."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.found: dict[K, V] = {}

    def get(self, key: K) -> V | None:
        return self.found.get(key)

    def keep(self, key: K, value: V) -> V:
        """`value` kept under `key` (everything forgotten first if the memo is full); `value` itself."""
        if len(self.found) >= self.size:
            self.found.clear()
        self.found[key] = value
        return value


class ByIdentity(Generic[T, V]):
    """Answers about an object itself (a week's jobs tuple, a run's result), found by its id without hashing it,
    and by a key of whatever else they depend on. The object is kept beside its answer, so that its id cannot be
    another object's while the entry lives. Only for objects that cannot change (tuples of frozen values)."""

    def __init__(self, size: int) -> None:
        self._memo: Memo[tuple[int, Hashable], tuple[T, V]] = Memo(size)

    def get(self, obj: T, key: Hashable = ()) -> V | None:
        entry = self._memo.get((id(obj), key))
        return entry[1] if entry is not None and entry[0] is obj else None

    def keep(self, obj: T, value: V, key: Hashable = ()) -> V:
        self._memo.keep((id(obj), key), (obj, value))
        return value
