"""A writer of the Valkey server without the pool key: foreign keys, floods, lying records,
padding, keys of another type. Each costs a miss, never an exception or an unbounded read."""

from __future__ import annotations

import os
import struct

from pool_helpers import counter, make_pool, publish, scope, segment, server_client
from test_replay_and_erasure import hits

from cacheprune.pool.anchor_records import RECORD


def sent_bytes(client) -> int:
    return int(client.info("stats")["total_net_output_bytes"])


def test_a_non_utf8_key_breaks_no_administration(valkey_url):
    pool = make_pool(64, url=valkey_url)
    publish(pool, segment(100, 8), in_scope=scope(tenant="victim"))
    server_client(valkey_url).set(b"cp:e:\xff\xfe", b"planted")
    assert pool.num_entries == 1 and len(pool.entry_infos()) == 1
    assert pool.evict(0) == 0
    assert pool.erase_tenant("victim") == 1
    assert pool.num_entries == 0


def test_an_anchor_flood_costs_one_bounded_lookup(valkey_url):
    pool = make_pool(64, url=valkey_url)
    publish(pool, segment(100, 8))
    client = server_client(valkey_url)
    anchors = list(client.scan_iter(match=b"cp:a:*"))
    for key in anchors:  # 5,000 random records behind each genuine one
        client.append(key, os.urandom(5000 * RECORD.size))
    assert len(hits(pool, segment(100, 8))) == 1  # the genuine record is still read first
    # Records past the bound are never parsed; a publish trims the anchor to them.
    assert counter(pool, "cacheprune_pool_dangling_anchors_total") <= 64 * len(anchors)


def test_records_with_a_lying_head_length_are_refused_before_any_large_read(valkey_url):
    pool = make_pool(64, url=valkey_url)
    publish(pool, segment(100, 8))
    client = server_client(valkey_url)
    (entry_key,) = client.scan_iter(match=b"cp:e:*")
    client.append(entry_key, b"\0" * (20 << 20))  # 20 MiB of padding after a genuine entry
    raw_name = bytes.fromhex(entry_key[5:].decode())
    for key in client.scan_iter(match=b"cp:a:*"):
        # Put the lie first: head_len 0 asked GETRANGE 0 -1, the whole value.
        client.set(key, struct.pack("<32sII", raw_name, 0, 0) + client.get(key))
    before = sent_bytes(client)
    assert hits(pool, segment(100, 8)) == []  # found, refused at read: padded beyond its head
    assert sent_bytes(client) - before < 1 << 20  # neither the padding nor whole entries sent
    assert counter(pool, "cacheprune_pool_refused_anchor_records_total") >= 1
    assert counter(pool, "cacheprune_pool_read_misses_total", reason="size") == 1


def test_keys_of_another_type_are_misses_not_faults(valkey_url):
    pool = make_pool(64, url=valkey_url)
    publish(pool, segment(100, 8))
    publish(pool, segment(300, 8), "second")
    client = server_client(valkey_url)
    for key in client.scan_iter(match=b"cp:a:*"):
        client.delete(key)
        client.rpush(key, b"x")  # every anchor of both entries is now a LIST
        break
    assert len(hits(pool, segment(100, 8))) + len(hits(pool, segment(300, 8))) >= 1
    (entry_key, _) = sorted(client.scan_iter(match=b"cp:e:*"))
    client.delete(entry_key)
    client.rpush(entry_key, b"x")
    hits(pool, segment(100, 8))
    hits(pool, segment(300, 8))
    assert counter(pool, "cacheprune_pool_store_errors_total") == 0
    assert not pool.breaker.is_open


def test_quota_counters_preset_for_future_windows_are_ignored(valkey_url):
    from pool_helpers import ManualClock, token_bytes

    clock = ManualClock()
    pool = make_pool(64, url=valkey_url, clock=clock,
                     tenant_quota_bytes=16 * token_bytes(valkey_url))
    client = server_client(valkey_url)
    tag = pool.keys.tenant_tag("tenant-a")
    window = int(clock.now // 60)
    for future in range(window, window + 10):  # every name an attacker can derive
        client.set(f"cp:q:tenant.{tag}.{future}", 10**12)
    for key in client.scan_iter(match=b"cp:q:*"):
        client.set(key, 10**12)
    clock.now += 120
    assert publish(pool, segment(100, 8)).published
