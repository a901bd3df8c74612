"""The pool's Prometheus metrics, in a registry of its own (two pools never share counters)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

_PREFIX = "cacheprune_pool"


class PoolMetrics:
    """Counters and gauges; the pool updates them under its lock."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        registry = self.registry

        def gauge(name: str, doc: str) -> Gauge:
            return Gauge(f"{_PREFIX}_{name}", doc, registry=registry)

        def counter(name: str, doc: str, labels: tuple[str, ...] = ()) -> Counter:
            return Counter(f"{_PREFIX}_{name}", doc, labels, registry=registry)

        self.bytes_in_use = gauge("bytes_in_use", "Bytes held by entries, doomed ones included")
        self.budget_bytes = gauge("budget_bytes", "Configured byte budget")
        self.utilization = gauge("utilization", "bytes_in_use / budget_bytes")
        self.entries = gauge("entries", "Entries visible to lookups")
        self.leases_outstanding = gauge("leases_outstanding", "Leases held by running requests")
        self.leased_bytes = gauge("leased_bytes", "Bytes pinned by leases (cannot be evicted)")
        self.doomed_bytes = gauge(
            "doomed_bytes", "Bytes of invalidated or expired entries still leased (unreleased KV)"
        )
        self.hit_tokens = counter("hit_tokens", "Request tokens served from the pool")
        self.miss_tokens = counter("miss_tokens", "Non-private request tokens not served")
        self.private_tokens = counter("private_tokens", "Private request tokens (never looked up)")
        self.published = counter("published_entries", "Entries made visible")
        self.duplicates = counter("duplicate_entries", "Publishes of an entry already present")
        self.evictions = counter("evictions", "Entries removed", ("reason",))
        self.rejected = counter(
            "rejected_entries", "Staged entries refused or discarded", ("reason",)
        )
        self.backpressure_skips = counter(
            "backpressure_skips", "Publishes skipped because leases pinned too much of the budget"
        )
        self.invalidation_failures = counter(
            "invalidation_failures", "Invalidation requests that could not be carried out"
        )
        self.metadata_mismatches = counter(
            "metadata_mismatches", "Token matches refused for another model id or policy version"
        )
        self.hash_collisions = counter(
            "hash_collisions", "Rolling-hash proposals whose tokens did not match"
        )
        self.read_misses = counter(
            "read_misses", "Reads that found no usable entry (the caller computed the tokens)",
            ("reason",),
        )
        self.store_errors = counter(
            "store_errors", "Operations the store could not carry out (server or disk down)",
            ("op",),
        )
        self.breaker_refusals = counter(
            "breaker_refusals", "Store calls not made because the circuit breaker was open",
            ("op",),
        )
        self.breaker_openings = counter(
            "breaker_openings", "Times a failing store was left alone for a cooldown"
        )
        self.slow_reads_skipped = counter(
            "slow_reads_skipped", "Matches not leased: reading them would take longer than "
            "computing their tokens (the measured read rate against recompute_tokens_per_s)"
        )
        self.refused_records = counter(
            "refused_anchor_records", "Anchor records refused (bounds, sizes) or garbled anchors"
        )
        self.dangling_anchors = counter(
            "dangling_anchors", "Index hits whose entry was gone (evicted by the server); cleaned"
        )
        self.quota_refusals = counter(
            "quota_refusals", "Publishes refused by a tenant or domain quota", ("scope",)
        )
        self.audit_failures = counter(
            "audit_failures", "Audit lines that could not be written"
        )
        self.verification_failures = counter(
            "verification_failures", "Matches whose SHA-256 did not confirm the entry"
        )
        self.below_threshold_tokens = counter(
            "below_threshold_tokens", "Non-private request tokens neither looked up nor "
            "published: fewer than publish_threshold tenants sent them"
        )
        self.forged_senders = counter(
            "forged_senders", "Sender marks found in the store that the pool key did not make"
        )
        self.erased_senders = counter(
            "erased_senders", "Sender marks removed because their tenant was erased"
        )

    def text(self) -> str:
        """All metrics in the Prometheus text exposition format."""
        return generate_latest(self.registry).decode("utf-8")
