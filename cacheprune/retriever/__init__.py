"""Find the pooled segments a request can reuse (rolling-hash proposals, SHA-256 verification)."""

from __future__ import annotations

from cacheprune.retriever.identity import DomainTag, EntryName, IdentityDigest, unkeyed_entry_name
from cacheprune.retriever.index import IndexedSegment, PrefixIndex, anchor_offsets
from cacheprune.retriever.matching import EntryNaming, Match, MatchResult, find_matches
from cacheprune.retriever.rolling import MERSENNE_61, random_base, window_hashes

__all__ = [
    "DomainTag",
    "EntryNaming",
    "IdentityDigest",
    "MERSENNE_61",
    "IndexedSegment",
    "Match",
    "MatchResult",
    "PrefixIndex",
    "anchor_offsets",
    "EntryName",
    "find_matches",
    "random_base",
    "unkeyed_entry_name",
    "window_hashes",
]
