from __future__ import annotations

import pytest
from pool_helpers import BYTES_PER_TOKEN, SHAPE, make_pool

from cacheprune.pool import KVShape, PoolCapacityError, PoolConfig, PoolConfigError, open_pool


def test_capacity_one_token_short_refuses_to_start_with_both_numbers():
    with pytest.raises(PoolCapacityError) as info:
        make_pool(budget_tokens=15, max_context_tokens=16)
    message = str(info.value)
    assert str(15 * BYTES_PER_TOKEN) in message
    assert str(16 * BYTES_PER_TOKEN) in message


@pytest.mark.parametrize("budget_tokens", [16, 17])
def test_capacity_exact_or_above_starts(budget_tokens):
    pool = make_pool(budget_tokens=budget_tokens, max_context_tokens=16)
    assert pool.bytes_in_use == 0


def test_bytes_per_token_counts_kv_and_bookkeeping():
    # 2 (K and V) x layers x heads x head_dim x 4 bytes, plus token id, position, mark.
    assert SHAPE.kv_bytes_per_token == 2 * 2 * 1 * 4 * 4
    assert BYTES_PER_TOKEN == SHAPE.kv_bytes_per_token + 4 + 8 + 1


@pytest.mark.parametrize(
    "field, value, fragment",
    [
        ("budget_bytes", -1, "budget_bytes"),
        ("budget_bytes", 0, "budget_bytes"),
        ("max_context_tokens", 0, "max_context_tokens"),
        ("min_entry_tokens", 0, "min_entry_tokens"),
        ("min_entry_tokens", 99, "min_entry_tokens"),
        ("ttl_s", 0.0, "ttl_s"),
        ("ttl_s", float("inf"), "ttl_s"),
        ("backpressure_utilization", 1.5, "backpressure_utilization"),
        ("backpressure_utilization", 0.0, "backpressure_utilization"),
        ("backpressure_mode", "drop", "backpressure_mode"),
        ("backpressure_wait_s", -1.0, "backpressure_wait_s"),
        ("eviction_policy", "mru", "eviction_policy must be one of"),
        ("eviction_half_life_s", 0.0, "eviction_half_life_s"),
    ],
)
def test_bad_settings_name_the_field(field, value, fragment):
    settings = dict(kv_shape=SHAPE, budget_bytes=10**6, max_context_tokens=16, min_entry_tokens=4)
    settings[field] = value
    with pytest.raises(PoolConfigError, match=fragment):
        PoolConfig(**settings)


def test_bad_kv_shape_is_refused():
    with pytest.raises(PoolConfigError, match="num_kv_heads"):
        KVShape(num_layers=2, num_kv_heads=0, head_dim=4)


def test_audit_log_in_a_missing_directory_is_refused(tmp_path):
    config = PoolConfig(
        kv_shape=SHAPE, budget_bytes=10**6, max_context_tokens=16, min_entry_tokens=4,
        audit_log_path=str(tmp_path / "missing" / "audit.jsonl"),
    )
    with pytest.raises(FileNotFoundError, match="missing"):
        open_pool("memory://", config)
