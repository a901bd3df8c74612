"""`file:///dev/shm/cacheprune-<uid>`: the pool in a folder, shared by the processes of one
machine.

    <root>/entries/<name>            one entry: head + KV + tag (codec.py), mode 0600; its mtime
                                     is its use rank (eviction.py), not a time it was written
    <root>/anchors/<anchor id>       40-byte anchor records, appended (anchor_records.py)
    <root>/leases/<owner>~<name>     hard link to a leased entry (eviction skips linked ones)
    <root>/staging/<staging id>      a staged entry waiting for publish
    <root>/quota/<kind.counter>      bytes published in a quota window (keyed names)
    <root>/tombstones/<subject>      erasure and invalidation tombstones (tombstones.py)
    <root>/lock                      flock held while publishing, evicting, cleaning

The folder is checked when opened (file_folder.py): ours, 0700, no links; its files are
handled by file_io.py (regular files only, so a FIFO in place of an entry is a miss; whole
writes by rename; the lock waited for at most `store_timeout_s`: a process holding it costs
one timeout, then the breaker skips the folder). Every name is generated here (hex, or the
caller's checked owner/staging id); nothing read from the folder is ever used as a path.
Lookups and reads take no lock: an entry file appears by one rename and a reader verifies its
tags before using a byte. A disk error (full, read-only) is an `OSError` that `SharedPool`
counts as a fault.

NOTE: a use updates the rank without the lock (a lookup never waits for it): two processes
using one entry at the same moment may count one use, not two.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterable

from cacheprune.pool.anchor_records import MAX_ANCHOR_BYTES, RECORD, without_records
from cacheprune.pool.codec import (
    HEAD_PEEK_BYTES,
    HEAD_PROBE_BYTES,
    EntryHead,
    EntryRejected,
    decode_head,
    head_length,
    peek_tags,
)
from cacheprune.pool.config import PoolConfig
from cacheprune.pool.errors import PoolConfigError
from cacheprune.pool.eviction import next_use_rank
from cacheprune.pool.file_io import FolderFiles
from cacheprune.pool.handles import Lease
from cacheprune.pool.keys import PoolKey
from cacheprune.pool.shared import SharedPool
from cacheprune.pool.shared_medium import Garbled
from cacheprune.pool.threshold_stores import FileSenderCounts
from cacheprune.pool.url import PoolURL
from cacheprune.retriever import EntryName

_NAME = re.compile(r"^[0-9a-f]{64}$")
_OWNER = re.compile(r"^[A-Za-z0-9_.-]{1,120}$")
_SUBJECT = re.compile(r"^(tenant-[0-9a-f]{32}|entry-[0-9a-f]{64})$")
# A lease or staged file older than this belongs to a process that died without cleaning up.
STALE_AFTER_S = 3600.0


def _checked(pattern: re.Pattern[str], text: str, what: str) -> str:
    if not pattern.match(text):
        raise PoolConfigError(f"{what} {text!r} must match {pattern.pattern}")
    return text


class FilePool(SharedPool):
    """One process's handle on a pool folder; any number may open the same folder."""

    def __init__(self, url: PoolURL, config: PoolConfig, *, key: PoolKey,
                 clock: Callable[[], float]) -> None:
        super().__init__(url.redacted, config, key, clock)
        self.root = url.path
        self._files = FolderFiles(url.path, config.store_timeout_s, lambda name: self._miss(
            None, EntryName(name), "not_regular"))
        self._sender_counts = FileSenderCounts(os.path.join(url.path, "senders.sqlite"),
                                               config.store_timeout_s)
        self.threshold = self._threshold_over(self._sender_counts)

    # ---- the medium ----------------------------------------------------------------------

    def _get_anchors(self, anchor_ids: list[bytes]) -> tuple[dict[bytes, bytes], Garbled]:
        found, garbled = {}, []
        for anchor_id in dict.fromkeys(anchor_ids):
            records = self._files.read("anchors", anchor_id.hex(), MAX_ANCHOR_BYTES,
                                       record_size=RECORD.size)
            if records is None or records == b"":
                continue
            if len(records) % RECORD.size:
                garbled.append(anchor_id)
            else:
                found[anchor_id] = records
        return found, garbled

    def _rewrite_anchors(self, dropped: dict[bytes, set[bytes]], garbled: Garbled) -> None:
        with self._files.locked():
            for anchor_id in garbled:
                self._files.unlink("anchors", anchor_id.hex())
            for anchor_id, records in dropped.items():
                kept = without_records(self._files.read("anchors", anchor_id.hex()) or b"", records)
                if kept:
                    self._files.write_new("anchors", anchor_id.hex(), kept)
                else:
                    self._files.unlink("anchors", anchor_id.hex())

    def _get_heads(self, wanted: list[tuple[EntryName, int]]) -> list[bytes | None]:
        return [self._files.read("entries", _checked(_NAME, name, "entry name"), head_len)
                for name, head_len in wanted]

    def _get_entry(self, lease: Lease, size: int) -> bytes | None:
        return self._files.read("leases", self._lease_name(lease.owner, lease.entry), size + 1)

    def _get_tombstones(self, subjects: list[str]) -> dict[str, bytes]:
        found = {}
        for subject in subjects:
            value = self._files.read("tombstones", _checked(_SUBJECT, subject, "tombstone"))
            if value is not None:
                found[subject] = value
        return found

    def _put_tombstone(self, subject: str, value: bytes) -> None:
        self._files.write_new("tombstones", _checked(_SUBJECT, subject, "tombstone"), value)

    @staticmethod
    def _lease_name(owner: str, name: EntryName) -> str:
        return f"{_checked(_OWNER, owner, 'owner')}~{_checked(_NAME, name, 'entry name')}"

    def _pin_all(self, owner: str, heads: list[EntryHead]) -> list[bool]:
        return [self._pin(owner, head.name) for head in heads]

    def _pin(self, owner: str, name: EntryName) -> bool:
        if not self._files.link("entries", name, "leases", self._lease_name(owner, name)):
            return False  # gone (an existing link: this owner leases it already)
        self._use(name)
        return True

    def _use(self, name: EntryName, *, is_new: bool = False) -> None:
        """Move the entry's use rank (its mtime) for a use now."""
        with contextlib.suppress(FileNotFoundError):
            previous = None if is_new else self._files.stat("entries", name).st_mtime_ns / 1e9
            rank = next_use_rank(previous, self.clock(), self.config.eviction_policy,
                                 self.config.eviction_half_life_s)
            self._files.set_mtime_ns("entries", name, int(rank * 1e9))

    def _unpin(self, owner: str, name: EntryName, num_tokens: int) -> None:
        self._files.unlink("leases", self._lease_name(owner, name))

    def _put_staged(self, staging_id: str, value: bytes) -> None:
        self._files.write_new("staging", _checked(_OWNER, staging_id, "staging id"), value)

    def _take_staged(self, staging_id: str) -> bytes | None:
        name = _checked(_OWNER, staging_id, "staging id")
        value = self._files.read("staging", name)
        self._files.unlink("staging", name)
        return value

    def _insert(self, head: EntryHead, value: bytes, anchors: list[tuple[bytes, bytes]],
                charges: list[tuple[str, int]], shares: list[tuple[str, str, int]]
                ) -> str | None:
        name = head.name
        with self._files.locked():
            self._purge_locked()
            if self._files.read("entries", name, HEAD_PROBE_BYTES) is not None:
                self._use(name)  # computed again: a use
                return "duplicate"
            needed = self._entry_bytes(head.num_tokens)
            for kind, tag, limit in shares:
                if not self._make_room_in_share_locked(kind, tag, limit, needed):
                    return f"share:{kind}"
            self._evict_locked(self._bytes_in_use_locked() + needed - self.config.budget_bytes)
            if self._bytes_in_use_locked() + needed > self.config.budget_bytes:
                return "budget"  # leased entries hold the rest
            refused = self._charge_locked(charges, needed)
            if refused is not None:
                return refused
            self._files.write_new("entries", name, value)
            self._use(name, is_new=True)
            try:
                self._append_anchors_locked(anchors)
            except OSError:  # all or nothing: no entry without its anchors
                self._delete_locked(name)
                raise
        return None

    def _append_anchors_locked(self, anchors: list[tuple[bytes, bytes]]) -> None:
        for anchor_id, record in anchors:
            size = self._files.append("anchors", anchor_id.hex(), record)
            if size > 2 * MAX_ANCHOR_BYTES:  # trim to the first records
                kept = without_records(self._files.read("anchors", anchor_id.hex()) or b"",
                                       set())
                self._files.write_new("anchors", anchor_id.hex(), kept)

    def _charge_locked(self, charges: list[tuple[str, int]], num_bytes: int) -> str | None:
        totals = []
        for counter, limit in charges:
            current = self._files.read("quota", counter)
            total = (int(current) if current and current.isdigit() else 0) + num_bytes
            if total > limit:
                return f"quota:{counter.split('.', 1)[0]}"
            totals.append((counter, total))
        for counter, total in totals:
            self._files.write_new("quota", counter, str(total).encode())
        return None

    def _entry_names(self) -> list[EntryName]:
        return [EntryName(name) for name in self._files.listing("entries") if _NAME.match(name)]

    def _entry_heads(self, enforce_ttl: bool = True) -> Iterable[EntryHead]:
        now = self.clock()
        for name in self._entry_names():
            start = self._files.read("entries", name, HEAD_PROBE_BYTES)
            blob = None if start is None else self._files.read("entries", name, head_length(start))
            if blob is None:
                continue
            try:
                yield decode_head(self.keys, name, blob, self.config, now,
                                  enforce_ttl=enforce_ttl)
            except EntryRejected:
                continue

    def _delete(self, name: EntryName) -> bool:
        with self._files.locked():
            return self._delete_locked(name)

    def _delete_locked(self, name: EntryName) -> bool:
        removed = self._files.unlink("entries", name)
        # Leased copies become unreadable at once: their holders read a miss.
        for lease in self._files.listing("leases"):
            if lease.endswith("~" + name):
                self._files.unlink("leases", lease)
        return removed

    # ---- budget, shares, eviction, expiry (under the lock) -------------------------------

    def _stored_locked(self) -> list[tuple[int, EntryName, int, int, str, str]]:
        """(use rank in ns, name, bytes, links, tenant tag, domain tag) of every entry, lowest
        rank first; tags unauthenticated (accounting only)."""
        stored = []
        for name in self._entry_names():
            with contextlib.suppress(FileNotFoundError):
                info = self._files.stat("entries", name)
                peeked = peek_tags(self._files.read("entries", name, HEAD_PEEK_BYTES) or b"")
                num_tokens, tenant, domain = peeked if peeked else (0, "", "")
                stored.append((info.st_mtime_ns, name, self._entry_bytes(num_tokens),
                               info.st_nlink, tenant, domain))
        return sorted(stored)

    def _bytes_in_use_locked(self) -> int:
        return sum(num_bytes for _, _, num_bytes, _, _, _ in self._stored_locked())

    def _make_room_in_share_locked(self, kind: str, tag: str, limit: int, needed: int
                                   ) -> bool:
        """Evict this tenant's (domain's) own unleased entries, lowest use rank first, until
        `needed` more bytes fit in its share; False if they cannot."""
        column = 4 if kind == "tenant" else 5
        owned = [item for item in self._stored_locked() if item[column] == tag]
        usage = sum(item[2] for item in owned)
        for _, name, num_bytes, links, _, _ in owned:
            if usage + needed <= limit:
                break
            if links == 1 and self._delete_locked(name):  # more links: leased
                usage -= num_bytes
                self._evicted(name, f"share:{kind}")
        return usage + needed <= limit

    def _evict_locked(self, num_bytes: int) -> int:
        if num_bytes <= 0:
            return 0
        freed = 0
        for _, name, size, links, _, _ in self._stored_locked():
            if freed >= num_bytes:
                break
            if links == 1 and self._delete_locked(name):  # more links: leased
                freed += size
                self._evicted(name, "budget")
        return freed

    def evict(self, num_bytes: int) -> int:
        with self._files.locked():
            return self._evict_locked(num_bytes)

    def _purge_locked(self) -> int:
        now = self.clock()
        expired = 0
        ttl = self.config.ttl_s
        if ttl is not None:
            for head in list(self._entry_heads(enforce_ttl=False)):
                if head.created_at + ttl <= now and self._delete_locked(head.name):
                    expired += 1
                    self.metrics.evictions.labels(reason="expired").inc()
                    self._audit.record("evict", entry=head.name, reason="expired")
        tombstone_ttl = self._tombstone_ttl_s
        for folder, max_age in (("leases", STALE_AFTER_S), ("staging", STALE_AFTER_S),
                                ("quota", 2 * self.config.quota_window_s),
                                ("tombstones", tombstone_ttl)):
            if max_age is None:
                continue
            for name in self._files.listing(folder):
                with contextlib.suppress(FileNotFoundError):
                    info = self._files.stat(folder, name)
                    # A lease shares its entry's inode, whose mtime is a use rank: its ctime
                    # is the real time of the last link or use.
                    changed = info.st_ctime if folder == "leases" else info.st_mtime
                    if time.time() - changed > max_age:
                        self._files.unlink(folder, name)
        if tombstone_ttl is not None:
            self.tombstones.forget_older_than(now - tombstone_ttl)
        return expired

    def purge_expired(self) -> int:
        with self._files.locked():
            return self._purge_locked()

    @property
    def num_entries(self) -> int:
        return len(self._entry_names())

    @property
    def bytes_in_use(self) -> int:
        return self._bytes_in_use_locked()

    def close(self) -> None:
        self._files.close()
        self._sender_counts.close()
        self._audit.close()
