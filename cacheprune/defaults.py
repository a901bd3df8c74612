"""The defaults that more than one settings class offers, each written once: the pool's
(`PoolConfig`), the own engine's (`EngineConfig`, `AnnotatorConfig`) and the vLLM connector's
(`ConnectorSettings`). Import-light on purpose: the connector's settings load in every vLLM
process."""

from __future__ import annotations

from typing import Final, Literal

GIB: Final = 1024**3

POOL_URL: Final = "memory://"  # this process only
POOL_BUDGET_BYTES: Final = 2 * GIB
POOL_TTL_S: Final = 3600.0  # seconds an entry stays findable after it was published
PUBLISH_MODE: Final = "isolated"  # no published byte depends on a private value
MIN_SEGMENT_TOKENS: Final = 64  # the shortest segment the annotator publishes
# The pool's window (the retriever's K): a match has at least this many tokens and is found
# through the window at an anchor, then extended both ways; an entry holds at least this many.
# NOTE: 16 with anchors every 16 tokens finds every shared stretch of 31 tokens or more, and 16
# equal tokens in a row almost never happen by chance between unrelated texts (docs/serving.md).
MATCH_WINDOW: Final = 16
# Entries are also found from windows every this many tokens inside them, not only from their
# first tokens: a segment published by one tenant usually begins with words that follow that
# tenant's own private details, which the next tenant does not share. None: first tokens only.
ANCHOR_STRIDE: Final[int | None] = 16
# A segment is reusable by others only once this many distinct tenants of its sharing domain
# sent its tokens (the reader counted): 3 leaves a single attacker account nothing to learn,
# since the victim and the attacker's own probe make only 2 (docs/privacy.md).
PUBLISH_THRESHOLD: Final = 3
SENDER_COUNT_TTL_S: Final = 3600.0  # seconds a tenant counts for a window after it last sent it
# How the shared backends store K and V; see PoolConfig.kv_storage_dtype.
StoredDtype = Literal["bfloat16", "float16", "float32"]
POOL_KV_STORAGE_DTYPE: Final[StoredDtype] = "float16"
# Decoded entries a shared backend keeps per process for later reads (PoolConfig).
POOL_READ_CACHE_BYTES: Final = 256 * 1024**2
# The prefill rate (tokens/s) against which a slow read is skipped; None: never skip.
RECOMPUTE_TOKENS_PER_S: Final[float | None] = None
POOL_EVICTION_POLICY: Final = "frequency"  # an LFU with aging (cacheprune/pool/eviction.py)
POOL_EVICTION_HALF_LIFE_S: Final = 600.0  # a use counts half as much this long after
