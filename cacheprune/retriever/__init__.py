"""Find the pooled segments a request can reuse (rolling-hash proposals, SHA-256 verification)."""

from __future__ import annotations

from cacheprune.retriever.identity import SegmentHash, segment_hash
from cacheprune.retriever.index import IndexedSegment, PrefixIndex, anchor_offsets
from cacheprune.retriever.matching import Match, MatchResult, find_matches
from cacheprune.retriever.rolling import MERSENNE_61, random_base, window_hashes

__all__ = [
    "MERSENNE_61",
    "IndexedSegment",
    "Match",
    "MatchResult",
    "PrefixIndex",
    "anchor_offsets",
    "SegmentHash",
    "find_matches",
    "random_base",
    "segment_hash",
    "window_hashes",
]
