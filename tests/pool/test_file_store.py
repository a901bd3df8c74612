"""The directory pool (`FileKVStore`): prefix lookup at token granularity, publish checks,
budget with leases, TTL, discard, and sharing between processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from pool_helpers import BYTES_PER_TOKEN, MODEL, POLICY, SHAPE, WINDOW, kv_for

from cacheprune.pool import PoolCapacityError, PoolConfig, PrivateTokenError
from cacheprune.pool.errors import InvalidEntryError
from cacheprune.pool.file_store import FileKVStore


def make_store(root, budget_tokens: int = 64, max_context_tokens: int = 16, **overrides):
    config = PoolConfig(kv_shape=SHAPE, budget_bytes=budget_tokens * BYTES_PER_TOKEN,
                        max_context_tokens=max_context_tokens, min_entry_tokens=WINDOW,
                        **overrides)
    return FileKVStore(root, config, MODEL, POLICY)


def put(store: FileKVStore, token_ids, owner: str = "producer"):
    keys, values, _ = kv_for(token_ids)
    store.stage(owner, token_ids, keys, values)
    return store.publish(owner, token_ids, np.zeros(len(token_ids), dtype=bool))


def brute_force_longest(stored: list[list[int]], query: list[int]) -> int:
    best = 0
    for entry in stored:
        length = 0
        while length < min(len(entry), len(query)) and entry[length] == query[length]:
            length += 1
        best = max(best, length)
    return best


def test_round_trip_reads_the_matched_tokens_kv(tmp_path):
    store = make_store(tmp_path)
    tokens = list(range(100, 110))
    assert put(store, tokens) is not None
    query = tokens[:7] + [999, 998]
    hit = store.lookup(query)
    assert hit is not None and hit.num_tokens == 7  # token granularity: not a multiple of 4
    lease = store.lease("reader", hit)
    keys, values = FileKVStore.read(lease, 2, 7)
    expected_keys, expected_values, _ = kv_for(tokens)
    torch.testing.assert_close(keys, expected_keys[:, :, 2:7])
    torch.testing.assert_close(values, expected_values[:, :, 2:7])
    store.release("reader")
    assert store.num_leases() == 0 and store.num_staged() == 0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), min_size=4, max_size=14), min_size=1, max_size=4),
       st.lists(st.integers(0, 3), min_size=0, max_size=16))
def test_lookup_against_brute_force(tmp_path_factory, entries, query):
    store = make_store(tmp_path_factory.mktemp("pool"), budget_tokens=200)
    for i, entry in enumerate(entries):
        put(store, entry, owner=f"p{i}")
    stored = [list(map(int, t)) for t in store.stored_token_ids()]
    best = brute_force_longest(stored, query)
    hit = store.lookup(query)
    if best < WINDOW:
        assert hit is None
        return
    # The deepest index key (a multiple of the window) is always found; past it the entry it
    # names is extended token by token, which may be shorter than another entry's match.
    assert hit is not None
    assert best // WINDOW * WINDOW <= hit.num_tokens <= best
    lease = store.lease("reader", hit)
    assert lease is not None
    entry_tokens = FileKVStore.read(lease, 0, hit.num_tokens)  # readable to the hit's end
    assert entry_tokens[0].shape[2] == hit.num_tokens


def test_private_token_is_never_published(tmp_path):
    store = make_store(tmp_path)
    tokens = list(range(20, 28))
    keys, values, _ = kv_for(tokens)
    store.stage("producer", tokens, keys, values)
    mask = np.zeros(8, dtype=bool)
    mask[5] = True
    with pytest.raises(PrivateTokenError, match="offset 5"):
        store.publish("producer", tokens, mask)
    assert store.stored_token_ids() == [] and store.num_staged() == 0


def test_staged_kv_for_other_tokens_is_refused(tmp_path):
    store = make_store(tmp_path)
    keys, values, _ = kv_for(list(range(8)))
    store.stage("producer", list(range(8)), keys, values)
    with pytest.raises(InvalidEntryError, match="other tokens"):
        store.publish("producer", list(range(1, 9)), np.zeros(8, dtype=bool))
    assert store.stored_token_ids() == []


def test_discard_leaves_nothing(tmp_path):
    store = make_store(tmp_path)
    keys, values, _ = kv_for(list(range(8)))
    store.stage("aborted", list(range(8)), keys, values)
    assert store.num_staged() == 1
    store.discard("aborted")
    assert store.num_staged() == 0 and store.stored_token_ids() == []
    assert store.lookup(list(range(8))) is None


@pytest.mark.parametrize("budget_tokens, ok", [(15, False), (16, True), (17, True)])
def test_budget_must_hold_one_maximum_context(tmp_path, budget_tokens, ok):
    if ok:
        make_store(tmp_path, budget_tokens=budget_tokens, max_context_tokens=16)
    else:
        with pytest.raises(PoolCapacityError, match="max_context_tokens=16"):
            make_store(tmp_path, budget_tokens=budget_tokens, max_context_tokens=16)


def test_lru_eviction_skips_leased_entries_and_never_overcommits(tmp_path):
    store = make_store(tmp_path, budget_tokens=16, max_context_tokens=8)
    first, second, third = ([base + i for i in range(8)] for base in (0, 100, 200))
    put(store, first, "p1")
    put(store, second, "p2")
    hit = store.lookup(first)
    assert hit is not None and store.lease("reader", hit) is not None  # first: leased, recent
    os.utime(store.root / "entries" / hit.entry_name, (1, 1))  # and the oldest by time
    put(store, third, "p3")  # must evict `second`, not the leased `first`
    held = sorted(list(map(int, t)) for t in store.stored_token_ids())
    assert held == [first, third]
    assert store.bytes_in_use() <= 16 * BYTES_PER_TOKEN
    store.lease("reader2", store.lookup(third))
    assert put(store, second, "p4") is None  # every entry leased: skipped, not over-committed
    assert store.bytes_in_use() <= 16 * BYTES_PER_TOKEN and store.num_staged() == 0
    # A leased entry stays readable even once gone from the pool (its lease is a hard link).
    store.release("reader")
    put(store, second, "p5")  # evicts `first` now that it is free
    assert first not in [list(map(int, t)) for t in store.stored_token_ids()]


def test_expired_entries_are_not_served(tmp_path):
    store = make_store(tmp_path, ttl_s=0.2)
    tokens = list(range(8))
    put(store, tokens)
    assert store.lookup(tokens) is not None
    time.sleep(0.3)
    assert store.lookup(tokens) is None
    put(store, list(range(50, 58)))  # a publish sweeps expired entries
    assert [list(map(int, t)) for t in store.stored_token_ids()] == [list(range(50, 58))]


def test_another_policy_never_sees_an_entry(tmp_path):
    store = make_store(tmp_path)
    put(store, list(range(8)))
    other = FileKVStore(tmp_path, store.config, MODEL, "policy-2")
    assert other.lookup(list(range(8))) is None
    assert other.stored_token_ids() == []


def test_entry_published_by_another_process_is_found(tmp_path):
    """The scheduler and worker of vLLM, and other instances, are other processes."""
    code = textwrap.dedent(f"""
        import numpy as np
        from test_file_store import make_store, put
        store = make_store({str(tmp_path)!r})
        assert put(store, list(range(300, 310)), owner="other-process") is not None
    """)
    here = os.path.dirname(os.path.abspath(__file__))
    subprocess.run([sys.executable, "-c", code], check=True,
                   env={**os.environ, "PYTHONPATH": here})
    store = make_store(tmp_path)
    hit = store.lookup(list(range(300, 310)) + [1])
    assert hit is not None and hit.num_tokens == 10
    keys, _ = FileKVStore.read(store.lease("here", hit), 0, 10)
    torch.testing.assert_close(keys, kv_for(list(range(300, 310)))[0])
