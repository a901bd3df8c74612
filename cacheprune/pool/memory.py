"""`memory://`: the pool in one process — requests, leases, quotas, administration; the entries,
their eviction and expiry are memory_entries.py's.

One lock guards all state; the entries, metrics and audit log are only touched under it. KV stays
as torch tensors (reads are views), so this backend costs what the in-process pool always did.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import numpy as np

from cacheprune.pool.audit import AuditLog
from cacheprune.pool.config import PoolConfig
from cacheprune.pool.entry import EntryInfo, EntryState, PoolEntry, SegmentKV, validate_segment
from cacheprune.pool.handles import Lease, LookupResult, Scope, SegmentData, StagedSegment
from cacheprune.pool.keys import PoolKey, PoolKeys
from cacheprune.pool.memory_entries import MemoryEntries
from cacheprune.pool.metrics import PoolMetrics
from cacheprune.pool.quota import QuotaLedger, share_limits
from cacheprune.pool.store import PoolStore
from cacheprune.pool.threshold import MemorySenderCounts, PublicationThreshold
from cacheprune.retriever import EntryName, IndexedSegment, Match, find_matches
from cacheprune.tokens import MaskArray, TokenArray, TokenIds


def _info(entry: PoolEntry) -> EntryInfo:
    return EntryInfo(entry.name, entry.identity[0], entry.identity[1], entry.num_tokens,
                     entry.created_at, entry.tenant_tag, entry.domain_tag)


class MemoryPool(PoolStore):
    """Thread-safe in-process pool; open it with `open_pool("memory://", config)`."""

    def __init__(self, config: PoolConfig, *, key: PoolKey | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 hash_base: int | None = None) -> None:
        """`hash_base` overrides the key's rolling-hash base (tests force collisions with it)."""
        config.check_budget_holds_one_context(config.kv_shape.entry_bytes_per_token)
        self.config = config
        self.url = "memory://"
        self.clock = clock
        self.keys = PoolKeys(key or PoolKey.random())
        self._cond = threading.Condition(threading.Lock())
        self._lease_table: dict[tuple[str, EntryName], list[PoolEntry]] = {}
        self._staged: dict[str, PoolEntry] = {}
        self._quota = QuotaLedger()
        self._leased_bytes = 0
        self._num_leases = 0
        self.metrics = PoolMetrics()
        self.metrics.budget_bytes.set(config.budget_bytes)
        self._audit = AuditLog(config.audit_log_path, self.metrics.audit_failures)
        self._entries = MemoryEntries(config, hash_base or self.keys.hash_base, self.metrics,
                                      self._audit, clock, self._update_gauges_locked)
        self.threshold = PublicationThreshold(config, self.keys, MemorySenderCounts(),
                                              self.metrics, clock,
                                              lambda op, call, default: call())

    @property
    def audit(self) -> AuditLog:
        return self._audit

    # ---- requests ------------------------------------------------------------------------

    def lookup(self, scope: Scope, owner: str, token_ids: TokenArray, private_mask: MaskArray
               ) -> LookupResult:
        identity_digest = scope.identity.digest()
        domain_tag = self.keys.domain_tag(scope.domain)
        scope_tag = self.keys.scope_tag(identity_digest, scope.domain)
        tenant_tag = self.keys.tenant_tag(scope.tenant)
        with self._cond:
            self._entries.purge_expired()
            result = find_matches(token_ids, private_mask, self._entries.index, identity_digest,
                                  domain_tag, lambda part: self.keys.entry_name(scope_tag, part))
            leases = []
            now = self.clock()
            for match in result.matches:
                entry = self._entries.use(match.entry, now)
                self._lease_locked(owner, entry)
                leases.append(Lease(entry.name, owner, entry.num_tokens))
                self._audit.record("reuse", request_id=owner, entry=match.entry,
                                   num_tokens=match.length, tenant=tenant_tag)
            num_private = int(private_mask.sum())
            metrics = self.metrics
            metrics.hit_tokens.inc(result.num_matched_tokens)
            metrics.miss_tokens.inc(len(token_ids) - num_private - result.num_matched_tokens)
            metrics.private_tokens.inc(num_private)
            metrics.metadata_mismatches.inc(result.num_metadata_mismatches)
            metrics.hash_collisions.inc(result.num_collisions)
            metrics.verification_failures.inc(result.num_verification_failures)
            self._update_gauges_locked()
            return LookupResult(result.matches, leases)

    def _lease_locked(self, owner: str, entry: PoolEntry) -> None:
        if entry.num_leases == 0:
            self._leased_bytes += entry.num_bytes
        entry.num_leases += 1
        self._num_leases += 1
        self._lease_table.setdefault((owner, entry.name), []).append(entry)

    def read(self, lease: Lease, match: Match) -> SegmentKV | None:
        with self._cond:
            held = self._lease_table.get((lease.owner, lease.entry))
            entry = held[-1] if held else None
            ttl = self.config.ttl_s
            reason = None
            if entry is None:
                reason = "not_leased"
            elif entry.state is not EntryState.LIVE:
                reason = "invalidated"
            elif ttl is not None and entry.created_at + ttl <= self.clock():
                reason = "expired"
            if reason is not None or entry is None:
                self.metrics.read_misses.labels(reason=reason).inc()
                self._audit.record("miss", request_id=lease.owner, entry=lease.entry,
                                   reason=reason)
                return None
        part = slice(match.entry_start, match.entry_start + match.length)
        return SegmentKV(
            keys=entry.keys[:, :, part, :],
            values=entry.values[:, :, part, :],
            positions=entry.positions[part],
            recompute=entry.recompute[part],
        )

    def release(self, leases: Sequence[Lease]) -> None:
        with self._cond:
            for lease in leases:
                held = self._lease_table.get((lease.owner, lease.entry))
                if not held:
                    continue  # released already: releasing twice is harmless
                entry = held.pop()
                if not held:
                    del self._lease_table[(lease.owner, lease.entry)]
                entry.num_leases -= 1
                self._num_leases -= 1
                if entry.num_leases == 0:
                    self._leased_bytes -= entry.num_bytes
                    if entry.state is EntryState.DOOMED:
                        self._entries.free(entry)
            self._update_gauges_locked()
            self._cond.notify_all()

    def stage(self, scope: Scope, staging_id: str, segment: SegmentData) -> StagedSegment:
        valid = validate_segment(self.config, segment)
        identity_digest = scope.identity.digest()
        name = self.keys.entry_name(self.keys.scope_tag(identity_digest, scope.domain),
                                    valid.token_ids)
        entry = PoolEntry(
            segment=IndexedSegment(name, valid.token_ids, identity_digest,
                                   self.keys.domain_tag(scope.domain)),
            keys=valid.keys, values=valid.values, positions=valid.positions,
            recompute=valid.recompute, created_at=self.clock(),
            num_bytes=valid.num_tokens * self.bytes_per_token,
            identity=(scope.identity.model_id, scope.identity.policy_version),
            tenant_tag=self.keys.tenant_tag(scope.tenant),
            domain_tag=self.keys.domain_tag(scope.domain),
        )
        with self._cond:
            self._staged[staging_id] = entry
        return StagedSegment(staging_id, name, valid.num_tokens)

    def publish(self, scope: Scope, owner: str, staged: Sequence[StagedSegment]
                ) -> list[EntryName]:
        with self._cond:
            self._entries.purge_expired()
            published = []
            for handle in staged:
                entry = self._staged.pop(handle.staging_id, None)
                if entry is None or entry.name != handle.entry:
                    self._reject_locked(owner, handle.entry, "staged_missing")
                elif self._publish_one_locked(owner, entry):
                    published.append(entry.name)
            self._update_gauges_locked()
            return published

    def discard(self, owner: str, staged: Sequence[StagedSegment], reason: str) -> None:
        with self._cond:
            self._audit.record("reject", request_id=owner, reason=reason)
            for handle in staged:
                self._staged.pop(handle.staging_id, None)
                self._reject_locked(owner, handle.entry, reason)

    def _reject_locked(self, owner: str, name: EntryName, reason: str) -> None:
        self.metrics.rejected.labels(reason=reason).inc()
        self._audit.record("reject", request_id=owner, entry=name, reason=reason)

    # ---- administration ------------------------------------------------------------------

    def invalidate(self, entry: EntryName) -> bool:
        with self._cond:
            found = self._entries.get(entry)
            if found is None:
                self.metrics.invalidation_failures.inc()
                self._audit.record("invalidate", entry=entry, reason="unknown")
                return False
            self._entries.remove(found, "invalidated")
            return True

    def invalidate_where(self, predicate: Callable[[EntryInfo], bool]) -> int:
        with self._cond:
            try:
                victims = [e for e in self._entries if predicate(_info(e))]
            except Exception:
                self.metrics.invalidation_failures.inc()
                self._audit.record("invalidate", reason="predicate_failed")
                raise
            for entry in victims:
                self._entries.remove(entry, "invalidated")
            return len(victims)

    def invalidate_all(self) -> int:
        return self.invalidate_where(lambda _: True)

    def erase_tenant(self, tenant: str) -> int:
        tag = self.keys.tenant_tag(tenant)
        with self._cond:
            victims = [e for e in self._entries if e.tenant_tag == tag]
            for entry in victims:
                self._entries.remove(entry, "erased")
            self._audit.record("erase", tenant=tag, num_tokens=sum(e.num_tokens for e in victims))
            self.threshold.forget_tenant(tenant)
            return len(victims)

    def evict(self, num_bytes: int) -> int:
        with self._cond:
            freed = self._entries.evict(num_bytes)
            self._update_gauges_locked()
            return freed

    def purge_expired(self) -> int:
        with self._cond:
            return self._entries.purge_expired()

    # ---- inspection ----------------------------------------------------------------------

    def entry_infos(self) -> list[EntryInfo]:
        with self._cond:
            return [_info(entry) for entry in self._entries]

    def stored_token_ids(self) -> list[TokenIds]:
        with self._cond:
            return [entry.segment.token_ids.astype(np.int64) for entry in self._entries]

    @property
    def num_entries(self) -> int:
        with self._cond:
            return len(self._entries)

    @property
    def bytes_in_use(self) -> int:
        with self._cond:
            return self._entries.bytes_in_use

    @property
    def bytes_per_token(self) -> int:
        return self.config.kv_shape.entry_bytes_per_token

    @property
    def num_leases(self) -> int:
        with self._cond:
            return self._num_leases

    @property
    def leased_bytes(self) -> int:
        with self._cond:
            return self._leased_bytes

    def metrics_text(self) -> str:
        with self._cond:
            return self.metrics.text()

    def close(self) -> None:
        with self._cond:
            self._audit.close()

    # ---- internals (lock held) -----------------------------------------------------------

    def _publish_one_locked(self, owner: str, entry: PoolEntry) -> bool:
        config = self.config
        if entry.name in self._entries:  # computed again: a use
            self._entries.use(entry.name, self.clock())
            self.metrics.duplicates.inc()
            self._audit.record("skip", request_id=owner, entry=entry.name,
                               reason="duplicate")
            return False
        refused = self._quota.try_charge(config, self.clock(), entry.tenant_tag,
                                         entry.domain_tag, entry.num_bytes)
        if refused is not None:
            self.metrics.quota_refusals.labels(scope=refused).inc()
            self._audit.record("skip", request_id=owner, entry=entry.name,
                               reason=f"quota:{refused}", tenant=entry.tenant_tag)
            return False
        for kind, tag, share in share_limits(config, entry.tenant_tag, entry.domain_tag):
            if not self._entries.make_room_in_share(kind, tag, share, entry.num_bytes):
                self.metrics.quota_refusals.labels(scope=f"share:{kind}").inc()
                self._audit.record("skip", request_id=owner, entry=entry.name,
                                   reason=f"share:{kind}", tenant=entry.tenant_tag)
                return False
        limit = config.backpressure_utilization * config.budget_bytes
        wait_until = time.monotonic() + config.backpressure_wait_s
        # Over the threshold only while something is pinned: with no lease, eviction can always
        # make room (an entry is never larger than the budget, checked at construction).
        while self._leased_bytes > 0 and self._leased_bytes + entry.num_bytes > limit:
            remaining = wait_until - time.monotonic()
            if config.backpressure_mode == "skip" or remaining <= 0:
                self.metrics.backpressure_skips.inc()
                self._audit.record("skip", request_id=owner, entry=entry.name,
                                   reason="backpressure")
                return False
            self._cond.wait(remaining)
        self._entries.evict(self._entries.bytes_in_use + entry.num_bytes - config.budget_bytes)
        self._entries.add(entry)
        self.metrics.published.inc()
        self._audit.record("publish", request_id=owner, entry=entry.name,
                           num_tokens=entry.num_tokens, tenant=entry.tenant_tag)
        return True

    def _update_gauges_locked(self) -> None:
        metrics = self.metrics
        metrics.bytes_in_use.set(self._entries.bytes_in_use)
        metrics.utilization.set(self._entries.bytes_in_use / self.config.budget_bytes)
        metrics.entries.set(len(self._entries))
        metrics.leases_outstanding.set(self._num_leases)
        metrics.leased_bytes.set(self._leased_bytes)
        metrics.doomed_bytes.set(self._entries.doomed_bytes)
