"""A share caps what one tenant holds at once: a tenant publishing without pause displaces
its own entries, never another tenant's (on every backend)."""

from __future__ import annotations

import pytest
from pool_helpers import counter, make_pool, publish, scope, segment

from cacheprune.pool import PoolConfigError


def tenant_tokens(pool, tenant: str) -> int:
    tag = pool.keys.tenant_tag(tenant)
    return sum(info.num_tokens for info in pool.entry_infos() if info.tenant_tag == tag)


def test_a_tenant_at_its_share_evicts_only_its_own_entries(pool_url):
    pool = make_pool(64, url=pool_url, tenant_share=0.5)
    calm = [segment(5000 + 100 * k, 8) for k in range(3)]
    for k, tokens in enumerate(calm):
        publish(pool, tokens, f"calm{k}", scope(tenant="calm"))
    for k in range(1, 13):  # twelve rounds of a burst, each more than the share allows
        for j in range(4):
            publish(pool, segment(10_000 + 400 * k + 100 * j, 8), f"b{k}.{j}",
                    scope(tenant="burst"))
    assert tenant_tokens(pool, "calm") == 24  # every one of the calm tenant's entries is kept
    assert tenant_tokens(pool, "burst") <= 32  # half of the 64-token budget
    assert counter(pool, "cacheprune_pool_evictions_total", reason="share:tenant") >= 40


def test_a_domain_share_applies_to_all_its_tenants(pool_url):
    pool = make_pool(64, url=pool_url, domain_share=0.25)
    for k in range(6):
        publish(pool, segment(100 * (k + 1), 8), f"d{k}",
                scope(tenant=f"t{k}", domain="busy"))
    publish(pool, segment(9000, 8), "quiet", scope(tenant="q", domain="quiet"))
    infos = pool.entry_infos()
    busy = pool.keys.domain_tag("busy")
    assert sum(i.num_tokens for i in infos if i.domain_tag == busy) <= 16
    assert any(i.domain_tag == pool.keys.domain_tag("quiet") for i in infos)


def test_a_share_out_of_range_is_refused():
    with pytest.raises(PoolConfigError, match="tenant_share must lie in"):
        make_pool(64, tenant_share=1.5)


def test_concurrent_publishers_of_one_tenant_never_hold_more_than_its_share(valkey_url):
    """Six handles publish for one tenant at the same moments, with room in the budget for
    eight entries and in the tenant's share for four. Replaying the server's own record of
    every write and delete, the tenant never held more than its share, and the other tenant's
    entries stayed. Making room in the share apart from the write let each publisher land an
    entry past it."""
    from pool_helpers import most_stored, name_of, publish_at_once, server_client

    num_publishers, num_rounds, entry_tokens = 6, 6, 8
    pools = [make_pool(8 * entry_tokens, url=valkey_url, tenant_share=0.5)
             for _ in range(num_publishers)]
    calm = [segment(200 + 100 * k, entry_tokens) for k in range(2)]
    for k, tokens in enumerate(calm):
        publish(pools[0], tokens, f"calm{k}", scope(tenant="calm"))

    def burst(index: int, step: int) -> list[int]:
        return segment(10_000 * (index + 1) + 100 * step, entry_tokens)

    record = publish_at_once(valkey_url, pools, num_rounds, burst,
                             lambda _: scope(tenant="burst"))
    burst_names = {name_of(pools[0], burst(i, s), scope(tenant="burst"))
                   for i in range(num_publishers) for s in range(num_rounds)}
    most, stored, num_writes = most_stored(record, lambda name: name in burst_names)
    assert num_writes > 4
    assert most <= 4  # half of the eight-entry budget, at every instant
    assert tenant_tokens(pools[0], "calm") == 2 * entry_tokens
    # The budget's account equals what the server holds, counted key by key.
    client = server_client(valkey_url)
    stored_entries = len(list(client.scan_iter(match=b"cp:e:*")))
    assert int(client.get("cp:b")) == stored_entries * entry_tokens * pools[0].bytes_per_token
    for pool in pools:
        pool.close()


def test_a_share_that_cannot_make_room_refuses_and_keeps_the_account(valkey_url):
    """A tenant's share full, one of its entries leased: a publish needing more than the
    unleased ones free evicts them, is refused, and the budget's account still equals what
    the server holds (counted key by key)."""
    import numpy as np
    from pool_helpers import server_client

    pool = make_pool(64, max_context_tokens=32, url=valkey_url, tenant_share=0.5)
    held = [segment(1000 + 100 * k, 8) for k in range(4)]  # the tenant's 32-token share
    for k, tokens in enumerate(held):
        publish(pool, tokens, f"h{k}", scope(tenant="burst"))
    with pool.session("reader", scope(tenant="reader")) as reader:
        assert reader.lookup(held[0], np.zeros(8, dtype=bool))  # leased while it is open
        publish(pool, segment(5000, 32), "big", scope(tenant="burst"))
        reader.commit()
    assert tenant_tokens(pool, "burst") == 8  # only the leased entry stayed
    assert counter(pool, "cacheprune_pool_evictions_total", reason="share:tenant") == 3
    client = server_client(valkey_url)
    stored_entries = len(list(client.scan_iter(match=b"cp:e:*")))
    assert stored_entries == 1
    assert int(client.get("cp:b")) == 8 * pool.bytes_per_token
    pool.close()
