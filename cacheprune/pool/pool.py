"""The shared KV pool: storage, byte budget, LRU eviction, TTL, leases and invalidation.

Requests use it only through `KVPool.session(...)` (see `session.py`), which guarantees that
every exit path releases the request's leases and publishes nothing unless it succeeded.
One lock guards all state; the index, metrics and audit log are only touched under it.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable

from cacheprune.pool.audit import AuditEvent, AuditLog
from cacheprune.pool.config import PoolConfig
from cacheprune.pool.entry import EntryInfo, EntryState, PoolEntry
from cacheprune.pool.metrics import PoolMetrics
from cacheprune.pool.session import PoolSession
from cacheprune.retriever.identity import SegmentHash
from cacheprune.retriever.index import PrefixIndex
from cacheprune.retriever.matching import Match, find_matches
from cacheprune.retriever.rolling import random_base
from cacheprune.tokens import MaskArray, TokenArray


def _info(entry: PoolEntry) -> EntryInfo:
    segment = entry.segment
    return EntryInfo(
        segment.segment_hash,
        segment.model_id,
        segment.policy_version,
        segment.num_tokens,
        entry.created_at,
    )


class KVPool:
    """Thread-safe pool of KV segments shared between tenants.

    `clock` (seconds, monotonic) drives TTL and session deadlines; `hash_base` fixes the
    rolling-hash base (a secret random one by default).
    """

    def __init__(
        self,
        config: PoolConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
        hash_base: int | None = None,
    ) -> None:
        config.check_budget_holds_one_context()
        self.config = config
        self._clock = clock
        self._cond = threading.Condition(threading.Lock())
        self._entries: OrderedDict[SegmentHash, PoolEntry] = OrderedDict()  # LRU first
        # (publish time, hash) in publish order, for TTL expiry; hashes, not entries, so that an
        # evicted entry's KV is not kept alive until its TTL would have run out.
        self._by_age: deque[tuple[float, SegmentHash]] = deque()
        self._index = PrefixIndex(
            config.min_entry_tokens, random_base() if hash_base is None else hash_base,
            config.anchor_stride,
        )
        self._bytes_in_use = 0
        self._leased_bytes = 0
        self._doomed_bytes = 0
        self._num_leases = 0
        self.metrics = PoolMetrics()
        self.metrics.budget_bytes.set(config.budget_bytes)
        self._audit = AuditLog(config.audit_log_path)

    # ---- requests ------------------------------------------------------------------------

    def session(
        self, request_id: str, model_id: str, policy_version: str, *, timeout_s: float | None = None
    ) -> PoolSession:
        """A request's only way in: `with pool.session(...) as s: ...; s.commit()`."""
        deadline = None if timeout_s is None else self._clock() + timeout_s
        return PoolSession(self, request_id, model_id, policy_version, deadline)

    # ---- inspection ----------------------------------------------------------------------

    def __len__(self) -> int:
        with self._cond:
            return len(self._entries)

    def __contains__(self, segment_hash: object) -> bool:
        with self._cond:
            return segment_hash in self._entries

    @property
    def bytes_in_use(self) -> int:
        with self._cond:
            return self._bytes_in_use

    @property
    def leased_bytes(self) -> int:
        with self._cond:
            return self._leased_bytes

    @property
    def num_leases(self) -> int:
        with self._cond:
            return self._num_leases

    def entry_infos(self) -> list[EntryInfo]:
        """Provenance of every visible entry, least recently used first."""
        with self._cond:
            return [_info(entry) for entry in self._entries.values()]

    def stored_token_ids(self) -> list[TokenArray]:
        """The token ids of every visible entry: for audits and the leakage evaluation, which
        must show what the pool holds. Never exported by metrics or the audit log."""
        with self._cond:
            return [entry.segment.token_ids.copy() for entry in self._entries.values()]

    def metrics_text(self) -> str:
        with self._cond:
            return self.metrics.text()

    def close(self) -> None:
        with self._cond:
            self._audit.close()

    # ---- invalidation and expiry ---------------------------------------------------------

    def invalidate(self, segment_hash: SegmentHash) -> bool:
        """Remove one entry now (freed once its leases end); False if no such entry."""
        with self._cond:
            entry = self._entries.get(segment_hash)
            if entry is None:
                self.metrics.invalidation_failures.inc()
                self._audit.record("invalidate", segment_hash=segment_hash, reason="unknown")
                return False
            self._remove_locked(entry, "invalidated")
            return True

    def invalidate_where(self, predicate: Callable[[EntryInfo], bool]) -> int:
        """Remove every entry the predicate selects; if it raises, nothing is removed."""
        with self._cond:
            try:
                victims = [e for e in self._entries.values() if predicate(_info(e))]
            except Exception:
                self.metrics.invalidation_failures.inc()
                self._audit.record("invalidate", reason="predicate_failed")
                raise
            for entry in victims:
                self._remove_locked(entry, "invalidated")
            return len(victims)

    def invalidate_all(self) -> int:
        return self.invalidate_where(lambda _: True)

    def purge_expired(self) -> int:
        with self._cond:
            return self._purge_expired_locked()

    # ---- called by PoolSession only (NOTE: kept here so that all state changes share one lock)

    def _lookup(
        self, request_id: str, tokens: TokenArray, mask: MaskArray, model_id: str, policy: str
    ) -> tuple[list[Match], list[PoolEntry]]:
        with self._cond:
            self._purge_expired_locked()
            result = find_matches(tokens, mask, self._index, model_id, policy)
            leased = []
            for match in result.matches:
                entry = self._entries[match.entry_hash]
                self._entries.move_to_end(match.entry_hash)
                if entry.num_leases == 0:
                    self._leased_bytes += entry.num_bytes
                entry.num_leases += 1
                self._num_leases += 1
                leased.append(entry)
                self._audit.record(
                    "reuse", request_id=request_id, segment_hash=match.entry_hash,
                    num_tokens=match.length,
                )
            num_private = int(mask.sum())
            metrics = self.metrics
            metrics.hit_tokens.inc(result.num_matched_tokens)
            metrics.miss_tokens.inc(len(tokens) - num_private - result.num_matched_tokens)
            metrics.private_tokens.inc(num_private)
            metrics.metadata_mismatches.inc(result.num_metadata_mismatches)
            metrics.hash_collisions.inc(result.num_collisions)
            metrics.verification_failures.inc(result.num_verification_failures)
            self._update_gauges_locked()
            return result.matches, leased

    def _release(self, leased: list[PoolEntry]) -> None:
        with self._cond:
            for entry in leased:
                assert entry.num_leases > 0, "lease released twice"
                entry.num_leases -= 1
                self._num_leases -= 1
                if entry.num_leases == 0:
                    self._leased_bytes -= entry.num_bytes
                    if entry.state is EntryState.DOOMED:
                        self._doomed_bytes -= entry.num_bytes
                        self._free_locked(entry)
            self._update_gauges_locked()
            self._cond.notify_all()

    def _publish(self, request_id: str, staged: list[PoolEntry]) -> list[SegmentHash]:
        with self._cond:
            self._purge_expired_locked()
            published = [
                entry.segment_hash
                for entry in staged
                if self._publish_one_locked(request_id, entry)
            ]
            self._update_gauges_locked()
            return published

    def _reject(self, request_id: str, staged: list[PoolEntry], reason: str) -> None:
        with self._cond:
            self._audit.record("reject", request_id=request_id, reason=reason)
            for entry in staged:
                self.metrics.rejected.labels(reason=reason).inc()
                self._audit.record(
                    "reject", request_id=request_id, segment_hash=entry.segment_hash, reason=reason
                )

    def _now(self) -> float:
        return self._clock()

    # ---- internals (lock held) -----------------------------------------------------------

    def _publish_one_locked(self, request_id: str, entry: PoolEntry) -> bool:
        config = self.config
        limit = config.backpressure_utilization * config.budget_bytes
        wait_until = time.monotonic() + config.backpressure_wait_s
        # Over the threshold only while something is pinned: with no lease, eviction can always
        # make room (an entry is never larger than the budget, checked at construction).
        while self._leased_bytes > 0 and self._leased_bytes + entry.num_bytes > limit:
            remaining = wait_until - time.monotonic()
            if config.backpressure_mode == "skip" or remaining <= 0:
                self.metrics.backpressure_skips.inc()
                self._audit.record(
                    "skip", request_id=request_id, segment_hash=entry.segment_hash,
                    reason="backpressure",
                )
                return False
            self._cond.wait(remaining)
        existing = self._entries.get(entry.segment_hash)
        if existing is not None:
            self._entries.move_to_end(entry.segment_hash)
            self.metrics.duplicates.inc()
            self._audit.record(
                "skip", request_id=request_id, segment_hash=entry.segment_hash, reason="duplicate"
            )
            return False
        self._evict_for_locked(entry.num_bytes)
        entry.created_at = self._clock()
        self._entries[entry.segment_hash] = entry
        self._index.add(entry.segment)
        if config.ttl_s is not None:
            self._by_age.append((entry.created_at, entry.segment_hash))
        self._bytes_in_use += entry.num_bytes
        assert self._bytes_in_use <= config.budget_bytes, "budget over-committed"
        self.metrics.published.inc()
        self._audit.record(
            "publish", request_id=request_id, segment_hash=entry.segment_hash,
            num_tokens=entry.num_tokens,
        )
        return True

    def _evict_for_locked(self, num_bytes: int) -> None:
        excess = self._bytes_in_use + num_bytes - self.config.budget_bytes
        if excess <= 0:
            return
        victims = []
        for entry in self._entries.values():  # least recently used first
            if entry.num_leases == 0:
                victims.append(entry)
                excess -= entry.num_bytes
                if excess <= 0:
                    break
        assert excess <= 0, "leases pin more than the backpressure check allowed"
        for entry in victims:
            self._remove_locked(entry, "lru")

    def _purge_expired_locked(self) -> int:
        ttl = self.config.ttl_s
        if ttl is None:
            return 0
        now = self._clock()
        num_expired = 0
        while self._by_age and self._by_age[0][0] + ttl <= now:
            created_at, segment_hash = self._by_age.popleft()
            entry = self._entries.get(segment_hash)
            if entry is not None and entry.created_at == created_at:
                self._remove_locked(entry, "expired")
                num_expired += 1
        return num_expired

    def _remove_locked(self, entry: PoolEntry, reason: str) -> None:
        del self._entries[entry.segment_hash]
        self._index.remove(entry.segment_hash)
        if entry.num_leases > 0:
            entry.state = EntryState.DOOMED
            self._doomed_bytes += entry.num_bytes
        else:
            self._free_locked(entry)
        self.metrics.evictions.labels(reason=reason).inc()
        event: AuditEvent = "invalidate" if reason == "invalidated" else "evict"
        self._audit.record(event, segment_hash=entry.segment_hash, reason=reason)
        self._update_gauges_locked()

    def _free_locked(self, entry: PoolEntry) -> None:
        entry.state = EntryState.FREED
        self._bytes_in_use -= entry.num_bytes

    def _update_gauges_locked(self) -> None:
        metrics = self.metrics
        metrics.bytes_in_use.set(self._bytes_in_use)
        metrics.utilization.set(self._bytes_in_use / self.config.budget_bytes)
        metrics.entries.set(len(self._entries))
        metrics.leases_outstanding.set(self._num_leases)
        metrics.leased_bytes.set(self._leased_bytes)
        metrics.doomed_bytes.set(self._doomed_bytes)
