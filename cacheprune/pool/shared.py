"""What the file and Valkey backends share: keyed anchors, lookups, reads, staging, publishing.

A subclass supplies the medium (`SharedMedium` methods: bytes in and out by name); this class
keeps the pool's semantics, so both backends find, verify, lease and publish alike — and like
`memory://`, since matching is `cacheprune.retriever.find_matches` over the candidate entries.

Index: for each anchor window of an entry (the retriever's offsets), an anchor record under the
keyed id of (scope, window hash): `entry name (32 bytes) | offset | head length`. A lookup
computes every window hash of the prompt's non-private runs, asks the medium for the records of
their ids in one batch, reads and authenticates the heads of the entries named, and matches on
those. A record whose entry is gone (evicted, expired, invalidated) is a counted miss and is
removed.

NOTE: every medium failure (`MediumError`) inside a request is counted in `store_errors{op}`
and turns into "no sharing" for that step; requests never see it.
"""

from __future__ import annotations

import abc
import struct
import threading
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from cacheprune.pool.audit import AuditLog
from cacheprune.pool.codec import EntryHead, EntryRejected, decode_head, decode_part, encode_entry
from cacheprune.pool.config import PoolConfig
from cacheprune.pool.entry import EntryInfo, SegmentKV, validate_segment
from cacheprune.pool.errors import PoolError
from cacheprune.pool.handles import Lease, LookupResult, Scope, SegmentData, StagedSegment
from cacheprune.pool.keys import PoolKey, PoolKeys
from cacheprune.pool.metrics import PoolMetrics
from cacheprune.pool.quota import quota_limits, window_index
from cacheprune.pool.store import PoolStore
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

RECORD = struct.Struct("<32sII")  # entry name (raw SHA-256), anchor offset, head length


class MediumError(PoolError):
    """The medium (server, disk) failed; the operation is skipped and counted."""


def pack_record(name: EntryName, offset: int, head_len: int) -> bytes:
    return RECORD.pack(bytes.fromhex(name), offset, head_len)


def unpack_records(blob: bytes) -> list[tuple[EntryName, int, int]]:
    """Records of one anchor; a blob that is not a whole number of records is ignored."""
    if len(blob) % RECORD.size:
        return []
    return [(EntryName(raw.hex()), offset, head_len)
            for raw, offset, head_len in RECORD.iter_unpack(blob)]


class SharedPool(PoolStore):
    """Base of the backends shared between processes; see the module docstring."""

    def __init__(self, url: str, config: PoolConfig, key: PoolKey,
                 clock: Callable[[], float]) -> None:
        self.config = config
        self.url = url
        self.clock = clock
        self.keys = PoolKeys(key)
        self.metrics = PoolMetrics()
        self.metrics.budget_bytes.set(config.budget_bytes)
        self._lock = threading.Lock()
        self._leases: dict[tuple[str, EntryName], int] = {}
        self._leased_bytes = 0
        self._audit = AuditLog(config.audit_log_path, self.metrics.audit_failures)

    @property
    def audit(self) -> AuditLog:
        return self._audit

    # ---- the medium ----------------------------------------------------------------------

    @abc.abstractmethod
    def _get_anchors(self, anchor_ids: list[bytes]) -> dict[bytes, bytes]:
        """Record blobs of the ids that exist (one batch)."""

    @abc.abstractmethod
    def _remove_record(self, anchor_id: bytes, record: bytes) -> None: ...

    @abc.abstractmethod
    def _get_heads(self, wanted: list[tuple[EntryName, int]]) -> list[bytes | None]:
        """The first `head_len` bytes of each named entry (None: no such entry)."""

    @abc.abstractmethod
    def _get_entry(self, lease: Lease) -> bytes | None: ...

    @abc.abstractmethod
    def _pin_all(self, owner: str, heads: list[EntryHead]) -> list[bool]:
        """Lease each entry in the medium, in one batch where the medium has round trips
        (False: it is gone)."""

    @abc.abstractmethod
    def _unpin(self, owner: str, name: EntryName, num_tokens: int) -> None: ...

    @abc.abstractmethod
    def _put_staged(self, staging_id: str, value: bytes) -> None: ...

    @abc.abstractmethod
    def _take_staged(self, staging_id: str) -> bytes | None: ...

    @abc.abstractmethod
    def _insert(self, name: EntryName, num_tokens: int, value: bytes,
                anchors: list[tuple[bytes, bytes]], charges: list[tuple[str, int]],
                owner: str) -> str | None:
        """Write the entry if absent (atomically: all its bytes or nothing), charge the quota
        counters (key, limit), append its anchor records. Returns None when published, else
        the reason it was not: "duplicate", "quota:<kind>", "budget"."""

    @abc.abstractmethod
    def _entry_heads(self, enforce_ttl: bool = True) -> Iterable[EntryHead]:
        """Authenticated heads of every entry (unreadable ones are skipped)."""

    @abc.abstractmethod
    def _delete(self, name: EntryName) -> bool: ...

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
        try:
            heads = self._candidate_heads(scope, scope_tag, unique)
        except MediumError:
            self.metrics.store_errors.labels(op="lookup").inc()
            heads = []
        index = PrefixIndex(window, self.keys.hash_base, config.anchor_stride)
        for head in heads:
            index.add(IndexedSegment(head.name, head.token_ids, identity_digest, domain_tag))
        result = find_matches(token_ids, private_mask, index, identity_digest, domain_tag,
                              lambda part: self.keys.entry_name(scope_tag, part))
        tenant_tag = self.keys.tenant_tag(scope.tenant)
        matches, leases = [], []
        by_name = {head.name: head for head in heads}
        matched_heads = [by_name[match.entry_hash] for match in result.matches]
        for match, head, pinned in zip(result.matches, matched_heads,
                                       self._lease_all(owner, matched_heads), strict=True):
            if not pinned:
                continue
            matches.append(match)
            leases.append(Lease(head.name, owner, head.num_tokens, head.head_len))
            self._audit.record("reuse", request_id=owner, segment_hash=head.name,
                               num_tokens=match.length, tenant=tenant_tag)
        hit = sum(match.length for match in matches)
        self.metrics.hit_tokens.inc(hit)
        self.metrics.miss_tokens.inc(num_public - hit)
        self.metrics.hash_collisions.inc(result.num_collisions)
        self.metrics.verification_failures.inc(result.num_verification_failures)
        return LookupResult(matches, leases)

    def _candidate_heads(self, scope: Scope, scope_tag: str, hashes: np.ndarray
                         ) -> list[EntryHead]:
        if hashes.size == 0:
            return []
        anchor_ids = self.keys.anchor_ids(scope_tag, hashes)
        wanted: dict[EntryName, int] = {}
        records_of: dict[EntryName, list[tuple[bytes, bytes]]] = {}
        for anchor_id, records in self._get_anchors(anchor_ids).items():
            for name, offset, head_len in unpack_records(records):
                wanted[name] = head_len
                records_of.setdefault(name, []).append(
                    (anchor_id, pack_record(name, offset, head_len)))
        names = list(wanted)
        blobs = self._get_heads([(name, wanted[name]) for name in names])
        heads, now = [], self.clock()
        for name, blob in zip(names, blobs, strict=True):
            if blob is None:  # the server evicted it, or it expired: clean the index
                self.metrics.dangling_anchors.inc()
                for anchor_id, record in records_of[name]:
                    self._remove_record(anchor_id, record)
                continue
            try:
                head = decode_head(self.keys, name, blob, self.config, now)
            except EntryRejected as rejected:
                self._miss(None, name, rejected.reason)
                continue
            if head.identity != scope.identity or head.scope_tag != scope_tag:
                self.metrics.metadata_mismatches.inc()
                continue
            heads.append(head)
        return heads

    def _lease_all(self, owner: str, heads: list[EntryHead]) -> list[bool]:
        """Lease each head (one batch in the medium); False where it is gone or failed."""
        if not heads:
            return []
        try:
            pinned = self._pin_all(owner, heads)
        except MediumError:
            self.metrics.store_errors.labels(op="lease").inc()
            return [False] * len(heads)
        with self._lock:
            for head, ok in zip(heads, pinned, strict=True):
                if ok:
                    key = (owner, head.name)
                    self._leases[key] = self._leases.get(key, 0) + 1
                    self._leased_bytes += self._entry_bytes(head.num_tokens)
            self._update_lease_gauges_locked()
        return pinned

    def read(self, lease: Lease, match: Match) -> SegmentKV | None:
        try:
            data = self._get_entry(lease)
        except MediumError:
            self.metrics.store_errors.labels(op="read").inc()
            return None
        if data is None:
            self._miss(lease.owner, lease.entry, "gone")
            return None
        try:
            _, part = decode_part(self.keys, lease.entry, data, self.config, self.clock(),
                                  match.entry_start, match.entry_start + match.length)
        except EntryRejected as rejected:
            self._miss(lease.owner, lease.entry, rejected.reason)
            return None
        return part

    def _miss(self, owner: str | None, name: EntryName, reason: str) -> None:
        self.metrics.read_misses.labels(reason=reason).inc()
        self._audit.record("miss", request_id=owner, segment_hash=name, reason=reason)

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
            if held > 1:
                continue  # the owner still holds it through another match
            try:
                self._unpin(lease.owner, lease.entry, lease.num_tokens)
            except MediumError:
                self.metrics.store_errors.labels(op="release").inc()

    def stage(self, scope: Scope, staging_id: str, segment: SegmentData) -> StagedSegment:
        valid = validate_segment(self.config, segment)
        scope_tag = self.keys.scope_tag(scope.identity.digest(), scope.domain)
        name = self.keys.entry_name(scope_tag, valid.token_ids)
        value, _ = encode_entry(self.keys, name, scope.identity, scope_tag,
                                self.keys.tenant_tag(scope.tenant),
                                self.keys.domain_tag(scope.domain), self.clock(), valid)
        try:
            self._put_staged(staging_id, value)
        except MediumError:
            self.metrics.store_errors.labels(op="stage").inc()
        return StagedSegment(staging_id, name, valid.num_tokens)

    def publish(self, scope: Scope, owner: str, staged: Sequence[StagedSegment]
                ) -> list[EntryName]:
        published = []
        for handle in staged:
            try:
                reason = self._publish_one(owner, handle)
            except MediumError:
                self.metrics.store_errors.labels(op="publish").inc()
                reason = "store_error"
            if reason is None:
                published.append(handle.entry)
                continue
            if reason == "duplicate":
                self.metrics.duplicates.inc()
            elif reason.startswith("quota:"):
                self.metrics.quota_refusals.labels(scope=reason[6:]).inc()
            elif reason == "budget":
                self.metrics.backpressure_skips.inc()
            else:
                self.metrics.rejected.labels(reason=reason).inc()
            self._audit.record("skip", request_id=owner, segment_hash=handle.entry,
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
        charges = [(f"{kind}.{tag}.{window_index(self.clock(), self.config.quota_window_s)}",
                    limit) for kind, tag, limit in
                   quota_limits(self.config, head.tenant_tag, head.domain_tag)]
        reason = self._insert(head.name, head.num_tokens, value,
                              self._anchor_records(head), charges, owner)
        if reason is None:
            self.metrics.published.inc()
            self._audit.record("publish", request_id=owner, segment_hash=head.name,
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
            self._audit.record("reject", request_id=owner, segment_hash=handle.entry,
                               reason=reason)
            try:
                self._take_staged(handle.staging_id)
            except MediumError:
                self.metrics.store_errors.labels(op="discard").inc()

    # ---- administration ------------------------------------------------------------------

    def invalidate(self, entry: EntryName) -> bool:
        removed = self._delete(entry)
        if not removed:
            self.metrics.invalidation_failures.inc()
        else:
            self.metrics.evictions.labels(reason="invalidated").inc()
        self._audit.record("invalidate", segment_hash=entry,
                           reason="invalidated" if removed else "unknown")
        return removed

    def invalidate_where(self, predicate: Callable[[EntryInfo], bool]) -> int:
        try:
            victims = [head.name for head in self._entry_heads() if predicate(_info(head))]
        except MediumError:
            self.metrics.invalidation_failures.inc()
            raise
        except Exception:
            self.metrics.invalidation_failures.inc()
            self._audit.record("invalidate", reason="predicate_failed")
            raise
        return sum(self.invalidate(name) for name in victims)

    def erase_tenant(self, tenant: str) -> int:
        tag = self.keys.tenant_tag(tenant)
        victims = [head for head in self._entry_heads() if head.tenant_tag == tag]
        erased = 0
        for head in victims:
            if self._delete(head.name):
                erased += 1
                self.metrics.evictions.labels(reason="erased").inc()
                self._audit.record("invalidate", segment_hash=head.name, reason="erased",
                                   tenant=tag)
        self._audit.record("erase", tenant=tag, num_tokens=sum(h.num_tokens for h in victims))
        return erased

    # ---- inspection ----------------------------------------------------------------------

    def entry_infos(self) -> list[EntryInfo]:
        return [_info(head) for head in self._entry_heads()]

    def stored_token_ids(self) -> list[TokenArray]:
        return [head.token_ids.copy() for head in self._entry_heads()]

    @property
    def num_leases(self) -> int:
        with self._lock:
            return sum(self._leases.values())

    @property
    def leased_bytes(self) -> int:
        with self._lock:
            return self._leased_bytes

    def _entry_bytes(self, num_tokens: int) -> int:
        return num_tokens * self.config.kv_shape.entry_bytes_per_token

    def _update_lease_gauges_locked(self) -> None:
        self.metrics.leases_outstanding.set(sum(self._leases.values()))
        self.metrics.leased_bytes.set(self._leased_bytes)


def _info(head: EntryHead) -> EntryInfo:
    return EntryInfo(head.name, head.identity.model_id, head.identity.policy_version,
                     head.num_tokens, head.created_at, head.tenant_tag, head.domain_tag)
