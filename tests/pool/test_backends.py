"""The same segment semantics and lifecycle on every backend (memory://, a folder, Valkey)."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pool_helpers import (
    WINDOW,
    ManualClock,
    kv_for,
    make_pool,
    name_of,
    publish,
    scope,
    segment,
    token_bytes,
)

from cacheprune.pool import open_pool
from tests.retriever.reference_matching import naive_best_coverage

NO_MASK = np.zeros(16, dtype=bool)


def lookup_and_read(pool, request, mask=None, in_scope=None):
    """(matches, KV parts) of one committed read-only request."""
    mask = np.zeros(len(request), dtype=bool) if mask is None else mask
    with pool.session("reader", in_scope or scope()) as session:
        matches = session.lookup(request, mask)
        parts = [session.read(match) for match in matches]
        session.commit()
    return matches, parts


def test_segment_anywhere_round_trips_exactly(pool_url):
    pool = make_pool(64, url=pool_url, anchor_stride=2, kv_storage_dtype="float32")
    entry = segment(100, 12)
    publish(pool, entry)
    request = [7, 7, 7] + entry[4:11] + [9]
    matches, parts = lookup_and_read(pool, request)
    assert [(m.request_start, m.length, m.entry_start) for m in matches] == [(3, 7, 4)]
    keys, values, positions = kv_for(entry)
    assert torch.equal(parts[0].keys, keys[:, :, 4:11])
    assert torch.equal(parts[0].values, values[:, :, 4:11])
    assert parts[0].positions.tolist() == positions[4:11].tolist()
    assert pool.num_leases == 0 and pool.leased_bytes == 0


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2**32 - 1))
def test_coverage_equals_brute_force(pool_url, seed):
    rng = np.random.default_rng(seed)
    pool = make_pool(400, max_context_tokens=40, url=pool_url, anchor_stride=3, ttl_s=None)
    for number in pool.entry_infos():
        pool.invalidate(number.name)  # hypothesis reuses the fixture's pool URL
    entries = [rng.integers(0, 4, size=int(rng.integers(WINDOW, 14))).tolist()
               for _ in range(3)]
    for k, entry in enumerate(entries):
        publish(pool, entry, request_id=f"p{k}")
    pieces = [entries[int(rng.integers(0, 3))][int(rng.integers(0, 3)):] for _ in range(3)]
    request = [token for piece in pieces for token in piece + [9]][:40]
    mask = rng.random(len(request)) < 0.1
    matches, parts = lookup_and_read(pool, request, mask)
    stored = [list(map(int, tokens)) for tokens in pool.stored_token_ids()]
    covered = sum(match.length for match in matches)
    assert covered == naive_best_coverage(request, mask.tolist(), stored, WINDOW, 3)
    for match, part in zip(matches, parts, strict=True):
        assert part is not None
        # kv_for encodes each token id in its keys: the KV read is the KV of these tokens.
        ids = part.keys[0, 0, :, 0].round().to(torch.int64).tolist()
        assert ids == request[match.request_start : match.request_end]


@pytest.mark.parametrize("failure", [RuntimeError, KeyboardInterrupt])
def test_every_exit_releases_leases_and_publishes_nothing(pool_url, failure):
    pool = make_pool(64, url=pool_url)
    publish(pool, segment(100, 8))
    with pytest.raises(failure):
        with pool.session("victim", scope()) as session:
            assert len(session.lookup(segment(100, 8), NO_MASK[:8])) == 1
            keys, values, positions = kv_for(segment(500, 8))
            session.stage(segment(500, 8), keys, values, positions, NO_MASK[:8], NO_MASK[:8])
            assert pool.num_leases == 1
            raise failure()
    assert pool.num_leases == 0 and pool.leased_bytes == 0
    assert pool.num_entries == 1 and pool.bytes_in_use == 8 * pool.bytes_per_token


def test_invalidated_between_lookup_and_read_is_a_miss(pool_url):
    pool = make_pool(64, url=pool_url)
    publish(pool, segment(100, 8))
    with pool.session("reader", scope()) as session:
        (match,) = session.lookup(segment(100, 8), NO_MASK[:8])
        assert pool.invalidate(match.entry)
        assert session.read(match) is None
    assert pool.num_leases == 0 and pool.num_entries == 0
    assert 'cacheprune_pool_read_misses_total{reason=' in pool.metrics_text()


def test_expired_between_lookup_and_read_is_a_miss(pool_url):
    clock = ManualClock()
    pool = make_pool(64, url=pool_url, clock=clock, ttl_s=10.0)
    publish(pool, segment(100, 8))
    with pool.session("reader", scope()) as session:
        (match,) = session.lookup(segment(100, 8), NO_MASK[:8])
        clock.now += 10.0
        assert session.read(match) is None
    with pool.session("late", scope()) as session:
        assert session.lookup(segment(100, 8), NO_MASK[:8]) == []


class FailingFile(io.StringIO):
    def write(self, text):
        raise OSError(28, "No space left on device")


def test_unwritable_audit_log_keeps_leases_and_gauges_right(pool_url, tmp_path):
    pool = make_pool(64, url=pool_url, audit_log_path=str(tmp_path / "audit.jsonl"))
    publish(pool, segment(100, 8))
    pool.audit.replace_file(FailingFile())
    with pool.session("reader", scope()) as session:
        assert len(session.lookup(segment(100, 8), NO_MASK[:8])) == 1
        assert session.read(session.lookup(segment(100, 8), NO_MASK[:8])[0]) is not None
        keys, values, positions = kv_for(segment(300, 8))
        session.stage(segment(300, 8), keys, values, positions, NO_MASK[:8], NO_MASK[:8])
        session.commit()
    assert pool.num_leases == 0 and pool.leased_bytes == 0
    assert pool.num_entries == 2 and pool.bytes_in_use == 16 * pool.bytes_per_token
    text = pool.metrics_text()
    assert "cacheprune_pool_leases_outstanding 0.0" in text
    assert "cacheprune_pool_audit_failures_total 0.0" not in text


def test_other_identity_finds_nothing(pool_url):
    pool = make_pool(64, url=pool_url)
    publish(pool, segment(100, 8))
    for other in (scope("model-b"), scope(policy_version="policy-2")):
        assert lookup_and_read(pool, segment(100, 8), in_scope=other)[0] == []
    assert len(lookup_and_read(pool, segment(100, 8))[0]) == 1


def test_sharing_domains_keep_entries_apart(pool_url):
    pool = make_pool(64, url=pool_url)
    publish(pool, segment(100, 8), in_scope=scope(tenant="acme-1", domain="acme"))
    assert lookup_and_read(pool, segment(100, 8), in_scope=scope(tenant="acme-2",
                                                                  domain="acme"))[0]
    assert lookup_and_read(pool, segment(100, 8), in_scope=scope(tenant="other"))[0] == []
    assert lookup_and_read(pool, segment(100, 8), in_scope=scope(tenant="x",
                                                                  domain="globex"))[0] == []


def test_erase_tenant_removes_everything_it_published(pool_url):
    pool = make_pool(64, url=pool_url)
    publish(pool, segment(100, 8), in_scope=scope(tenant="alice"))
    publish(pool, segment(200, 8), in_scope=scope(tenant="alice", domain="other"))
    publish(pool, segment(300, 8), in_scope=scope(tenant="bob"))
    assert pool.erase_tenant("alice") == 2
    assert [list(map(int, t)) for t in pool.stored_token_ids()] == [segment(300, 8)]
    assert pool.erase_tenant("alice") == 0


def test_tenant_quota_stops_a_burst_not_the_others(pool_url):
    pool = make_pool(64, url=pool_url, tenant_quota_bytes=16 * token_bytes(pool_url))
    burst = scope(tenant="burst")
    published = [publish(pool, segment(100 * k, 8), f"b{k}", burst).published
                 for k in range(1, 4)]
    assert [len(names) for names in published] == [1, 1, 0]
    assert publish(pool, segment(900, 8), "calm", scope(tenant="calm")).published
    assert 'cacheprune_pool_quota_refusals_total{scope="tenant"} 1.0' in pool.metrics_text()


def test_names_are_keyed(pool_url):
    """Another pool key gives other names: a name cannot be computed from a guessed prompt."""
    pool = make_pool(64, url=pool_url)
    other = open_pool("memory://", pool.config, pool_key="another-key-0123456789abcdef")
    assert name_of(pool, segment(100, 8)) != name_of(other, segment(100, 8))
