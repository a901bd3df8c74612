"""What the file and Valkey backends share: keyed anchors, lookups, reads, staging, publishing.

A subclass supplies the medium (`SharedMedium` methods: bytes in and out by name); this class
keeps the pool's semantics, so both backends find, verify, lease and publish alike — and like
`memory://`, since matching is `cacheprune.retriever.find_matches` over the candidate entries.

Index: for each anchor window of an entry (the retriever's offsets), an anchor record under the
keyed id of (scope, window hash) (anchor_records.py). A lookup computes every window hash of the
prompt's non-private runs, asks the medium for the records of their ids in one batch, reads and
authenticates the heads of the entries named, drops those a tombstone voids (tombstones.py),
and matches on the rest. Records whose entry is gone are counted and removed.

NOTE: every medium failure (`MediumError`, `OSError`) inside a request is counted in
`store_errors{op}`, audited (`fault`) and turns into "no sharing" for that step; requests never
see it. A failure opens the circuit breaker (breaker.py): for `breaker_cooldown_s` no call
goes to the store (`breaker_refusals{op}`), then one probe call decides.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import TypeVar

import numpy as np

from cacheprune.pool.anchor_records import (
    MAX_CANDIDATES_PER_LOOKUP,
    pack_record,
    unpack_records,
)
from cacheprune.pool.audit import AuditLog
from cacheprune.pool.breaker import CircuitBreaker
from cacheprune.pool.codec import (
    EntryHead,
    EntryRejected,
    decode_head,
    decode_part,
    encode_entry,
    entry_length,
)
from cacheprune.pool.config import PoolConfig
from cacheprune.pool.decoded import DecodedEntries
from cacheprune.pool.entry import SegmentKV, validate_segment
from cacheprune.pool.handles import Lease, LookupResult, Scope, SegmentData, StagedSegment
from cacheprune.pool.keys import PoolKey, PoolKeys
from cacheprune.pool.metrics import PoolMetrics
from cacheprune.pool.quota import quota_counter_name, quota_limits, share_limits
from cacheprune.pool.shared_admin import SharedAdmin
from cacheprune.pool.shared_medium import MediumError
from cacheprune.pool.store import PoolStore
from cacheprune.pool.threshold import PublicationThreshold, SenderCountStore
from cacheprune.pool.tombstones import TombstoneMemory
from cacheprune.retriever import (
    EntryName,
    IndexedSegment,
    Match,
    PrefixIndex,
    anchor_offsets,
    find_matches,
    window_hashes,
)
from cacheprune.tokens import MaskArray, TokenArray

Result = TypeVar("Result")
# Compared by identity: never a stored value.
_UNAVAILABLE: bytes | None = b"<the store did not answer>"
_STORE_ERROR: str | None = "store_error"


class SharedPool(SharedAdmin, PoolStore):
    """Base of the backends shared between processes; see the module docstring."""

    def __init__(self, url: str, config: PoolConfig, key: PoolKey,
                 clock: Callable[[], float]) -> None:
        config.check_budget_holds_one_context(config.shared_bytes_per_token)
        self.config = config
        self.url = url
        self.clock = clock
        self.keys = PoolKeys(key)
        self.metrics = PoolMetrics()
        self.metrics.budget_bytes.set(config.budget_bytes)
        self.breaker = CircuitBreaker(config.breaker_cooldown_s, time.monotonic)
        self.tombstones = TombstoneMemory()
        self.decoded = DecodedEntries(config.read_cache_bytes) if config.read_cache_bytes \
            else None
        self._lock = threading.Lock()
        self._leases: dict[tuple[str, EntryName], int] = {}
        self._leased_bytes = 0
        self._read_bytes_per_s: float | None = None
        self._audit = AuditLog(config.audit_log_path, self.metrics.audit_failures)

    @property
    def audit(self) -> AuditLog:
        return self._audit

    def _threshold_over(self, counts: SenderCountStore) -> PublicationThreshold:
        """The publication threshold on this medium's sender marks, behind the breaker."""
        return PublicationThreshold(self.config, self.keys, counts, self.metrics, self.clock,
                                    self._guarded)

    def _guarded(self, op: str, call: Callable[[], Result], default: Result) -> Result:
        """`call()` unless the breaker is open; a medium failure is counted, audited, opens
        the breaker and returns `default`."""
        if not self.breaker.allow():
            self.metrics.breaker_refusals.labels(op=op).inc()
            return default
        try:
            result = call()
        except (MediumError, OSError) as error:
            self.metrics.store_errors.labels(op=op).inc()
            cause = error.__cause__ if error.__cause__ is not None else error
            self._audit.record("fault", reason=f"{op}:{type(cause).__name__}")
            if self.breaker.failed():
                self.metrics.breaker_openings.inc()
            return default
        self.breaker.succeeded()
        return result

    # ---- requests ------------------------------------------------------------------------

    def lookup(self, scope: Scope, owner: str, token_ids: TokenArray, private_mask: MaskArray
               ) -> LookupResult:
        config = self.config
        identity_digest = scope.identity.digest()
        scope_tag = self.keys.scope_tag(identity_digest, scope.domain)
        domain_tag = self.keys.domain_tag(scope.domain)
        num_public = int((~private_mask).sum())
        self.metrics.private_tokens.inc(len(token_ids) - num_public)
        window = config.min_entry_tokens
        if len(token_ids) < window:
            self.metrics.miss_tokens.inc(num_public)
            return LookupResult()
        hashes, is_valid = window_hashes(token_ids, private_mask, window, self.keys.hash_base)
        unique = np.unique(hashes[is_valid])
        heads: list[EntryHead] = self._guarded(
            "lookup", lambda: self._candidate_heads(scope, scope_tag, unique), [])
        index = PrefixIndex(window, self.keys.hash_base, config.anchor_stride)
        for head in heads:
            index.add(IndexedSegment(head.name, head.token_ids, identity_digest, domain_tag))
        result = find_matches(token_ids, private_mask, index, identity_digest, domain_tag,
                              lambda part: self.keys.entry_name(scope_tag, part))
        tenant_tag = self.keys.tenant_tag(scope.tenant)
        matches, leases = [], []
        by_name = {head.name: head for head in heads}
        chosen = [(match, by_name[match.entry]) for match in result.matches
                  if not self._slower_than_computing(match, by_name[match.entry])]
        matched_heads = [head for _, head in chosen]
        for (match, head), pinned in zip(chosen, self._lease_all(owner, matched_heads),
                                         strict=True):
            if not pinned:
                continue
            matches.append(match)
            leases.append(Lease(head.name, owner, head.num_tokens, head.head_len))
            self._audit.record("reuse", request_id=owner, entry=head.name,
                               num_tokens=match.length, tenant=tenant_tag)
        hit = sum(match.length for match in matches)
        self.metrics.hit_tokens.inc(hit)
        self.metrics.miss_tokens.inc(num_public - hit)
        self.metrics.hash_collisions.inc(result.num_collisions)
        self.metrics.verification_failures.inc(result.num_verification_failures)
        return LookupResult(matches, leases)

    def _slower_than_computing(self, match: Match, head: EntryHead) -> bool:
        """Would reading the entry take longer than computing the match's tokens? Counted in
        `slow_reads_skipped`; never before a read rate was measured."""
        compute_rate = self.config.recompute_tokens_per_s
        read_rate = self._read_bytes_per_s
        if compute_rate is None or read_rate is None:
            return False
        size = entry_length(self.config, head.head_len, head.num_tokens)
        if size / read_rate <= match.length / compute_rate:
            return False
        self.metrics.slow_reads_skipped.inc()
        return True

    def _candidate_heads(self, scope: Scope, scope_tag: str, hashes: np.ndarray
                         ) -> list[EntryHead]:
        """Authenticated, unvoided heads of the entries the anchors of `hashes` name; cleans
        what it finds broken (one rewrite per anchor)."""
        if hashes.size == 0:
            return []
        found, garbled = self._get_anchors(self.keys.anchor_ids(scope_tag, hashes))
        wanted: dict[EntryName, int] = {}
        records_of: dict[EntryName, list[tuple[bytes, bytes, int]]] = {}
        dropped: dict[bytes, set[bytes]] = {}
        for anchor_id, anchor_blob in found.items():
            usable, refused = unpack_records(anchor_blob, self.config)
            if refused:
                dropped.setdefault(anchor_id, set()).update(refused)
            for name, offset, head_len in usable:
                if name not in wanted and len(wanted) >= MAX_CANDIDATES_PER_LOOKUP:
                    continue
                # The longest: a stale record (an entry published again under its name, with
                # a head of another length) must not hide the entry; the others are dropped.
                wanted[name] = max(head_len, wanted.get(name, head_len))
                records_of.setdefault(name, []).append(
                    (anchor_id, pack_record(name, offset, head_len), head_len))
        names = list(wanted)
        blobs = self._get_heads([(name, wanted[name]) for name in names])
        heads, now = [], self.clock()
        for name, blob in zip(names, blobs, strict=True):
            if blob is None:  # the server evicted it, or it expired: clean the index
                self.metrics.dangling_anchors.inc()
                for anchor_id, record, _ in records_of[name]:
                    dropped.setdefault(anchor_id, set()).add(record)
                continue
            try:
                head = decode_head(self.keys, name, blob, self.config, now)
            except EntryRejected as rejected:
                self._miss(None, name, rejected.reason)
                continue
            for anchor_id, record, head_len in records_of[name]:
                if head_len != head.head_len:  # not what the entry's own head says
                    dropped.setdefault(anchor_id, set()).add(record)
            if (head.identity != scope.identity or head.scope_tag != scope_tag
                    or head.stored_dtype != self.config.kv_storage_dtype):
                self.metrics.metadata_mismatches.inc()
                continue
            heads.append(head)
        heads = self._unvoided(heads)
        num_refused = sum(len(records) for records in dropped.values()) + len(garbled)
        if num_refused:
            self.metrics.refused_records.inc(num_refused)
            self._rewrite_anchors(dropped, garbled)
        return heads

    def _lease_all(self, owner: str, heads: list[EntryHead]) -> list[bool]:
        """Lease each head (one batch in the medium); False where it is gone or failed."""
        if not heads:
            return []
        pinned = self._guarded("lease", lambda: self._pin_all(owner, heads),
                               [False] * len(heads))
        with self._lock:
            for head, ok in zip(heads, pinned, strict=True):
                if ok:
                    key = (owner, head.name)
                    self._leases[key] = self._leases.get(key, 0) + 1
                    self._leased_bytes += self._entry_bytes(head.num_tokens)
            self._update_lease_gauges_locked()
        return pinned

    def read(self, lease: Lease, match: Match) -> SegmentKV | None:
        # NOTE: the size comes from the head the lookup authenticated: a value padded beyond
        # it is refused after reading one byte more than the entry, never read whole.
        size = entry_length(self.config, lease.locator, lease.num_tokens)
        started = time.perf_counter()
        data: bytes | None = self._guarded("read", partial(self._get_entry, lease, size),
                                           _UNAVAILABLE)
        self._measure_read(size, time.perf_counter() - started)
        if data is _UNAVAILABLE:
            return None  # counted as a store error
        if data is None:
            self._miss(lease.owner, lease.entry, "gone")
            return None
        if len(data) != size:
            self._miss(lease.owner, lease.entry, "size")
            return None
        try:
            head, part = decode_part(self.keys, lease.entry, data, self.config, self.clock(),
                                     match.entry_start, match.entry_start + match.length,
                                     self.decoded)
        except EntryRejected as rejected:
            self._miss(lease.owner, lease.entry, rejected.reason)
            return None
        if self._is_voided(head):
            self._miss(lease.owner, lease.entry, "replayed")
            return None
        return part

    def _measure_read(self, num_bytes: int, seconds: float) -> None:
        """Keep a moving average of the store's read rate (bytes/s) for the cost model."""
        rate = num_bytes / max(seconds, 1e-6)
        with self._lock:
            previous = self._read_bytes_per_s
            self._read_bytes_per_s = rate if previous is None else 0.7 * previous + 0.3 * rate

    def release(self, leases: Sequence[Lease]) -> None:
        for lease in leases:
            with self._lock:
                key = (lease.owner, lease.entry)
                held = self._leases.get(key, 0)
                if held == 0:
                    continue  # released already
                if held == 1:
                    del self._leases[key]
                else:
                    self._leases[key] = held - 1
                self._leased_bytes -= self._entry_bytes(lease.num_tokens)
                self._update_lease_gauges_locked()
            if held == 1:  # the owner's last hold on it
                self._guarded("release", partial(self._unpin, lease.owner, lease.entry,
                                                 lease.num_tokens), None)

    def stage(self, scope: Scope, staging_id: str, segment: SegmentData) -> StagedSegment:
        valid = validate_segment(self.config, segment)
        scope_tag = self.keys.scope_tag(scope.identity.digest(), scope.domain)
        name = self.keys.entry_name(scope_tag, valid.token_ids)
        if self.breaker.is_cooling_down:  # not stored anyway: spare the encoding
            self.metrics.breaker_refusals.labels(op="stage").inc()
            return StagedSegment(staging_id, name, valid.num_tokens)
        value, _ = encode_entry(self.keys, name, scope.identity, scope_tag,
                                self.keys.tenant_tag(scope.tenant),
                                self.keys.domain_tag(scope.domain), self.clock(), valid,
                                self.config.kv_storage_dtype)
        self._guarded("stage", lambda: self._put_staged(staging_id, value), None)
        return StagedSegment(staging_id, name, valid.num_tokens)

    def publish(self, scope: Scope, owner: str, staged: Sequence[StagedSegment]
                ) -> list[EntryName]:
        published: list[EntryName] = []
        for handle in staged:
            reason: str | None = self._guarded("publish", partial(self._publish_one, owner,
                                                                  handle), _STORE_ERROR)
            if reason is None:
                published.append(handle.entry)
                continue
            if reason == "duplicate":
                self.metrics.duplicates.inc()
            elif reason.startswith(("quota:", "share:")):  # scope: "tenant", "share:tenant"...
                self.metrics.quota_refusals.labels(scope=reason.removeprefix("quota:")).inc()
            elif reason == "budget":
                self.metrics.backpressure_skips.inc()
            else:
                self.metrics.rejected.labels(reason=reason).inc()
            self._audit.record("skip", request_id=owner, entry=handle.entry,
                               reason=reason)
        return published

    def _publish_one(self, owner: str, handle: StagedSegment) -> str | None:
        value = self._take_staged(handle.staging_id)
        if value is None:
            return "staged_missing"
        try:  # authenticated under the handle's name: the staged tokens are the expected ones
            head = decode_head(self.keys, handle.entry, value, self.config, self.clock())
        except EntryRejected as rejected:
            return f"staged_{rejected.reason}"
        now = self.clock()
        charges = [(quota_counter_name(self.keys, kind, tag, now, self.config), limit)
                   for kind, tag, limit in
                   quota_limits(self.config, head.tenant_tag, head.domain_tag)]
        shares = share_limits(self.config, head.tenant_tag, head.domain_tag)
        reason = self._insert(head, value, self._anchor_records(head), charges, shares)
        if reason is None:
            self.metrics.published.inc()
            self._audit.record("publish", request_id=owner, entry=head.name,
                               num_tokens=head.num_tokens, tenant=head.tenant_tag)
        return reason

    def _anchor_records(self, head: EntryHead) -> list[tuple[bytes, bytes]]:
        window = self.config.min_entry_tokens
        offsets = np.asarray(anchor_offsets(head.num_tokens, window, self.config.anchor_stride),
                             dtype=np.int64)
        hashes, _ = window_hashes(head.token_ids, np.zeros(head.num_tokens, dtype=np.bool_),
                                  window, self.keys.hash_base)
        anchor_ids = self.keys.anchor_ids(head.scope_tag, hashes[offsets])
        return [(anchor_id, pack_record(head.name, int(offset), head.head_len))
                for anchor_id, offset in zip(anchor_ids, offsets.tolist(), strict=True)]

    def discard(self, owner: str, staged: Sequence[StagedSegment], reason: str) -> None:
        self._audit.record("reject", request_id=owner, reason=reason)
        for handle in staged:
            self.metrics.rejected.labels(reason=reason).inc()
            self._audit.record("reject", request_id=owner, entry=handle.entry,
                               reason=reason)
            self._guarded("discard", partial(self._take_staged, handle.staging_id), None)

    @property
    def num_leases(self) -> int:
        with self._lock:
            return sum(self._leases.values())

    @property
    def leased_bytes(self) -> int:
        with self._lock:
            return self._leased_bytes

    def _leased_names(self) -> set[EntryName]:
        with self._lock:
            return {name for _, name in self._leases}

    @property
    def bytes_per_token(self) -> int:
        return self.config.shared_bytes_per_token

    def _entry_bytes(self, num_tokens: int) -> int:
        """What an entry counts against the budget: its K and V as stored (float16: half of
        float32) and its bookkeeping."""
        return num_tokens * self.config.shared_bytes_per_token

    def _update_lease_gauges_locked(self) -> None:
        self.metrics.leases_outstanding.set(sum(self._leases.values()))
        self.metrics.leased_bytes.set(self._leased_bytes)
