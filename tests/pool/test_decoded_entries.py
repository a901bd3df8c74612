"""The shared backends' decoded entries (cacheprune/pool/decoded.py): an entry is decrypted
once per process and later reads of the same bytes come from the cache; a hit never serves
bytes the first read did not verify, a new head misses, and burials empty it."""

from __future__ import annotations

import torch
from pool_helpers import (
    ManualClock,
    kv_for,
    make_pool,
    name_of,
    overwrite,
    publish,
    scope,
    segment,
    stored_values,
)
from test_replay_and_erasure import hits

from cacheprune.pool.codec import GCM_TAG_BYTES
from cacheprune.pool.decoded import DecodedEntries


def test_a_second_read_comes_decoded_and_equal(shared_url):
    pool = make_pool(64, url=shared_url, kv_storage_dtype="float32")
    tokens = segment(100, 8)
    publish(pool, tokens)
    (first,) = hits(pool, tokens)
    assert len(pool.decoded) == 1
    (second,) = hits(pool, tokens)
    assert len(pool.decoded) == 1
    keys, values, _ = kv_for(tokens)
    for part in (first, second):
        assert torch.equal(part.keys, keys) and torch.equal(part.values, values)


def test_a_hit_never_serves_bytes_it_did_not_verify(shared_url):
    """KV bytes changed in the store behind an entry already read: the cached read serves
    what was verified; without the cache the same bytes are refused."""
    cached = make_pool(64, url=shared_url, kv_storage_dtype="float32")
    uncached = make_pool(64, url=shared_url, kv_storage_dtype="float32", read_cache_bytes=0)
    tokens = segment(200, 8)
    publish(cached, tokens)
    assert len(hits(cached, tokens)) == 1
    name = name_of(cached, tokens)
    value = bytearray(stored_values(shared_url)[name])
    value[-GCM_TAG_BYTES - 5] ^= 0xFF  # a KV byte (the tag and nonce unchanged)
    overwrite(shared_url, name, bytes(value))
    (served,) = hits(cached, tokens)
    keys, _, _ = kv_for(tokens)
    assert torch.equal(served.keys, keys)
    assert hits(uncached, tokens) == []


def test_a_new_head_misses_and_burials_empty_it(shared_url):
    clock = ManualClock()
    pool = make_pool(64, url=shared_url, clock=clock)
    tokens = segment(300, 8)
    publish(pool, tokens, in_scope=scope(tenant="victim"))
    assert len(hits(pool, tokens)) == 1 and len(pool.decoded) == 1
    clock.now += 1
    assert pool.invalidate(name_of(pool, tokens, scope(tenant="victim")))
    assert len(pool.decoded) == 0
    clock.now += 1
    publish(pool, tokens, in_scope=scope(tenant="victim"))  # a new head (a later time)
    assert len(hits(pool, tokens)) == 1 and len(pool.decoded) == 1
    clock.now += 1
    assert pool.erase_tenant("victim") == 1
    assert len(pool.decoded) == 0 and hits(pool, tokens) == []


def test_the_cache_keeps_to_its_bytes_newest_first():
    cache = DecodedEntries(max_bytes=3 * 400)
    tensors = {name: torch.zeros(100) for name in "abcd"}  # 400 bytes each
    for name in "abc":
        cache.put((name, b"", b"", b""), tensors[name])
    assert cache.get(("a", b"", b"", b"")) is tensors["a"]  # a is now the newest
    cache.put(("d", b"", b"", b""), tensors["d"])
    assert cache.get(("b", b"", b"", b"")) is None  # the least recently used went
    assert {n for n in "acd" if cache.get((n, b"", b"", b"")) is not None} == set("acd")
    assert cache.num_bytes == 1200
    cache.put(("huge", b"", b"", b""), torch.zeros(1000))  # larger than the whole cache
    assert len(cache) == 3
    cache.clear()
    assert len(cache) == 0 and cache.num_bytes == 0
