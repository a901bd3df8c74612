"""Which entry goes first when the budget is full: the one least worth keeping.

Every backend ranks an entry by one number, its *use rank*, and evicts the lowest first:

- `"lru"`: the rank is the time of the last use (plain least recently used).
- `"frequency"` (the default): an LFU with exponential aging. An entry's worth is its decayed
  use count, c(now) = sum over its uses of 2^(-(now - t_use) / half_life). Ranking by c(now)
  is ranking by `rank = now + half_life * log2(c(now))`, a number that does not move between
  uses (the `now` terms cancel), so it can be stored once per use: a sorted set on Valkey, the
  file's mtime in a folder, a heap in memory. A new entry ranks at its publish time (c = 1,
  like LRU); each doubling of an entry's decayed count is worth `half_life` seconds of recency.

NOTE: why not LRU: a stream of novel questions publishes one new entry per request, and under
LRU each one pushes out the least recently used, which are the warm documents as soon as the
stream holds more novel entries than the pool (LMCache #4663: reuse decaying from 2-4x to 1x
within 60-90 queries). Under this rank a warm document used k times since the stream began
outranks every novel entry published in the next `half_life * log2(k)` seconds.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Generator
from typing import Literal

from cacheprune.retriever import EntryName

EvictionPolicy = Literal["frequency", "lru"]
EVICTION_POLICIES: tuple[EvictionPolicy, ...] = ("frequency", "lru")


def next_use_rank(previous: float | None, now: float, policy: EvictionPolicy,
                  half_life_s: float) -> float:
    """The rank of an entry used at `now` whose rank was `previous` (None: a new entry)."""
    if previous is None or policy == "lru":
        return now
    # log2(2^a + 1) computed without overflow: a = log2 of the decayed count before this use.
    a = (previous - now) / half_life_s
    added = a + math.log2(1.0 + 2.0 ** -a) if a > 0 else math.log2(1.0 + 2.0 ** a)
    return now + half_life_s * added


class EvictionOrder:
    """Use ranks of the entries of one in-process pool, lowest first (not thread-safe: the
    pool's lock guards it). A heap with stale records skipped: a use costs O(log n)."""

    __slots__ = ("_heap", "_half_life_s", "_policy", "_ranks", "_sequence")

    def __init__(self, policy: EvictionPolicy, half_life_s: float) -> None:
        self._policy = policy
        self._half_life_s = half_life_s
        self._ranks: dict[EntryName, tuple[float, int]] = {}
        self._heap: list[tuple[float, int, EntryName]] = []
        self._sequence = itertools.count()  # ties: the earlier use goes first

    def use(self, name: EntryName, now: float) -> None:
        previous = self._ranks.get(name)
        rank = next_use_rank(None if previous is None else previous[0], now, self._policy,
                             self._half_life_s)
        record = (rank, next(self._sequence))
        self._ranks[name] = record
        heapq.heappush(self._heap, (*record, name))
        if len(self._heap) > 4 * len(self._ranks) + 64:  # drop stale records now and then
            self._heap = [(r, s, n) for n, (r, s) in self._ranks.items()]
            heapq.heapify(self._heap)

    def remove(self, name: EntryName) -> None:
        self._ranks.pop(name, None)

    def rank(self, name: EntryName) -> float | None:
        found = self._ranks.get(name)
        return None if found is None else found[0]

    def lowest_first(self, can_go: Callable[[EntryName], bool]
                     ) -> Generator[EntryName, None, None]:
        """Names lowest rank first, skipping those `can_go` refuses; the caller removes the
        ones it evicts (`remove`) before asking for the next."""
        skipped = []
        try:
            while self._heap:
                rank, sequence, name = heapq.heappop(self._heap)
                if self._ranks.get(name) != (rank, sequence):
                    continue  # stale: used again since, or removed
                skipped.append((rank, sequence, name))
                if can_go(name):
                    yield name
        finally:
            for record in skipped:
                if self._ranks.get(record[2]) == record[:2]:
                    heapq.heappush(self._heap, record)
