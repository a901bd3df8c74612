"""Pool settings: the KV shape it stores, its budget, lifetime and backpressure policy."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from cacheprune import defaults
from cacheprune.defaults import StoredDtype
from cacheprune.pool.errors import PoolCapacityError, PoolConfigError
from cacheprune.pool.eviction import EVICTION_POLICIES, EvictionPolicy

BackpressureMode = Literal["wait", "skip"]

# Per-token bookkeeping an entry stores beside its KV: uint32 token id, int64 position, bool
# recompute mark. Counted in the budget so that "bytes in use" is what the entries really hold.
TOKEN_METADATA_BYTES = 4 + 8 + 1
KV_DTYPE_BYTES = 4  # the engine hands the pool float32 K and V
# Bytes of one K or V element at rest on the shared backends, per `PoolConfig.kv_storage_dtype`.
STORED_DTYPE_BYTES: dict[str, int] = {"float32": 4, "bfloat16": 2, "float16": 2}


@dataclass(slots=True, frozen=True)
class KVShape:
    """Shape of one token's KV: `keys`/`values` are [num_layers, num_kv_heads, tokens, head_dim]."""

    num_layers: int
    num_kv_heads: int
    head_dim: int

    def __post_init__(self) -> None:
        for name in ("num_layers", "num_kv_heads", "head_dim"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise PoolConfigError(f"KVShape.{name} must be a positive int, got {value!r}")

    @property
    def kv_bytes_per_token(self) -> int:
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim * KV_DTYPE_BYTES

    @property
    def entry_bytes_per_token(self) -> int:
        """What one pooled float32 token costs against the budget (memory://, which keeps the
        engine's tensors): its K, V and bookkeeping."""
        return self.kv_bytes_per_token + TOKEN_METADATA_BYTES

    def stored_bytes_per_token(self, element_bytes: int) -> int:
        """What one token costs when K and V are stored with `element_bytes` per element."""
        return (self.kv_bytes_per_token // KV_DTYPE_BYTES * element_bytes
                + TOKEN_METADATA_BYTES)


@dataclass(slots=True, frozen=True)
class PoolConfig:
    """Settings of one pool; `open_pool` refuses a budget that cannot hold one whole context.

    `min_entry_tokens` is the retriever's window K: shorter entries are refused and shorter
    matches are never made. `ttl_s=None` keeps entries until evicted or invalidated.
    Backpressure: when the bytes pinned by leases plus a new entry would exceed
    `backpressure_utilization` of the budget, publishing waits up to `backpressure_wait_s` for
    leases to be released ("wait") or is skipped at once ("skip"); it never over-commits.
    `audit_log_path=None` disables the audit log (the metrics stay on).
    """

    kv_shape: KVShape
    budget_bytes: int
    max_context_tokens: int
    min_entry_tokens: int = defaults.MATCH_WINDOW
    # None: an entry is found only from its first tokens (the paper's index); s: also from
    # windows at offsets s, 2s, ... inside it (see cacheprune.retriever.index).
    anchor_stride: int | None = defaults.ANCHOR_STRIDE
    ttl_s: float | None = defaults.POOL_TTL_S
    backpressure_utilization: float = 0.9
    backpressure_mode: BackpressureMode = "skip"
    backpressure_wait_s: float = 1.0
    audit_log_path: str | None = None
    # Quotas: bytes one tenant (one sharing domain) may publish per `quota_window_s`, so that
    # one tenant's burst cannot evict everybody's segments. None: no limit.
    tenant_quota_bytes: int | None = None
    domain_quota_bytes: int | None = None
    quota_window_s: float = 60.0
    # Shares: the most of the budget one tenant's (one domain's) entries may hold at once; a
    # publish over it first evicts that tenant's (domain's) own entries, lowest use rank first.
    tenant_share: float | None = None
    domain_share: float | None = None
    # Shared backends: the longest one store call (a server round trip, the folder's lock)
    # may wait, and how long a failing store is left alone before one probe call.
    store_timeout_s: float = 0.5
    breaker_cooldown_s: float = 5.0
    # How the shared backends store K and V (the engine's float32 comes back as float32).
    # NOTE: float16 by default: half the bytes, and on the default model a max logit
    # difference of 8e-3 against float32 storage where bfloat16 gave 7e-2
    # (benchmarks/pool_at_rest_quality.py). KV beyond float16's range is refused at stage.
    # float32 stores it exactly. memory:// keeps float32 tensors whatever this says.
    kv_storage_dtype: StoredDtype = defaults.POOL_KV_STORAGE_DTYPE
    # The serving engine's prefill rate (tokens/s). When given, a shared backend's lookup
    # skips a match whose entry would take longer to read, at the read rate it measured,
    # than its tokens take to compute (a slow store, a short match). None: never skip.
    recompute_tokens_per_s: float | None = defaults.RECOMPUTE_TOKENS_PER_S
    # Shared backends: bytes of decoded (decrypted, float32) entries each process keeps for
    # later reads of the same entry (decoded.py); 0 keeps none.
    read_cache_bytes: int = defaults.POOL_READ_CACHE_BYTES
    # Which entries the budget keeps (eviction.py): "frequency", an LFU whose use counts halve
    # every `eviction_half_life_s`, keeps what is reused; "lru" keeps what is newest.
    eviction_policy: EvictionPolicy = defaults.POOL_EVICTION_POLICY
    eviction_half_life_s: float = defaults.POOL_EVICTION_HALF_LIFE_S
    # Publication threshold: a window of `min_entry_tokens` tokens is shareable only once this
    # many distinct tenants of the sharing domain sent it (threshold.py); 1 counts nothing.
    # The serving engine and the connector set `defaults.PUBLISH_THRESHOLD`.
    publish_threshold: int = 1
    sender_count_ttl_s: float = defaults.SENDER_COUNT_TTL_S

    def __post_init__(self) -> None:
        if not isinstance(self.budget_bytes, int) or self.budget_bytes <= 0:
            raise PoolConfigError(f"budget_bytes must be a positive int, got {self.budget_bytes!r}")
        if not isinstance(self.max_context_tokens, int) or self.max_context_tokens <= 0:
            raise PoolConfigError(
                f"max_context_tokens must be a positive int, got {self.max_context_tokens!r}"
            )
        if not 1 <= self.min_entry_tokens <= self.max_context_tokens:
            raise PoolConfigError(
                f"min_entry_tokens must lie in [1, max_context_tokens={self.max_context_tokens}], "
                f"got {self.min_entry_tokens}"
            )
        if self.anchor_stride is not None and self.anchor_stride < 1:
            raise PoolConfigError(
                f"anchor_stride must be at least 1 token or None, got {self.anchor_stride}"
            )
        if self.ttl_s is not None and not (self.ttl_s > 0 and math.isfinite(self.ttl_s)):
            raise PoolConfigError(f"ttl_s must be positive and finite or None, got {self.ttl_s}")
        if not 0 < self.backpressure_utilization <= 1:
            raise PoolConfigError(
                f"backpressure_utilization must lie in (0, 1], got {self.backpressure_utilization}"
            )
        if self.backpressure_mode not in ("wait", "skip"):
            raise PoolConfigError(
                f"backpressure_mode must be 'wait' or 'skip', got {self.backpressure_mode!r}"
            )
        for name in ("tenant_quota_bytes", "domain_quota_bytes"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value <= 0):
                raise PoolConfigError(f"{name} must be a positive int or None, got {value!r}")
        if not (self.quota_window_s > 0 and math.isfinite(self.quota_window_s)):
            raise PoolConfigError(
                f"quota_window_s must be positive and finite, got {self.quota_window_s}")
        for name in ("tenant_share", "domain_share"):
            value = getattr(self, name)
            if value is not None and not 0 < value <= 1:
                raise PoolConfigError(f"{name} must lie in (0, 1] or be None, got {value!r}")
        if self.kv_storage_dtype not in ("bfloat16", "float16", "float32"):
            raise PoolConfigError("kv_storage_dtype must be 'bfloat16', 'float16' or "
                                  f"'float32', got {self.kv_storage_dtype!r}")
        if self.recompute_tokens_per_s is not None and not (
                self.recompute_tokens_per_s > 0 and math.isfinite(self.recompute_tokens_per_s)):
            raise PoolConfigError("recompute_tokens_per_s must be positive and finite or None, "
                                  f"got {self.recompute_tokens_per_s!r}")
        if not isinstance(self.read_cache_bytes, int) or self.read_cache_bytes < 0:
            raise PoolConfigError(f"read_cache_bytes must be an int >= 0 (0: no cache), got "
                                  f"{self.read_cache_bytes!r}")
        if not isinstance(self.publish_threshold, int) or self.publish_threshold < 1:
            raise PoolConfigError(f"publish_threshold must be an int >= 1 (1: no threshold), "
                                  f"got {self.publish_threshold!r}")
        if self.eviction_policy not in EVICTION_POLICIES:
            raise PoolConfigError(f"eviction_policy must be one of {EVICTION_POLICIES}, "
                                  f"got {self.eviction_policy!r}")
        for name in ("store_timeout_s", "breaker_cooldown_s", "eviction_half_life_s",
                     "sender_count_ttl_s"):
            value = getattr(self, name)
            if not (value > 0 and math.isfinite(value)):
                raise PoolConfigError(f"{name} must be positive and finite, got {value!r}")
        if not (self.backpressure_wait_s >= 0 and math.isfinite(self.backpressure_wait_s)):
            raise PoolConfigError(
                f"backpressure_wait_s must be >= 0 and finite, got {self.backpressure_wait_s}"
            )

    @property
    def shared_bytes_per_token(self) -> int:
        """What one token costs against the budget on the shared backends: K and V at
        `kv_storage_dtype` (half of float32 by default) and the bookkeeping. An entry's head
        (~0.5 KB) and its tags are not counted."""
        return self.kv_shape.stored_bytes_per_token(STORED_DTYPE_BYTES[self.kv_storage_dtype])

    def check_budget_holds_one_context(self, bytes_per_token: int) -> None:
        """Raise PoolCapacityError unless the budget holds one maximum-length context at
        `bytes_per_token` (what the backend counts per token)."""
        required = self.max_context_tokens * bytes_per_token
        if self.budget_bytes < required:
            raise PoolCapacityError(
                f"budget_bytes={self.budget_bytes} cannot hold one maximum-length context: "
                f"max_context_tokens={self.max_context_tokens} x "
                f"{bytes_per_token} bytes/token = {required} bytes needed"
            )
