"""Settings of the serving engine: which sharing mode, how it publishes, its pool and annotator."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from cacheprune import defaults
from cacheprune.annotator import AnnotatorConfig
from cacheprune.defaults import StoredDtype
from cacheprune.monitor import LeakMonitorConfig, ProbeMonitorConfig
from cacheprune.pool import DEFAULT_DOMAIN

# cacheprune: token-level sharing of non-private segments (the product).
# no_sharing / tenant_prefix / global_prefix / fixed_chunks: the baselines it is compared with.
SharingMode = Literal["cacheprune", "no_sharing", "tenant_prefix", "global_prefix",
                      "fixed_chunks"]
# isolated: what a prompt with private tokens publishes (segments, marks, KV, positions) comes
# from one pass over the prompt with its private tokens left out, so no published byte depends
# on a private value. segment: also no tenant's preceding text: each published run's KV is
# computed from the operator's declared public prefix and the run alone (context poisoning
# closed). paper_baseline: the CachePrune paper's in-context KV, a research baseline only (its
# segments after a private value carry a trace of it, see docs/privacy.md).
PublishMode = Literal["isolated", "segment", "paper_baseline"]


@dataclass(slots=True, frozen=True)
class EngineConfig:
    mode: SharingMode = "cacheprune"
    publish_mode: PublishMode = defaults.PUBLISH_MODE
    annotator: AnnotatorConfig = field(default_factory=AnnotatorConfig)
    pool_budget_bytes: int = defaults.POOL_BUDGET_BYTES
    pool_ttl_s: float | None = defaults.POOL_TTL_S
    anchor_stride: int | None = defaults.ANCHOR_STRIDE  # the pool's, see defaults
    # The pool's window (`PoolConfig.min_entry_tokens`, see defaults). Segments are still
    # published from the annotator's min_len up; a match may be any part of one.
    match_window: int = defaults.MATCH_WINDOW
    audit_log_path: str | None = None
    # The operator's system prompt, declared public. publish_mode="segment" computes each
    # published run after it (when a request starts with it) instead of after the tenant's text.
    public_system_prompt: str | None = None
    # Watches answers for another tenant's private words (hashes only); None turns it off.
    leak_monitor: LeakMonitorConfig | None = field(default_factory=LeakMonitorConfig)
    # Flags tenants whose requests look like a search over another tenant's text (hashes
    # only); with its cooldown_s set, a flagged tenant loses cross-tenant reuse for a while.
    probe_monitor: ProbeMonitorConfig | None = field(default_factory=ProbeMonitorConfig)
    # Where the pool lives: memory:// (this process), file:///folder, redis://host:port/db or
    # unix:///socket (see docs/pool.md). Shared backends need the pool key (here or in
    # $CACHEPRUNE_POOL_KEY); it is never printed.
    pool_url: str = defaults.POOL_URL
    pool_key: str | None = field(default=None, repr=False)
    # tenant -> sharing domain; a tenant not listed is in the default domain.
    sharing_domains: Mapping[str, str] = field(default_factory=dict)
    chunk_tokens: int = 512  # fixed_chunks baseline
    max_prefix_prompts: int = 64  # prefix-cache baselines
    # Attention for the annotator is averaged over every k-th layer from layer 0.
    # NOTE: 2 halves the capture cost and chooses the same segments and recompute marks as
    # every layer (measured in docs/serving.md).
    capture_layer_stride: int = 2
    # A stretch of tenant text is reused and published only once this many distinct tenants
    # of its sharing domain sent it (the pool's publication threshold; 1: no threshold).
    # Operator-declared public ranges are exempt.
    publish_threshold: int = defaults.PUBLISH_THRESHOLD
    # Detection skips the lines and sentences `publish_threshold` distinct tenants of the
    # sharing domain sent with nothing detected in them (mode "cacheprune" only; see
    # `known_clean`): a warm prompt is detected in a fraction of the time.
    skip_known_clean: bool = True
    sender_count_ttl_s: float = defaults.SENDER_COUNT_TTL_S
    # How the shared backends store K and V (float16: half of float32; memory:// keeps
    # float32), and the prefill rate against which a slow read is skipped: the pool's
    # `PoolConfig.kv_storage_dtype` and `recompute_tokens_per_s`, with their defaults.
    kv_storage_dtype: StoredDtype = defaults.POOL_KV_STORAGE_DTYPE
    recompute_tokens_per_s: float | None = defaults.RECOMPUTE_TOKENS_PER_S

    def sharing_domain(self, tenant: str) -> str:
        return self.sharing_domains.get(tenant, DEFAULT_DOMAIN)

    @property
    def applied_threshold(self) -> int:
        """The publication threshold this mode applies: `publish_threshold` where it shares
        through the pool, 1 where it does not (the prefix-cache baselines count nothing)."""
        return self.publish_threshold if self.mode in ("cacheprune", "fixed_chunks") else 1

    def __post_init__(self) -> None:
        modes = SharingMode.__args__  # type: ignore[attr-defined]
        if self.mode not in modes:
            raise ValueError(f"mode must be one of {', '.join(modes)}; got {self.mode!r}")
        publish_modes = PublishMode.__args__  # type: ignore[attr-defined]
        if self.publish_mode == "paper":
            raise ValueError("publish_mode 'paper' is now 'paper_baseline': a research baseline "
                             "whose shared KV carries traces of private values; use 'isolated' "
                             "(the default) or 'segment' in production")
        if self.publish_mode not in publish_modes:
            raise ValueError(f"publish_mode must be one of {', '.join(publish_modes)}; got "
                             f"{self.publish_mode!r}")
        if self.capture_layer_stride < 1:
            raise ValueError(f"capture_layer_stride must be >= 1, got "
                             f"{self.capture_layer_stride}")
        if not 1 <= self.match_window <= self.annotator.min_len:
            raise ValueError(f"match_window must lie in [1, annotator.min_len="
                             f"{self.annotator.min_len}], got {self.match_window}")
        if self.chunk_tokens < self.annotator.min_len:
            raise ValueError(f"chunk_tokens ({self.chunk_tokens}) must be >= the annotator's "
                             f"min_len ({self.annotator.min_len})")
