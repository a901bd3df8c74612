"""A real Valkey server stopped mid-request, and evicting on its own under maxmemory."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import torch
from pool_helpers import (
    TEST_POOL_KEY,
    counter,
    kv_for,
    make_pool,
    publish,
    scope,
    segment,
    server_client,
)

from cacheprune.pool import EntryIdentity, KVShape, PoolConfig, Scope, open_pool
from cacheprune.pool.local_valkey import LocalValkey

NO_MASK = np.zeros(8, dtype=bool)


def test_server_stopped_mid_request_serves_without_sharing_then_resumes(tmp_path):
    server = LocalValkey(tmp_path / "valkey")
    server.start()
    try:
        pool = make_pool(64, url=server.url, breaker_cooldown_s=0.2)
        publish(pool, segment(100, 8))
        with pool.session("caught", scope()) as session:
            (match,) = session.lookup(segment(100, 8), NO_MASK)
            server.stop()  # the server goes away between lookup and read
            assert session.read(match) is None
            assert session.lookup(segment(100, 8), NO_MASK) == []
            keys, values, positions = kv_for(segment(300, 8))
            session.stage(segment(300, 8), keys, values, positions, NO_MASK, NO_MASK)
            session.commit()
        assert session.published == []  # dropped, not raised
        assert pool.num_leases == 0 and pool.leased_bytes == 0
        # One call failed and opened the breaker; the later ones were not tried.
        assert counter(pool, "cacheprune_pool_store_errors_total") == 1
        assert counter(pool, "cacheprune_pool_breaker_refusals_total") >= 2
        server.start()  # back, empty (no persistence): sharing resumes after the cooldown
        time.sleep(0.3)
        assert publish(pool, segment(300, 8)).published
        with pool.session("after", scope()) as session:
            (match,) = session.lookup(segment(300, 8), NO_MASK)
            assert session.read(match) is not None
    finally:
        server.stop()


def test_entries_evicted_by_the_server_leave_no_dangling_index(tmp_path):
    shape = KVShape(num_layers=2, num_kv_heads=2, head_dim=256)  # 8 KiB per token
    config = PoolConfig(kv_shape=shape, budget_bytes=64 * shape.entry_bytes_per_token,
                        max_context_tokens=64, min_entry_tokens=8, anchor_stride=None,
                        ttl_s=3600.0,
                        kv_storage_dtype="float32")
    who = Scope(EntryIdentity.for_shape("model-a", "policy-1", shape), "tenant-a")
    with LocalValkey(tmp_path / "valkey", maxmemory="6mb", policy="volatile-lru") as server:
        pool = open_pool(server.url, config, pool_key=TEST_POOL_KEY)
        documents = [segment(1000 * k, 64) for k in range(1, 16)]  # 15 x 512 KiB > 6 MiB
        kv = torch.ones(2, 2, 64, 256)
        for number, tokens in enumerate(documents):
            with pool.session(f"p{number}", who) as session:
                flags = np.zeros(64, dtype=bool)
                session.stage(tokens, kv, kv, np.arange(64), flags, flags)
                session.commit()
        stored = {tuple(map(int, t)) for t in pool.stored_token_ids()}
        assert 0 < len(stored) < len(documents)  # the server evicted some on its own
        found = []
        for number, tokens in enumerate(documents):
            with pool.session(f"r{number}", who) as session:
                matches = session.lookup(tokens, np.zeros(64, dtype=bool))
                found.append(bool(matches) and session.read(matches[0]) is not None)
        assert {tuple(t) for t, hit in zip(documents, found, strict=True) if hit} == stored
        dangling = counter(pool, "cacheprune_pool_dangling_anchors_total")
        assert dangling == len(documents) - len(stored)
        for number, tokens in enumerate(documents):  # cleaned: not met a second time
            with pool.session(f"again{number}", who) as session:
                session.lookup(tokens, np.zeros(64, dtype=bool))
        assert counter(pool, "cacheprune_pool_dangling_anchors_total") == dangling
        pool.purge_expired()  # sweeps records no lookup met (none left here)
        assert pool.num_entries == len(stored)


def test_a_paused_server_costs_one_timeout_then_the_breaker_skips_it(valkey_url):
    pool = make_pool(64, url=valkey_url, store_timeout_s=0.2, breaker_cooldown_s=0.5)
    publish(pool, segment(100, 8))
    client = server_client(valkey_url)
    client.execute_command("CLIENT", "PAUSE", 1500, "ALL")
    try:
        for attempt in range(3):  # the first waits one timeout, the others are not tried
            with pool.session(f"paused{attempt}", scope()) as session:
                assert session.lookup(segment(100, 8), NO_MASK) == []
                keys, values, positions = kv_for(segment(300, 8))
                session.stage(segment(300, 8), keys, values, positions, NO_MASK, NO_MASK)
                session.commit()
            assert session.published == []
        assert counter(pool, "cacheprune_pool_store_errors_total") == 1
        assert counter(pool, "cacheprune_pool_breaker_openings_total") == 1
        assert counter(pool, "cacheprune_pool_breaker_refusals_total") >= 5
    finally:
        client.execute_command("CLIENT", "UNPAUSE")
    time.sleep(0.6)  # the cooldown: the next call probes the server, finds it back
    with pool.session("back", scope()) as session:
        assert len(session.lookup(segment(100, 8), NO_MASK)) == 1
    assert not pool.breaker.is_open


def test_a_stopped_server_process_costs_a_bounded_wait(tmp_path):
    server = LocalValkey(tmp_path / "valkey")
    server.start()
    try:
        pool = make_pool(64, url=server.url, store_timeout_s=0.2, breaker_cooldown_s=0.3)
        publish(pool, segment(100, 8))
        pid = server._process.pid
        os.kill(pid, signal.SIGSTOP)
        try:
            with pool.session("stopped", scope()) as session:
                assert session.lookup(segment(100, 8), NO_MASK) == []
            assert pool.breaker.is_open and pool.num_leases == 0
        finally:
            os.kill(pid, signal.SIGCONT)
        time.sleep(0.4)
        with pool.session("resumed", scope()) as session:
            (match,) = session.lookup(segment(100, 8), NO_MASK)
            assert session.read(match) is not None
    finally:
        server.stop()
