"""At rest on the shared backends: encrypted per sharing domain, KV in float16 by default."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from pool_helpers import kv_for, make_pool, publish, scope, segment, stored_values
from test_replay_and_erasure import hits

from cacheprune.pool import InvalidEntryError
from cacheprune.pool.codec import EntryRejected, decode_head


def test_stored_bytes_hold_neither_token_ids_nor_kv_in_clear(shared_url):
    pool = make_pool(64, url=shared_url, kv_storage_dtype="float32")
    tokens = segment(70_000, 8)
    publish(pool, tokens)
    ((name, value),) = stored_values(shared_url).items()
    keys, values, positions = kv_for(tokens)
    clear_parts = [np.asarray(tokens, "<u4").tobytes(), positions.astype("<i8").tobytes(),
                   keys.numpy().astype("<f4").tobytes()[:64],
                   values.numpy().astype("<f4").tobytes()[:64]]
    assert all(part not in value for part in clear_parts)
    assert len(hits(pool, tokens)) == 1  # the pool itself reads it


def test_another_domain_key_cannot_decrypt(shared_url):
    """Re-tagging the head with the right key but another domain's encryption key fails."""
    pool = make_pool(64, url=shared_url)
    publish(pool, segment(100, 8), in_scope=scope(domain="alpha"))
    ((name, value),) = stored_values(shared_url).items()
    head = decode_head(pool.keys, name, value, pool.config, pool.clock())
    assert head.token_ids.tolist() == segment(100, 8)
    swapped = value.replace(head.domain_tag.encode(), pool.keys.domain_tag("beta").encode())
    with pytest.raises(EntryRejected):
        decode_head(pool.keys, name, swapped, pool.config, pool.clock())


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_at_rest_reads_back_the_rounded_float32(shared_url, dtype):
    pool = make_pool(64, url=shared_url, kv_storage_dtype=dtype)
    tokens = segment(100, 8)
    publish(pool, tokens)
    (part,) = hits(pool, tokens)
    keys, values, _ = kv_for(tokens)
    torch_dtype = getattr(torch, dtype)
    assert part.keys.dtype == torch.float32
    assert torch.equal(part.keys, keys.to(torch_dtype).to(torch.float32))
    assert torch.equal(part.values, values.to(torch_dtype).to(torch.float32))
    stored = len(next(iter(stored_values(shared_url).values())))
    full = make_pool(64, url=shared_url, kv_storage_dtype="float32")
    publish(full, segment(500, 8))
    sizes = sorted(len(v) for v in stored_values(shared_url).values())
    kv_bytes = 2 * 2 * 8 * 4  # layers x kv heads x tokens x head dim, K and V
    # Half the KV bytes; the JSON head differs by a few characters (dtype name, the time).
    assert sizes[0] == stored and abs(sizes[1] - stored - 2 * kv_bytes) <= 4


def test_kv_beyond_float16_range_is_refused_naming_the_way_out(shared_url):
    pool = make_pool(64, url=shared_url)  # float16: the default
    tokens = segment(100, 8)
    keys, values, positions = kv_for(tokens)
    keys[0, 0, 0, 0] = 1e6
    flags = np.zeros(8, dtype=bool)
    with pool.session("big", scope()) as session:
        with pytest.raises(InvalidEntryError, match="float16's range.*bfloat16"):
            session.stage(tokens, keys, values, positions, flags, flags)
        assert session.num_staged == 0
    assert stored_values(shared_url) == {}
