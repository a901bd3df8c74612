"""`redis://host:port/db` and `unix:///path/valkey.sock`: the pool on a Valkey or Redis server,
shared by every process and machine that opens it with the same pool key.

Keys (every name is keyed by the pool key; nothing on the server can be computed from a prompt):
    cp:e:<entry name>     the entry: head + KV + tag in ONE value, written with SET NX PX ttl
    cp:a:<anchor id>      anchor records (APPEND of 40-byte records), no expiry
    cp:s:<staging id>     a staged entry waiting for publish (expires after STAGING_TTL_S)
    cp:q:<kind.tag.win>   publish quota counters (INCRBY, expiring with their window)

The server owns memory: set `maxmemory` and `maxmemory-policy volatile-lru` (docs/pool.md).
Entries carry the pool's TTL and anchors none, so the server evicts (and expires) entries only.
The anchor records naming an entry that went away dangle: a lookup that meets one counts it
(`dangling_anchors`) and removes it; `purge_expired` sweeps the ones no lookup meets. Under an
allkeys policy the server may evict an anchor too: its entry is then not found from that window
and, never touched again, is evicted in turn — a miss either way, never wrong KV.

Leases are this process's: the server cannot pin a key against its own eviction, so a leased
entry can still disappear — the read is then a miss and the caller computes those tokens.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

import redis

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
from cacheprune.pool.shared import MediumError, SharedPool, pack_record, unpack_records
from cacheprune.pool.url import PoolURL
from cacheprune.retriever import EntryName

logger = logging.getLogger(__name__)
PREFIX = b"cp:"
STAGING_TTL_S = 600

# One round trip for every window of a prompt: ARGV[1] is the concatenated 16-byte ids.
_PROBE = """
local ids, prefix, out = ARGV[1], ARGV[2], {}
for i = 0, #ids / 16 - 1 do
  local value = redis.call('GET', prefix .. string.sub(ids, i * 16 + 1, i * 16 + 16))
  if value then out[#out + 1] = i; out[#out + 1] = value end
end
return out
"""
# Remove every copy of one record from an anchor, keeping the others and the key's TTL.
_REMOVE_RECORD = """
local value = redis.call('GET', KEYS[1])
if not value then return 0 end
local size, kept = string.len(ARGV[1]), {}
for i = 1, #value, size do
  local record = string.sub(value, i, i + size - 1)
  if record ~= ARGV[1] then kept[#kept + 1] = record end
end
if #kept == 0 then redis.call('DEL', KEYS[1])
else redis.call('SET', KEYS[1], table.concat(kept), 'KEEPTTL') end
return 1
"""


class ValkeyPool(SharedPool):
    """One process's handle on a pool kept in a Valkey/Redis database."""

    def __init__(self, url: PoolURL, config: PoolConfig, *, key: PoolKey,
                 clock: Callable[[], float]) -> None:
        super().__init__(url.redacted, config, key, clock)
        common = dict(db=url.db, password=url.password, socket_timeout=30.0,
                      socket_connect_timeout=2.0, health_check_interval=0)
        if url.scheme == "unix":
            self._client = redis.Redis(unix_socket_path=url.path, **common)  # type: ignore[arg-type]
        else:
            self._client = redis.Redis(host=url.host, port=url.port, **common)  # type: ignore[arg-type]
        self._probe = self._client.register_script(_PROBE)
        self._remove = self._client.register_script(_REMOVE_RECORD)
        self._ttl_ms = None if config.ttl_s is None else max(1, int(config.ttl_s * 1000))

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

    def _get_anchors(self, anchor_ids: list[bytes]) -> dict[bytes, bytes]:
        with self._server():
            found = self._probe(args=[b"".join(anchor_ids), PREFIX + b"a:"])
        return {anchor_ids[int(found[i])]: found[i + 1] for i in range(0, len(found), 2)}

    def _remove_record(self, anchor_id: bytes, record: bytes) -> None:
        try:
            with self._server():
                self._remove(keys=[PREFIX + b"a:" + anchor_id], args=[record])
        except MediumError:
            self.metrics.store_errors.labels(op="clean").inc()

    def _get_heads(self, wanted: list[tuple[EntryName, int]]) -> list[bytes | None]:
        if not wanted:
            return []
        with self._server() as client:
            pipe = client.pipeline(transaction=False)
            for name, head_len in wanted:
                pipe.getrange(self._entry_key(name), 0, head_len - 1)
            blobs = pipe.execute()
        # GETRANGE of a missing key is an empty string.
        return [blob if blob else None for blob in blobs]

    def _get_entry(self, lease: Lease) -> bytes | None:
        with self._server() as client:
            value = client.get(self._entry_key(lease.entry))
        return value if isinstance(value, bytes) else None

    def _pin_all(self, owner: str, heads: list[EntryHead]) -> list[bool]:
        with self._server() as client:
            pipe = client.pipeline(transaction=False)
            for head in heads:
                pipe.touch(self._entry_key(head.name))  # a use, for the server's LRU
            return [bool(touched) for touched in pipe.execute()]

    def _unpin(self, owner: str, name: EntryName, num_tokens: int) -> None:
        return  # the lease lives in this process only (see the module docstring)

    def _put_staged(self, staging_id: str, value: bytes) -> None:
        with self._server() as client:
            client.set(PREFIX + b"s:" + staging_id.encode(), value, ex=STAGING_TTL_S)

    def _take_staged(self, staging_id: str) -> bytes | None:
        with self._server() as client:
            value = client.getdel(PREFIX + b"s:" + staging_id.encode())
        return value if isinstance(value, bytes) else None

    def _insert(self, name: EntryName, num_tokens: int, value: bytes,
                anchors: list[tuple[bytes, bytes]], charges: list[tuple[str, int]],
                owner: str) -> str | None:
        with self._server() as client:
            if client.exists(self._entry_key(name)):
                return "duplicate"
            refused = self._charge(client, charges, self._entry_bytes(num_tokens))
            if refused is not None:
                return refused
            if not client.set(self._entry_key(name), value, nx=True, px=self._ttl_ms):
                return "duplicate"
            pipe = client.pipeline(transaction=False)
            for anchor_id, record in anchors:
                pipe.append(PREFIX + b"a:" + anchor_id, record)
            pipe.execute()
        return None

    def _charge(self, client: redis.Redis, charges: list[tuple[str, int]], num_bytes: int
                ) -> str | None:
        window_s = max(1, int(self.config.quota_window_s))
        charged = []
        for counter, limit in charges:
            key = PREFIX + b"q:" + counter.encode()
            total = int(client.incrby(key, num_bytes))
            client.expire(key, 2 * window_s)
            charged.append(key)
            if total > limit:
                for done in charged:  # refuse as a whole: give back what was taken
                    client.decrby(done, num_bytes)
                return f"quota:{counter.split('.', 1)[0]}"
        return None

    def _entry_names(self) -> list[EntryName]:
        with self._server() as client:
            keys = list(client.scan_iter(match=PREFIX + b"e:*", count=1000))
        return [EntryName(key[len(PREFIX) + 2 :].decode()) for key in keys]

    def _entry_heads(self, enforce_ttl: bool = True) -> Iterable[EntryHead]:
        names = self._entry_names()
        with self._server() as client:
            pipe = client.pipeline(transaction=False)
            for name in names:
                pipe.getrange(self._entry_key(name), 0, HEAD_PROBE_BYTES - 1)
            starts = pipe.execute()
            # The head's length is known once the preamble is: fetch exactly that much.
            pipe = client.pipeline(transaction=False)
            for name, start in zip(names, starts, strict=True):
                pipe.getrange(self._entry_key(name), 0, head_length(start) - 1)
            blobs = pipe.execute()
        now = self.clock()
        for name, blob in zip(names, blobs, strict=True):
            try:
                yield decode_head(self.keys, name, blob, self.config, now,
                                  enforce_ttl=enforce_ttl)
            except EntryRejected:
                continue

    def _delete(self, name: EntryName) -> bool:
        with self._server() as client:
            return bool(client.delete(self._entry_key(name)))

    # ---- budget ----------------------------------------------------------------------------

    def evict(self, num_bytes: int) -> int:
        """Delete unleased entries idle the longest first (OBJECT IDLETIME), until `num_bytes`
        are freed. The server's own maxmemory policy normally does this."""
        with self._lock:
            leased = {name for _, name in self._leases}
        names = [name for name in self._entry_names() if name not in leased]
        with self._server() as client:
            pipe = client.pipeline(transaction=False)
            for name in names:
                pipe.object("idletime", self._entry_key(name))
                pipe.strlen(self._entry_key(name))
            replies = pipe.execute()
            freed = 0
            ranked = sorted(zip(replies[0::2], replies[1::2], names, strict=True),
                            key=lambda item: -(item[0] or 0))
            for _, size, name in ranked:
                if freed >= num_bytes:
                    break
                if client.delete(self._entry_key(name)):
                    freed += int(size)
                    self.metrics.evictions.labels(reason="lru").inc()
                    self._audit.record("evict", segment_hash=name, reason="lru")
        return freed

    def purge_expired(self) -> int:
        """The server expires entries (PX) and staged values itself; this sweeps the anchor
        records of entries that are gone. Returns 0 (no entry is removed here)."""
        with self._server() as client:
            for anchor_key in client.scan_iter(match=PREFIX + b"a:*", count=1000):
                records = client.get(anchor_key)
                if not isinstance(records, bytes):
                    continue
                for name, offset, head_len in unpack_records(records):
                    if not client.exists(self._entry_key(name)):
                        self._remove_record(anchor_key[len(PREFIX) + 2 :],
                                            pack_record(name, offset, head_len))
        return 0

    @property
    def num_entries(self) -> int:
        return len(self._entry_names())

    @property
    def bytes_in_use(self) -> int:
        return sum(info.num_tokens for info in self.entry_infos()) * \
            self.config.kv_shape.entry_bytes_per_token

    def close(self) -> None:
        self._client.close()
        self._audit.close()

