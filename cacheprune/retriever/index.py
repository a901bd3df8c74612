"""The index the retriever searches: entry-prefix rolling hashes to the entries that have them.

The pool owns one and keeps it equal to its set of visible entries (added on publish, removed on
evict, expiry and invalidation); the retriever only reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

from cacheprune.retriever.identity import SegmentHash, TokenArray
from cacheprune.retriever.rolling import check_base, prefix_key


@dataclass(slots=True, frozen=True)
class IndexedSegment:
    """What matching needs to know of an entry: its identity, tokens and provenance."""

    segment_hash: SegmentHash
    token_ids: TokenArray
    model_id: str
    policy_version: str

    @property
    def num_tokens(self) -> int:
        return int(self.token_ids.shape[0])


class PrefixIndex:
    """Rolling hash of each entry's first `window` tokens -> the entries with that prefix hash.

    Not thread-safe by itself: the pool calls it under its own lock.
    """

    __slots__ = ("window", "base", "_buckets", "_segments", "_keys")

    def __init__(self, window: int, base: int) -> None:
        if window < 1:
            raise ValueError(f"index window must be at least 1 token, got {window}")
        self.window = window
        self.base = check_base(base)
        self._buckets: dict[int, list[SegmentHash]] = {}
        self._segments: dict[SegmentHash, IndexedSegment] = {}
        self._keys: dict[SegmentHash, int] = {}

    def __len__(self) -> int:
        return len(self._segments)

    def __contains__(self, segment_hash: object) -> bool:
        return segment_hash in self._segments

    def add(self, segment: IndexedSegment) -> None:
        """Index `segment`; called by the pool once per published entry."""
        if segment.segment_hash in self._segments:
            raise ValueError(f"segment {segment.segment_hash} is already indexed")
        key = prefix_key(segment.token_ids, self.window, self.base)
        self._buckets.setdefault(key, []).append(segment.segment_hash)
        self._segments[segment.segment_hash] = segment
        self._keys[segment.segment_hash] = key

    def remove(self, segment_hash: SegmentHash) -> None:
        """Forget `segment_hash`; called by the pool when an entry stops being visible."""
        if segment_hash not in self._segments:
            raise KeyError(f"segment {segment_hash} is not indexed")
        key = self._keys.pop(segment_hash)
        del self._segments[segment_hash]
        bucket = self._buckets[key]
        bucket.remove(segment_hash)
        if not bucket:
            del self._buckets[key]

    def present(self, keys: list[int]) -> list[bool]:
        """For each window hash, whether some entry prefix has it (one dict probe each)."""
        buckets = self._buckets
        return [key in buckets for key in keys]

    def candidates(self, key: int) -> list[IndexedSegment]:
        """Entries whose first `window` tokens hash to `key` (collisions included)."""
        return [self._segments[h] for h in self._buckets.get(key, ())]

    def segment(self, segment_hash: SegmentHash) -> IndexedSegment:
        return self._segments[segment_hash]
