"""The medium under the shared backends: bytes in and out by name (a folder, a server).

`SharedPool` (shared.py) keeps the pool's semantics on top of these calls; `FilePool` and
`ValkeyPool` implement them. Each call is one batch where the medium has round trips, and
raises `MediumError` (or `OSError`) when the medium fails; `SharedPool` turns that into a miss.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable

from cacheprune.pool.audit import AuditLog
from cacheprune.pool.codec import EntryHead
from cacheprune.pool.config import PoolConfig
from cacheprune.pool.errors import PoolError
from cacheprune.pool.handles import Lease
from cacheprune.pool.keys import PoolKeys
from cacheprune.pool.metrics import PoolMetrics
from cacheprune.pool.tombstones import TombstoneMemory
from cacheprune.retriever import EntryName

# Anchors that are not a value we could have written (another type, a length that is no
# whole number of records): the lookup counts them and the medium deletes them.
Garbled = list[bytes]


class MediumError(PoolError):
    """The medium (server, disk) failed; the operation is skipped and counted."""


class SharedMedium(abc.ABC):
    """What a shared backend provides; attributes are set by `SharedPool.__init__`."""

    config: PoolConfig
    clock: Callable[[], float]
    keys: PoolKeys
    metrics: PoolMetrics
    tombstones: TombstoneMemory
    _audit: AuditLog

    def _miss(self, owner: str | None, name: EntryName, reason: str) -> None:
        self.metrics.read_misses.labels(reason=reason).inc()
        self._audit.record("miss", request_id=owner, entry=name, reason=reason)

    @abc.abstractmethod
    def _get_anchors(self, anchor_ids: list[bytes]) -> tuple[dict[bytes, bytes], Garbled]:
        """The newest records (at most `MAX_ANCHOR_BYTES`, whole records) of the ids that
        exist, and the ids whose anchor is garbled (one batch)."""

    @abc.abstractmethod
    def _rewrite_anchors(self, dropped: dict[bytes, set[bytes]], garbled: Garbled) -> None:
        """Remove the dropped records from each anchor (one rewrite per anchor, one batch)
        and delete the garbled anchors."""

    @abc.abstractmethod
    def _get_heads(self, wanted: list[tuple[EntryName, int]]) -> list[bytes | None]:
        """The first `head_len` bytes of each named entry (None: no such entry)."""

    @abc.abstractmethod
    def _get_entry(self, lease: Lease, size: int) -> bytes | None:
        """At most `size + 1` bytes of the leased entry (None: gone)."""

    @abc.abstractmethod
    def _get_tombstones(self, subjects: list[str]) -> dict[str, bytes]: ...

    @abc.abstractmethod
    def _put_tombstone(self, subject: str, value: bytes) -> None: ...

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
    def _insert(self, head: EntryHead, value: bytes, anchors: list[tuple[bytes, bytes]],
                charges: list[tuple[str, int]], shares: list[tuple[str, str, int]]
                ) -> str | None:
        """Write the entry if absent (atomically: all its bytes and anchors or nothing),
        charge the rate counters (name, limit), keep the tenant's and domain's shares
        (kind, tag, limit: evicting their own oldest entries first). Returns None when
        published, else why not: "duplicate", "quota:<kind>", "share:<kind>", "budget"."""

    @abc.abstractmethod
    def _entry_heads(self, enforce_ttl: bool = True) -> Iterable[EntryHead]:
        """Authenticated heads of every entry (unreadable ones are skipped)."""

    @abc.abstractmethod
    def _delete(self, name: EntryName) -> bool: ...
