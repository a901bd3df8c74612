"""`redis://host:port/db` and `unix:///path/valkey.sock`: the pool on a Valkey or Redis server,
shared by every process and machine that opens it with the same pool key.

Keys (every name is keyed by the pool key; nothing on the server can be computed from a prompt):
    cp:e:<entry name>     the entry: head + KV + tag in ONE value, written with SET NX PX ttl
    cp:a:<anchor id>      anchor records (APPEND of 40-byte records, trimmed), no expiry
    cp:s:<staging id>     a staged entry waiting for publish (expires after STAGING_TTL_S)
    cp:q:<kind.counter>   publish rate counters (INCRBY, keyed names, expiring with the window)
    cp:o:<kind.tag>       a tenant's (domain's) entries, for its share (sorted set by time)
    cp:t:<subject>        tombstones of erasure, invalidation and eviction (tombstones.py)
    cp:r, cp:z, cp:b      the budget: use ranks, stored sizes, their total (valkey_budget.py)
    cp:w:<window id>      the publication threshold's sender marks (threshold.py), with a TTL

Every call waits at most `store_timeout_s` for the server (connect and each reply), with no
retry: a stalled or dead server costs one timeout, then the circuit breaker (breaker.py) stops
calling it until a probe succeeds. A key of the wrong type or size is a miss, never a fault.

The pool keeps `budget_bytes` itself, evicting by the config's policy (eviction.py) with a
tombstone per evicted entry; the server's `maxmemory` (set above the budget, with
`maxmemory-policy volatile-lru`: docs/pool.md) is a safety net. Entries carry the pool's TTL and
anchors none, so the server evicts (and expires) entries only.
The anchor records naming an entry that went away dangle: a lookup that meets one counts it
(`dangling_anchors`) and removes it; `purge_expired` sweeps the ones no lookup meets. Under an
allkeys policy the server may evict an anchor too: its entry is then not found from that window
and, never touched again, is evicted in turn — a miss either way, never wrong KV.

Leases are this process's: the server cannot pin a key against its own eviction, so a leased
entry can still disappear — the read is then a miss and the caller computes those tokens.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from cacheprune.pool.anchor_records import (
    MAX_ANCHOR_BYTES,
    MAX_RECORDS_PER_ANCHOR,
    RECORD,
    pack_record,
    unpack_records,
)
from cacheprune.pool.codec import (
    HEAD_PROBE_BYTES,
    EntryHead,
    EntryRejected,
    decode_head,
    head_length,
)
from cacheprune.pool.config import PoolConfig
from cacheprune.pool.handles import Lease
from cacheprune.pool.keys import PoolKey
from cacheprune.pool.shared import SharedPool
from cacheprune.pool.shared_medium import Garbled, MediumError
from cacheprune.pool.threshold_stores import ValkeySenderCounts
from cacheprune.pool.url import PoolURL
from cacheprune.pool.valkey_budget import Share, ValkeyBudget
from cacheprune.pool.valkey_scripts import ADD_SENDERS, PROBE_ANCHORS, REWRITE_ANCHOR
from cacheprune.retriever import EntryName

logger = logging.getLogger(__name__)
PREFIX = b"cp:"
STAGING_TTL_S = 600
_ENTRY_KEY = re.compile(rb"^cp:e:([0-9a-f]{64})$")
_NOT_A_HEAD = b"\x00"  # what a key of another type reads as: decode refuses it

class ValkeyPool(SharedPool):
    """One process's handle on a pool kept in a Valkey/Redis database."""

    def __init__(self, url: PoolURL, config: PoolConfig, *, key: PoolKey,
                 clock: Callable[[], float]) -> None:
        super().__init__(url.redacted, config, key, clock)
        # NOTE: no retry: redis-py's default retries multiply a dead server's timeout.
        common = dict(db=url.db, password=url.password, socket_timeout=config.store_timeout_s,
                      socket_connect_timeout=config.store_timeout_s, health_check_interval=0,
                      retry=Retry(NoBackoff(), 0))
        if url.scheme == "unix":
            self._client = redis.Redis(unix_socket_path=url.path, **common)  # type: ignore[arg-type]
        else:
            self._client = redis.Redis(host=url.host, port=url.port, **common)  # type: ignore[arg-type]
        self._probe = self._client.register_script(PROBE_ANCHORS)
        self._rewrite = self._client.register_script(REWRITE_ANCHOR)
        self._budget = ValkeyBudget(self._client, config, clock)
        self._ttl_ms = None if config.ttl_s is None else max(1, int(config.ttl_s * 1000))
        self.threshold = self._threshold_over(ValkeySenderCounts(
            self._server, self._client.register_script(ADD_SENDERS), PREFIX + b"w:"))

    @contextmanager
    def _server(self) -> Iterator[redis.Redis]:
        """The client; a server or connection failure becomes a `MediumError`."""
        try:
            yield self._client
        except (redis.RedisError, OSError) as error:
            logger.debug("cacheprune pool %s: %s", self.url, type(error).__name__)
            raise MediumError(f"pool server {self.url}: {type(error).__name__}") from error

    @staticmethod
    def _entry_key(name: EntryName) -> bytes:
        return PREFIX + b"e:" + name.encode()

    # ---- the medium ----------------------------------------------------------------------

    def _get_anchors(self, anchor_ids: list[bytes]) -> tuple[dict[bytes, bytes], Garbled]:
        with self._server():
            found = self._probe(args=[b"".join(anchor_ids), PREFIX + b"a:", MAX_ANCHOR_BYTES])
        anchors, garbled = {}, []
        for i in range(0, len(found), 3):
            anchor_id, size = anchor_ids[int(found[i])], int(found[i + 1])
            if size < 0 or size % RECORD.size:
                garbled.append(anchor_id)
            else:
                anchors[anchor_id] = found[i + 2]
        return anchors, garbled

    def _rewrite_anchors(self, dropped: dict[bytes, set[bytes]], garbled: Garbled) -> None:
        with self._server() as client:
            pipe = client.pipeline(transaction=False)
            for anchor_id, records in dropped.items():
                self._rewrite(keys=[PREFIX + b"a:" + anchor_id], client=pipe,
                              args=[b"".join(records), RECORD.size, MAX_RECORDS_PER_ANCHOR])
            for anchor_id in garbled:
                pipe.delete(PREFIX + b"a:" + anchor_id)
            pipe.execute()

    def _get_heads(self, wanted: list[tuple[EntryName, int]]) -> list[bytes | None]:
        if not wanted:
            return []
        with self._server() as client:
            pipe = client.pipeline(transaction=False)
            for name, head_len in wanted:
                pipe.getrange(self._entry_key(name), 0, head_len - 1)
            blobs = pipe.execute(raise_on_error=False)
        # GETRANGE of a missing key is an empty string.
        return [_NOT_A_HEAD if isinstance(blob, Exception) else blob or None
                for blob in blobs]

    def _get_entry(self, lease: Lease, size: int) -> bytes | None:
        with self._server() as client:
            try:
                value = client.getrange(self._entry_key(lease.entry), 0, size)
            except redis.ResponseError:  # a key of another type: a miss
                return _NOT_A_HEAD
        return value if isinstance(value, bytes) and value else None

    def _get_tombstones(self, subjects: list[str]) -> dict[str, bytes]:
        if not subjects:
            return {}
        with self._server() as client:
            values = client.mget([PREFIX + b"t:" + subject.encode() for subject in subjects])
        return {subject: value for subject, value in zip(subjects, values, strict=True)
                if isinstance(value, bytes)}

    def _put_tombstone(self, subject: str, value: bytes) -> None:
        ttl = self._tombstone_ttl_s
        with self._server() as client:
            client.set(PREFIX + b"t:" + subject.encode(), value,
                       px=None if ttl is None else int(ttl * 1000))

    def _pin_all(self, owner: str, heads: list[EntryHead]) -> list[bool]:
        with self._server() as client:
            pipe = client.pipeline(transaction=False)
            for head in heads:
                pipe.touch(self._entry_key(head.name))  # a use, for the server's LRU
            self._budget.use([head.name for head in heads], pipe)
            return [bool(touched) for touched in pipe.execute()[: len(heads)]]

    def _unpin(self, owner: str, name: EntryName, num_tokens: int) -> None:
        return  # the lease lives in this process only (see the module docstring)

    def _put_staged(self, staging_id: str, value: bytes) -> None:
        with self._server() as client:
            client.set(PREFIX + b"s:" + staging_id.encode(), value, ex=STAGING_TTL_S)

    def _take_staged(self, staging_id: str) -> bytes | None:
        with self._server() as client:
            try:
                value = client.getdel(PREFIX + b"s:" + staging_id.encode())
            except redis.ResponseError:
                return None
        return value if isinstance(value, bytes) else None

    def _insert(self, head: EntryHead, value: bytes, anchors: list[tuple[bytes, bytes]],
                charges: list[tuple[str, int]], shares: list[tuple[str, str, int]]
                ) -> str | None:
        key = self._entry_key(head.name)
        needed = self._entry_bytes(head.num_tokens)
        with self._server() as client:
            if client.exists(key):
                self._budget.use([head.name])  # computed again: a use
                return "duplicate"
            refused = self._charge(client, charges, needed)
            if refused is not None:
                return refused
            refused, evicted, by_share = self._budget.admit(
                head.name, value, needed, self._ttl_ms, leased=self._leased_names(),
                shares=[Share(self._owned_key(kind, tag), kind, limit)
                        for kind, tag, limit in shares],
                member=f"{head.name}:{head.num_tokens}", created_at=head.created_at)
            for name, kind in by_share:
                self._evicted(name, f"share:{kind}")
            for name in evicted:
                self._evicted(name, "budget")
            if refused is not None:  # a share or the budget: leased entries hold the rest
                self._refund(client, [counter for counter, _ in charges], needed)
                return refused
            pipe = client.pipeline(transaction=False)
            for anchor_id, record in anchors:
                pipe.append(PREFIX + b"a:" + anchor_id, record)
            lengths = pipe.execute(raise_on_error=False)
            # Trim anchors grown past twice their bound (rarely: many entries share a window).
            appended = list(zip((anchor_id for anchor_id, _ in anchors), lengths,
                                strict=True))
            long: dict[bytes, set[bytes]] = {
                anchor_id: set() for anchor_id, length in appended
                if isinstance(length, int) and length > 2 * MAX_ANCHOR_BYTES}
            garbled = [anchor_id for anchor_id, length in appended
                       if isinstance(length, Exception)]
        if long or garbled:
            self._rewrite_anchors(long, garbled)
        return None

    @staticmethod
    def _owned_key(kind: str, tag: str) -> bytes:
        return PREFIX + b"o:" + f"{kind}.{tag}".encode()

    def _charge(self, client: redis.Redis, charges: list[tuple[str, int]], num_bytes: int
                ) -> str | None:
        window_s = max(1, int(self.config.quota_window_s))
        charged = []
        for counter, limit in charges:
            key = PREFIX + b"q:" + counter.encode()
            try:
                total = int(client.incrby(key, num_bytes))
            except redis.ResponseError:  # not a counter we wrote: start it again
                client.set(key, num_bytes, ex=2 * window_s)
                total = num_bytes
            client.expire(key, 2 * window_s)
            charged.append(counter)
            if total > limit:  # refuse as a whole: give back what was taken
                self._refund(client, charged, num_bytes)
                return f"quota:{counter.split('.', 1)[0]}"
        return None

    @staticmethod
    def _refund(client: redis.Redis, counters: list[str], num_bytes: int) -> None:
        """Give back a charge of `num_bytes` to each rate counter (a publish refused)."""
        for counter in counters:
            client.decrby(PREFIX + b"q:" + counter.encode(), num_bytes)

    def _entry_names(self) -> list[EntryName]:
        """Names of the keys that are entries we could have written (others are skipped)."""
        with self._server() as client:
            keys = list(client.scan_iter(match=PREFIX + b"e:*", count=1000))
        names = []
        for key in keys:
            matched = _ENTRY_KEY.match(key)
            if matched:
                names.append(EntryName(matched.group(1).decode("ascii")))
        return names

    def _entry_heads(self, enforce_ttl: bool = True) -> Iterable[EntryHead]:
        names = self._entry_names()
        with self._server() as client:
            pipe = client.pipeline(transaction=False)
            for name in names:
                pipe.getrange(self._entry_key(name), 0, HEAD_PROBE_BYTES - 1)
            starts = pipe.execute(raise_on_error=False)
            # The head's length is known once the preamble is: fetch exactly that much.
            pipe = client.pipeline(transaction=False)
            for name, start in zip(names, starts, strict=True):
                start = start if isinstance(start, bytes) else b""
                pipe.getrange(self._entry_key(name), 0, head_length(start) - 1)
            blobs = pipe.execute(raise_on_error=False)
        now = self.clock()
        for name, blob in zip(names, blobs, strict=True):
            if not isinstance(blob, bytes):
                continue
            try:
                yield decode_head(self.keys, name, blob, self.config, now,
                                  enforce_ttl=enforce_ttl)
            except EntryRejected:
                continue

    def _delete(self, name: EntryName) -> bool:
        with self._server():
            return self._budget.forget(name)

    # ---- budget ----------------------------------------------------------------------------

    def evict(self, num_bytes: int) -> int:
        """Delete unleased entries, lowest use rank first, until `num_bytes` are freed."""
        with self._server():
            _, freed, evicted = self._budget.make_room(num_bytes, relative=True,
                                                       leased=self._leased_names())
        for name in evicted:
            self._evicted(name, "budget")
        return freed

    def purge_expired(self) -> int:
        """The server expires entries (PX) and staged values itself; this uncounts them from
        the budget and sweeps the anchor records of entries that are gone (one rewrite per
        anchor). Returns 0 (no entry is removed here)."""
        dropped: dict[bytes, set[bytes]] = {}
        garbled: Garbled = []
        with self._server() as client:
            self._budget.sweep(client)
            for anchor_key in client.scan_iter(match=PREFIX + b"a:*", count=1000):
                anchor_id = anchor_key[len(PREFIX) + 2 :]
                try:
                    blob = client.get(anchor_key)
                    usable, refused = unpack_records(blob if isinstance(blob, bytes) else b"",
                                                     self.config)
                except (redis.ResponseError, ValueError):
                    garbled.append(anchor_id)
                    continue
                pipe = client.pipeline(transaction=False)
                for name, _, _ in usable:
                    pipe.exists(self._entry_key(name))
                gone = {pack_record(name, offset, head_len)
                        for (name, offset, head_len), alive in zip(usable, pipe.execute(),
                                                                   strict=True) if not alive}
                if gone or refused:
                    dropped[anchor_id] = gone | set(refused)
        self._rewrite_anchors(dropped, garbled)
        self.tombstones.forget_older_than(self.clock() - (self._tombstone_ttl_s or float("inf")))
        return 0

    @property
    def num_entries(self) -> int:
        return len(self._entry_names())

    @property
    def bytes_in_use(self) -> int:
        return sum(self._entry_bytes(info.num_tokens) for info in self.entry_infos())

    def close(self) -> None:
        self._client.close()
        self._audit.close()
