"""The shared backends' budget counts K and V as stored: float16 at rest costs half of
float32, so the same budget holds more entries (counted by hand below, not by the pool)."""

from __future__ import annotations

import pytest
from pool_helpers import SHAPE, TEST_POOL_KEY, make_config, publish, segment

from cacheprune.pool import open_pool

# SHAPE: 2 layers x 1 KV head x 4 dims, K and V: 16 elements per token; 13 bytes of token id,
# position and recompute mark beside them.
ELEMENTS_PER_TOKEN = 16
assert ELEMENTS_PER_TOKEN == 2 * SHAPE.num_layers * SHAPE.num_kv_heads * SHAPE.head_dim


@pytest.mark.parametrize(("dtype", "element_bytes", "entries_kept"),
                         [("float16", 2, 3), ("float32", 4, 2)])
def test_a_budget_holds_what_its_stored_bytes_allow(shared_url, dtype, element_bytes,
                                                    entries_kept):
    per_token = ELEMENTS_PER_TOKEN * element_bytes + 13
    budget = 16 * (ELEMENTS_PER_TOKEN * 4 + 13)  # one 16-token context of float32
    config = make_config(16, per_token=budget // 16, kv_storage_dtype=dtype)
    assert config.budget_bytes == budget
    pool = open_pool(shared_url, config, pool_key=TEST_POOL_KEY)
    assert pool.bytes_per_token == per_token
    for first in (100, 200, 300, 400):
        publish(pool, segment(first, 8))
    assert pool.num_entries == entries_kept  # 8-token entries: 360 bytes each in float16
    assert pool.bytes_in_use == entries_kept * 8 * per_token <= budget
    pool.close()


def test_an_entry_the_server_removed_by_itself_leaves_the_account(valkey_url):
    """The server's own eviction (maxmemory) or expiry writes no bookkeeping: the sweep (and a
    publish that needs room) uncounts what is gone, so the pool does not evict for it."""
    from pool_helpers import counter, make_pool, name_of, names, server_client

    pool = make_pool(16, url=valkey_url)
    first, second, third = (segment(k, 8) for k in (100, 200, 300))
    publish(pool, first)
    publish(pool, second)
    client = server_client(valkey_url)
    assert client.delete(f"cp:e:{name_of(pool, first)}") == 1
    pool.purge_expired()
    assert int(client.get("cp:b")) == 8 * pool.bytes_per_token
    publish(pool, third)
    assert names(pool) == {name_of(pool, second), name_of(pool, third)}
    assert counter(pool, "cacheprune_pool_evictions_total") == 0
    pool.close()


def test_concurrent_publishers_never_hold_more_than_the_budget(valkey_url):
    """Six handles (one connection each, as six processes have) publish at the same moments
    into a budget of three entries. The server's own record of every write and delete of an
    entry key (keyspace notifications, in the order the server ran them) is replayed: the
    entries stored at any instant never outnumber what the budget holds. Admission and write
    in two steps let each publisher land an entry past the budget."""
    from pool_helpers import make_pool, most_stored, publish_at_once, server_client

    num_publishers, num_rounds, entry_tokens = 6, 8, 8
    pools = [make_pool(3 * entry_tokens, url=valkey_url) for _ in range(num_publishers)]
    entry_bytes = entry_tokens * pools[0].bytes_per_token
    budget = pools[0].config.budget_bytes
    assert 3 * entry_bytes <= budget < 4 * entry_bytes
    record = publish_at_once(valkey_url, pools, num_rounds, lambda index, step: segment(
        10_000 * (index + 1) + 100 * step, entry_tokens))
    most, stored, num_writes = most_stored(record)
    assert num_writes > 3  # entries were written and evicted throughout
    assert most * entry_bytes <= budget
    assert stored == pools[0].num_entries == 3
    assert int(server_client(valkey_url).get("cp:b")) == stored * entry_bytes
    for pool in pools:
        pool.close()
