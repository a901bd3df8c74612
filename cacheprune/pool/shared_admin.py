"""Administration of the shared backends: invalidation, erasure (with their tombstones),
inspection; and the check of a head against the tombstones.

Store faults raise in the administration calls (`MediumError`): an operator is asking, not a
request.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cacheprune.pool.codec import MAX_CLOCK_SKEW_S, EntryHead
from cacheprune.pool.decoded import DecodedEntries
from cacheprune.pool.entry import EntryInfo
from cacheprune.pool.shared_medium import MediumError, SharedMedium
from cacheprune.pool.threshold import PublicationThreshold
from cacheprune.pool.tombstones import (
    decode_tombstone,
    encode_tombstone,
    entry_subject,
    tenant_subject,
)
from cacheprune.retriever import EntryName
from cacheprune.tokens import TokenIds


class SharedAdmin(SharedMedium):
    """The administration calls of `PoolStore`, on the medium."""

    threshold: PublicationThreshold  # the backend's, over its own sender-count store
    decoded: DecodedEntries | None  # the backend's decoded entries, emptied by every burial

    def _unvoided(self, heads: list[EntryHead]) -> list[EntryHead]:
        """The heads no tombstone voids (the store's, remembered, or this process's own)."""
        subjects = sorted({tenant_subject(head.tenant_tag) for head in heads}
                          | {entry_subject(head.name) for head in heads})
        for subject, blob in self._get_tombstones(subjects).items() if heads else ():
            until = decode_tombstone(self.keys, subject, blob)
            if until is not None:
                self.tombstones.remember(subject, until)
        kept = []
        for head in heads:
            if self._is_voided(head):  # void for everyone: removed, so it can be published anew
                self._miss(None, head.name, "replayed")
                self._delete(head.name)
            else:
                kept.append(head)
        return kept

    def _is_voided(self, head: EntryHead) -> bool:
        return (self.tombstones.voids(tenant_subject(head.tenant_tag), head.created_at)
                or self.tombstones.voids(entry_subject(head.name), head.created_at))

    def _bury(self, subject: str) -> None:
        """Void `subject`'s entries created until now, in the store and in this process."""
        now = self.clock()
        self.tombstones.remember(subject, now)
        if self.decoded is not None:  # no decoded KV outlives what it came from
            self.decoded.clear()
        self._put_tombstone(subject, encode_tombstone(self.keys, subject, now))

    def _evicted(self, name: EntryName, reason: str) -> None:
        """Account for an entry the budget or a share removed, and void it: bytes of it put
        back later are refused like those of an erased entry (a miss, `replayed`).
        NOTE: a tombstone, although the bytes are the genuine KV of public tokens: otherwise
        whoever can write the store keeps any entry alive past the pool's eviction policy."""
        self._bury(entry_subject(name))
        self.metrics.evictions.labels(reason=reason).inc()
        self._audit.record("evict", entry=name, reason=reason)

    @property
    def _tombstone_ttl_s(self) -> float | None:
        ttl = self.config.ttl_s
        return None if ttl is None else ttl + MAX_CLOCK_SKEW_S

    def invalidate(self, entry: EntryName) -> bool:
        self._bury(entry_subject(entry))
        removed = self._delete(entry)
        if not removed:
            self.metrics.invalidation_failures.inc()
        else:
            self.metrics.evictions.labels(reason="invalidated").inc()
        self._audit.record("invalidate", entry=entry,
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
        """Also removes the tenant's expired entries still stored, and voids every entry of
        the tenant created until now (a tombstone), so bytes put back later are refused."""
        tag = self.keys.tenant_tag(tenant)
        self._bury(tenant_subject(tag))
        victims = [head for head in self._entry_heads(enforce_ttl=False)
                   if head.tenant_tag == tag]
        erased = 0
        for head in victims:
            if self._delete(head.name):
                erased += 1
                self.metrics.evictions.labels(reason="erased").inc()
                self._audit.record("invalidate", entry=head.name, reason="erased",
                                   tenant=tag)
        self._audit.record("erase", tenant=tag, num_tokens=sum(h.num_tokens for h in victims))
        self.threshold.forget_tenant(tenant)
        return erased

    def entry_infos(self) -> list[EntryInfo]:
        return [_info(head) for head in self._entry_heads()]

    def stored_token_ids(self) -> list[TokenIds]:
        return [head.token_ids.astype(np.int64) for head in self._entry_heads()]


def _info(head: EntryHead) -> EntryInfo:
    return EntryInfo(head.name, head.identity.model_id, head.identity.policy_version,
                     head.num_tokens, head.created_at, head.tenant_tag, head.domain_tag)
