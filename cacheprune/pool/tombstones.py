"""Tombstones: what makes erasure and invalidation stick on a store others can write.

Whoever can write the server or the folder can save an entry's bytes and put them back after
the tenant was erased; the bytes are still authenticated. So erasure writes, under the pool
key, "entries of tenant T created at or before time t are void" (`tenant-<tag>`), and
invalidation and eviction "this entry created at or before t is void" (`entry-<name>`). A
reader refuses a head that a tombstone voids (a miss, reason `replayed`).

A tombstone lives as long as an entry can (the TTL plus the clock skew allowed): by then every
entry it voids has expired anyway. Each process also remembers the tombstones it met, so
deleting one from the store does not revive entries for a process that has seen it.
NOTE: eviction writes one too (shared_admin.py, `_evicted`): a restored evicted entry is the
genuine KV of public tokens, but accepting it would let whoever can write the store overrule
the pool's budget and eviction policy. The same tokens published again after the eviction get
a later `created_at` and are not void.
"""

from __future__ import annotations

import struct
import threading

from cacheprune.pool.keys import TAG_BYTES, PoolKeys

_TIME = struct.Struct("<d")
TOMBSTONE_BYTES = _TIME.size + TAG_BYTES


def tenant_subject(tenant_tag: str) -> str:
    return f"tenant-{tenant_tag}"


def entry_subject(name: str) -> str:
    return f"entry-{name}"


def encode_tombstone(keys: PoolKeys, subject: str, voided_until: float) -> bytes:
    value = _TIME.pack(voided_until)
    return value + keys.tag(b"tombstone", subject.encode(), value)


def decode_tombstone(keys: PoolKeys, subject: str, blob: bytes) -> float | None:
    """The time up to which `subject`'s entries are void; None for bytes not ours."""
    if len(blob) != TOMBSTONE_BYTES:
        return None
    value, tag = blob[: _TIME.size], blob[_TIME.size :]
    if not keys.check_tag(tag, b"tombstone", subject.encode(), value):
        return None
    return float(_TIME.unpack(value)[0])


class TombstoneMemory:
    """The latest void time of each subject this process met (thread-safe)."""

    __slots__ = ("_lock", "_until")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._until: dict[str, float] = {}

    def remember(self, subject: str, voided_until: float) -> None:
        with self._lock:
            self._until[subject] = max(voided_until, self._until.get(subject, voided_until))

    def voids(self, subject: str, created_at: float) -> bool:
        with self._lock:
            until = self._until.get(subject)
        return until is not None and created_at <= until

    def forget_older_than(self, horizon: float) -> None:
        with self._lock:
            self._until = {s: t for s, t in self._until.items() if t >= horizon}
