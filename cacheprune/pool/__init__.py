"""The shared KV pool: budget, LRU, TTL, leases, invalidation, metrics and audit log."""

from __future__ import annotations

from cacheprune.pool.config import TOKEN_METADATA_BYTES, BackpressureMode, KVShape, PoolConfig
from cacheprune.pool.entry import EntryInfo, SegmentKV
from cacheprune.pool.errors import (
    EntryInvalidatedError,
    InvalidEntryError,
    PoolCapacityError,
    PoolConfigError,
    PoolError,
    PrivateTokenError,
    PromptTooLongError,
    SessionStateError,
    SessionTimeoutError,
)
from cacheprune.pool.pool import KVPool
from cacheprune.pool.session import PoolSession, SessionState
from cacheprune.retriever.identity import SegmentHash
from cacheprune.retriever.matching import Match

__all__ = [
    "TOKEN_METADATA_BYTES",
    "BackpressureMode",
    "EntryInfo",
    "EntryInvalidatedError",
    "InvalidEntryError",
    "KVPool",
    "KVShape",
    "Match",
    "PoolCapacityError",
    "PoolConfig",
    "PoolConfigError",
    "PoolError",
    "PoolSession",
    "PrivateTokenError",
    "PromptTooLongError",
    "SegmentHash",
    "SegmentKV",
    "SessionState",
    "SessionStateError",
    "SessionTimeoutError",
]
