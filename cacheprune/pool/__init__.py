"""The shared KV pool: one store interface (`PoolStore`), three backends opened by URL
(`open_pool`), request sessions, budget, eviction, TTL, leases, quotas, metrics and audit log."""

from __future__ import annotations

from cacheprune.pool.config import TOKEN_METADATA_BYTES, BackpressureMode, KVShape, PoolConfig
from cacheprune.pool.entry import EntryInfo, SegmentKV
from cacheprune.pool.errors import (
    BelowThresholdError,
    InvalidEntryError,
    PoolCapacityError,
    PoolConfigError,
    PoolError,
    PrivateTokenError,
    PromptTooLongError,
    SessionStateError,
    SessionTimeoutError,
)
from cacheprune.pool.factory import open_pool
from cacheprune.pool.handles import (
    DEFAULT_DOMAIN,
    EntryIdentity,
    Lease,
    LookupResult,
    Scope,
    SegmentData,
    StagedSegment,
    kv_layout,
)
from cacheprune.pool.keys import POOL_KEY_ENV, PoolKey
from cacheprune.pool.session import PoolSession, SessionState
from cacheprune.pool.store import PoolStore
from cacheprune.pool.threshold import CommonWindows, shareable_mask
from cacheprune.pool.url import PoolURL, parse_pool_url
from cacheprune.retriever import EntryName, Match

__all__ = [
    "BelowThresholdError",
    "CommonWindows",
    "DEFAULT_DOMAIN",
    "POOL_KEY_ENV",
    "TOKEN_METADATA_BYTES",
    "BackpressureMode",
    "EntryIdentity",
    "EntryInfo",
    "InvalidEntryError",
    "KVShape",
    "Lease",
    "LookupResult",
    "Match",
    "PoolCapacityError",
    "PoolConfig",
    "PoolConfigError",
    "PoolError",
    "PoolKey",
    "PoolSession",
    "PoolStore",
    "PoolURL",
    "PrivateTokenError",
    "PromptTooLongError",
    "Scope",
    "SegmentData",
    "EntryName",
    "SegmentKV",
    "SessionState",
    "SessionStateError",
    "SessionTimeoutError",
    "StagedSegment",
    "kv_layout",
    "open_pool",
    "parse_pool_url",
    "shareable_mask",
]
