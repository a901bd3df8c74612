from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pool_helpers import (
    BYTES_PER_TOKEN,
    ManualClock,
    make_pool,
    name_of,
    names,
    publish,
    scope,
    segment,
)

from cacheprune.pool.memory import MemoryPool

NO_MASK = np.zeros(8, dtype=bool)


def touch(pool, tokens):
    with pool.session("toucher", scope()) as session:
        assert len(session.lookup(tokens, np.zeros(len(tokens), dtype=bool))) == 1


def test_lru_evicts_the_least_recently_used():
    pool = make_pool(budget_tokens=24, eviction_policy="lru")
    a, b, c, d = (segment(100 * k, 8) for k in range(1, 5))
    for tokens in (a, b, c):
        publish(pool, tokens)
    touch(pool, a)
    publish(pool, d)
    expected = [name_of(pool, t) for t in (c, a, d)]
    assert [info.name for info in pool.entry_infos()] == expected


def test_lease_blocks_eviction():
    pool = make_pool(budget_tokens=16, backpressure_utilization=1.0)
    a, b, c = (segment(100 * k, 8) for k in range(1, 4))
    publish(pool, a)
    publish(pool, b)
    with pool.session("reader", scope()) as session:
        session.lookup(a, NO_MASK)
        touch(pool, b)  # a is now least recently used, but leased
        publish(pool, c)
        stored = names(pool)
        assert name_of(pool, a) in stored and name_of(pool, b) not in stored
        assert name_of(pool, c) in stored
    assert pool.bytes_in_use == 16 * BYTES_PER_TOKEN


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["publish", "touch"]), st.integers(0, 7), st.integers(4, 12)),
        max_size=30,
    )
)
def test_contents_follow_a_reference_lru_and_never_exceed_the_budget(operations):
    budget_tokens = 30
    pool = make_pool(budget_tokens=budget_tokens, max_context_tokens=16, eviction_policy="lru")
    reference: OrderedDict[int, int] = OrderedDict()  # segment key -> tokens, LRU first
    lengths: dict[int, int] = {}
    for action, key, length in operations:
        tokens = segment(1000 * (key + 1), lengths.setdefault(key, length))
        if action == "publish":
            publish(pool, tokens)
            if key in reference:
                reference.move_to_end(key)
            else:
                while sum(reference.values()) + len(tokens) > budget_tokens:
                    reference.popitem(last=False)
                reference[key] = len(tokens)
        elif key in reference:
            touch(pool, tokens)
            reference.move_to_end(key)
        assert pool.bytes_in_use <= budget_tokens * BYTES_PER_TOKEN
    expected = [name_of(pool, segment(1000 * (k + 1), lengths[k])) for k in reference]
    assert [info.name for info in pool.entry_infos()] == expected
    assert pool.bytes_in_use == sum(reference.values()) * BYTES_PER_TOKEN


def test_ttl_expiry_removes_entries_and_frees_bytes():
    clock = ManualClock()
    pool = make_pool(budget_tokens=64, clock=clock, ttl_s=10.0)
    publish(pool, segment(100, 8))
    clock.now += 5.0
    publish(pool, segment(200, 8))
    clock.now += 5.0
    assert pool.purge_expired() == 1
    assert [info.name for info in pool.entry_infos()] == [name_of(pool, segment(200, 8))]
    with pool.session("r", scope()) as session:
        assert session.lookup(segment(100, 8), NO_MASK) == []
    assert pool.bytes_in_use == 8 * BYTES_PER_TOKEN


def test_expired_while_leased_is_freed_when_released():
    clock = ManualClock()
    pool = make_pool(budget_tokens=64, clock=clock, ttl_s=10.0)
    publish(pool, segment(100, 8))
    with pool.session("r", scope()) as session:
        session.lookup(segment(100, 8), NO_MASK)
        clock.now += 10.0
        assert pool.purge_expired() == 1
        assert pool.bytes_in_use == 8 * BYTES_PER_TOKEN
    assert pool.bytes_in_use == 0 and pool.num_entries == 0


def test_invalidation_one_predicate_all():
    pool = make_pool(budget_tokens=64)
    for k in range(1, 5):
        publish(pool, segment(100 * k, 8 + k))
    assert pool.invalidate(name_of(pool, segment(100, 9)))
    assert not pool.invalidate(name_of(pool, segment(100, 9)))
    assert pool.invalidate_where(lambda info: info.num_tokens >= 12) == 1
    assert pool.invalidate_all() == 2
    assert pool.num_entries == 0 and pool.bytes_in_use == 0


def test_failing_predicate_leaves_the_pool_intact():
    pool = make_pool(budget_tokens=64)
    publish(pool, segment(100, 8))

    def broken(info):
        raise RuntimeError("predicate bug")

    with pytest.raises(RuntimeError, match="predicate bug"):
        pool.invalidate_where(broken)
    assert pool.num_entries == 1
    assert "cacheprune_pool_invalidation_failures_total 1.0" in pool.metrics_text()


def test_backpressure_skip_never_over_commits():
    pool = make_pool(budget_tokens=16, backpressure_utilization=0.75, backpressure_mode="skip")
    publish(pool, segment(100, 8))
    with pool.session("reader", scope()) as session:
        session.lookup(segment(100, 8), NO_MASK)
        skipped = publish(pool, segment(200, 8))
        assert skipped.published == []
    assert publish(pool, segment(200, 8)).published == [name_of(pool, segment(200, 8))]
    assert "cacheprune_pool_backpressure_skips_total 1.0" in pool.metrics_text()


def test_backpressure_wait_publishes_once_the_lease_is_released():
    pool = make_pool(
        budget_tokens=16, backpressure_utilization=0.75, backpressure_mode="wait",
        backpressure_wait_s=30.0,
    )
    publish(pool, segment(100, 8))
    leased = threading.Event()
    release = threading.Event()

    def reader():
        with pool.session("reader", scope()) as session:
            session.lookup(segment(100, 8), NO_MASK)
            leased.set()
            release.wait()

    thread = threading.Thread(target=reader)
    thread.start()
    leased.wait()
    results = []
    writer = threading.Thread(target=lambda: results.append(publish(pool, segment(200, 8))))
    writer.start()
    release.set()
    thread.join()
    writer.join()
    assert results[0].published == [name_of(pool, segment(200, 8))]
    assert pool.num_leases == 0


def test_backpressure_wait_gives_up_after_its_limit():
    pool = make_pool(
        budget_tokens=16, backpressure_utilization=0.75, backpressure_mode="wait",
        backpressure_wait_s=0.05,
    )
    publish(pool, segment(100, 8))
    with pool.session("reader", scope()) as session:
        session.lookup(segment(100, 8), NO_MASK)
        assert publish(pool, segment(200, 8)).published == []


@pytest.mark.parametrize("second_tokens, first_survives", [(7, True), (8, True), (9, False)])
def test_budget_boundary_one_token_below_exact_and_above(second_tokens, first_survives):
    pool = make_pool(budget_tokens=16, backpressure_utilization=1.0)
    publish(pool, segment(100, 8))
    publish(pool, segment(500, second_tokens))
    assert (name_of(pool, segment(100, 8)) in names(pool)) == first_survives
    expected_tokens = second_tokens + (8 if first_survives else 0)
    assert pool.bytes_in_use == expected_tokens * BYTES_PER_TOKEN


def test_forced_rolling_hash_collision_is_not_served():
    # Base 1000: +1 on the second-to-last window token and -1000 on the last keep the hash.
    config = make_pool(budget_tokens=64).config
    pool = MemoryPool(config, hash_base=1000)
    stored = [5000, 5001, 5002, 5003, 5004, 5005]
    publish(pool, stored)
    probe = [5000, 5001, 5003, 4003, 5004, 5005]
    with pool.session("prober", scope()) as session:
        assert session.lookup(probe, np.zeros(6, dtype=bool)) == []
    assert "cacheprune_pool_hash_collisions_total 1.0" in pool.metrics_text()
