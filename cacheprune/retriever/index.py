"""The index the retriever searches: rolling hashes of entry windows ("anchors") to the entries
and offsets that have them.

By default only each entry's first window is an anchor (the CachePrune paper's index). With an
`anchor_stride` s, windows starting at offsets 0, s, 2s, ... are anchors too, so a request that
shares only the middle of an entry (a document whose entry began with another tenant's
template words) still finds it, at most s - 1 tokens late.
NOTE: the entry's last window is no anchor: the end of an entry is where its KV has attended
to the most of its publisher's text (the template's closing line after another tenant's
question), so a match found from there reuses the least context-free KV (see docs/pool.md).

The pool owns one and keeps it equal to its set of visible entries (added on publish, removed on
evict, expiry and invalidation); the retriever only reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

from cacheprune.retriever.identity import DomainTag, EntryName, IdentityDigest
from cacheprune.retriever.rolling import check_base, prefix_key
from cacheprune.tokens import TokenArray


@dataclass(slots=True, frozen=True)
class IndexedSegment:
    """What matching needs to know of an entry: its name, tokens, and which readers may use it
    (those of exactly this producer identity and sharing domain)."""

    entry_name: EntryName
    token_ids: TokenArray
    identity_digest: IdentityDigest
    domain_tag: DomainTag

    @property
    def num_tokens(self) -> int:
        return int(self.token_ids.shape[0])


Anchor = tuple[EntryName, int]  # (entry, offset of the window in the entry)


def anchor_offsets(num_tokens: int, window: int, anchor_stride: int | None) -> range:
    """Offsets of an entry's anchor windows: its first, and with a stride s every s-th (an
    entry shorter than the window has none)."""
    last = num_tokens - window
    if last < 0:
        return range(0)
    return range(1) if anchor_stride is None else range(0, last + 1, anchor_stride)


class PrefixIndex:
    """Rolling hash of `window` tokens at each anchor offset -> the (entry, offset) pairs.

    Not thread-safe by itself: the pool calls it under its own lock.
    """

    __slots__ = ("window", "base", "anchor_stride", "_buckets", "_segments", "_keys")

    def __init__(self, window: int, base: int, anchor_stride: int | None = None) -> None:
        if window < 1:
            raise ValueError(f"index window must be at least 1 token, got {window}")
        if anchor_stride is not None and anchor_stride < 1:
            raise ValueError(f"anchor_stride must be at least 1 token or None, got {anchor_stride}")
        self.window = window
        self.base = check_base(base)
        self.anchor_stride = anchor_stride
        self._buckets: dict[int, list[Anchor]] = {}
        self._segments: dict[EntryName, IndexedSegment] = {}
        self._keys: dict[EntryName, list[int]] = {}

    def __len__(self) -> int:
        return len(self._segments)

    def __contains__(self, entry_name: object) -> bool:
        return entry_name in self._segments

    def add(self, segment: IndexedSegment) -> None:
        """Index `segment`; called by the pool once per published entry."""
        if segment.entry_name in self._segments:
            raise ValueError(f"segment {segment.entry_name} is already indexed")
        keys = []
        for offset in anchor_offsets(segment.num_tokens, self.window, self.anchor_stride):
            key = prefix_key(segment.token_ids[offset:], self.window, self.base)
            self._buckets.setdefault(key, []).append((segment.entry_name, offset))
            keys.append(key)
        self._segments[segment.entry_name] = segment
        self._keys[segment.entry_name] = keys

    def remove(self, entry_name: EntryName) -> None:
        """Forget `entry_name`; called by the pool when an entry stops being visible."""
        if entry_name not in self._segments:
            raise KeyError(f"segment {entry_name} is not indexed")
        keys = self._keys.pop(entry_name)
        del self._segments[entry_name]
        for key in set(keys):
            bucket = [anchor for anchor in self._buckets[key] if anchor[0] != entry_name]
            if bucket:
                self._buckets[key] = bucket
            else:
                del self._buckets[key]

    def present(self, keys: list[int]) -> list[bool]:
        """For each window hash, whether some anchor has it (one dict probe each)."""
        buckets = self._buckets
        return [key in buckets for key in keys]

    def candidates(self, key: int, limit: int | None = None) -> list[tuple[IndexedSegment, int]]:
        """(entry, offset) pairs whose window at that offset hashes to `key` (collisions
        included), newest first; at most `limit` of them."""
        anchors = self._buckets.get(key, [])
        newest = anchors[::-1] if limit is None else anchors[:-limit - 1:-1]
        return [(self._segments[h], offset) for h, offset in newest]

    def segment(self, entry_name: EntryName) -> IndexedSegment:
        return self._segments[entry_name]
