"""Restored bytes after erasure or invalidation are refused; erasure reaches expired entries.

The attacker here can write the folder or the server but has no pool key: they save what is
stored, wait for the erasure, and put it back byte for byte."""

from __future__ import annotations

import numpy as np
from pool_helpers import (
    ManualClock,
    counter,
    make_pool,
    overwrite,
    publish,
    scope,
    segment,
    stored_values,
)

NO_MASK = np.zeros(8, dtype=bool)


def hits(pool, tokens, tenant="reader") -> list:
    with pool.session("reader", scope(tenant=tenant)) as session:
        matches = session.lookup(tokens, np.zeros(len(tokens), dtype=bool))
        return [part for part in (session.read(match) for match in matches) if part]


def test_entries_restored_after_erasure_are_refused(shared_url):
    clock = ManualClock()
    pool = make_pool(64, url=shared_url, clock=clock)
    publish(pool, segment(100, 8), in_scope=scope(tenant="victim"))
    saved = stored_values(shared_url)
    assert len(hits(pool, segment(100, 8))) == 1
    clock.now += 1
    assert pool.erase_tenant("victim") == 1
    clock.now += 1
    # Another process of the pool (it never saw the erasure) refuses them too.
    other = make_pool(64, url=shared_url, clock=clock)
    for reader in (pool, other):
        for name, value in saved.items():
            overwrite(shared_url, name, value)  # the genuine, authenticated bytes, put back
        assert hits(reader, segment(100, 8)) == []
        assert counter(reader, "cacheprune_pool_read_misses_total", reason="replayed") >= 1
    clock.now += 1  # the tenant may publish again: what is new is not void
    publish(pool, segment(100, 8), in_scope=scope(tenant="victim"))
    assert len(hits(other, segment(100, 8))) == 1


def test_entry_restored_after_invalidation_is_refused(shared_url):
    clock = ManualClock()
    pool = make_pool(64, url=shared_url, clock=clock)
    publish(pool, segment(100, 8))
    saved = stored_values(shared_url)
    clock.now += 1
    ((name, value),) = saved.items()
    assert pool.invalidate(name)
    overwrite(shared_url, name, value)
    assert hits(pool, segment(100, 8)) == []


def test_erasure_removes_expired_entries_too(shared_url):
    clock = ManualClock()
    pool = make_pool(64, url=shared_url, clock=clock, ttl_s=10.0)
    publish(pool, segment(100, 8), in_scope=scope(tenant="victim"))
    clock.now += 60  # past the TTL; nothing purged it (the server's own PX is 10 s of real time)
    assert pool.erase_tenant("victim") == 1
    assert stored_values(shared_url) == {}


def test_an_entry_published_again_after_invalidation_is_found(shared_url):
    """Its old anchor records name it with the old head's length (the time in the head is
    written with more digits now): they must not hide the new entry."""
    clock = ManualClock()
    pool = make_pool(64, url=shared_url, clock=clock)
    publish(pool, segment(100, 8))
    (name,) = stored_values(shared_url)
    assert pool.invalidate(name)
    clock.now += 1.123456789
    publish(pool, segment(100, 8))
    assert len(hits(pool, segment(100, 8))) == 1


def test_entry_restored_after_eviction_is_refused(shared_url):
    clock = ManualClock()
    pool = make_pool(16, url=shared_url, clock=clock)  # room for two entries of 8 tokens
    publish(pool, segment(100, 8))
    ((name, value),) = stored_values(shared_url).items()
    for first in (200, 300):
        clock.now += 1
        publish(pool, segment(first, 8))
    assert counter(pool, "cacheprune_pool_evictions_total", reason="budget") == 1
    assert name not in stored_values(shared_url)
    overwrite(shared_url, name, value)  # put back before any lookup cleaned its anchors
    other = make_pool(16, url=shared_url, clock=clock)  # never saw the eviction
    assert hits(other, segment(100, 8)) == []
    assert counter(other, "cacheprune_pool_read_misses_total", reason="replayed") == 1
    assert name not in stored_values(shared_url)  # a voided entry is deleted where met
    clock.now += 1  # computed and published again: what is new is not void
    publish(pool, segment(100, 8))
    assert len(hits(other, segment(100, 8))) == 1
