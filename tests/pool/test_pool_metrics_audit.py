from __future__ import annotations

import json

import numpy as np
from pool_helpers import BYTES_PER_TOKEN, kv_for, make_pool, name_of, publish, scope
from prometheus_client.parser import text_string_to_metric_families

ALLOWED_FIELDS = {"ts", "event", "request_id", "entry", "reason", "num_tokens", "tenant"}


def samples(pool):
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(pool.metrics_text())
        for sample in family.samples
    }


def test_metrics_and_audit_record_a_scripted_run(tmp_path):
    log_path = tmp_path / "audit.jsonl"
    pool = make_pool(budget_tokens=20, audit_log_path=str(log_path), backpressure_utilization=1.0)
    # Distinctive ids: if a token id leaked into the log, its digits would show up.
    first = [731337 + k for k in range(8)]
    second = [842424 + k for k in range(8)]
    third = [953535 + k for k in range(8)]
    publish(pool, first, request_id="req-1")
    publish(pool, second, request_id="req-2")
    request = first[:6] + [5, 6] + second
    mask = np.zeros(len(request), dtype=bool)
    mask[6] = True  # one private token between the two shared parts
    with pool.session("req-3", scope()) as session:
        matches = session.lookup(request, mask)
    with pool.session("req-4", scope("other-model")) as session:
        session.lookup(first, np.zeros(8, dtype=bool))
    publish(pool, third, request_id="req-5")  # evicts `first`, the least recently used
    try:
        with pool.session("req-6", scope()) as session:
            keys, values, positions = kv_for(third)
            flags = np.zeros(8, dtype=bool)
            session.stage(third, keys, values, positions, flags, flags)
            raise ValueError("rejected by the scheduler")
    except ValueError:
        pass

    assert [(m.request_start, m.length) for m in matches] == [(0, 6), (8, 8)]
    values = samples(pool)
    assert values[("cacheprune_pool_hit_tokens_total", ())] == 14
    assert values[("cacheprune_pool_miss_tokens_total", ())] == 1 + 8  # token 7; other model
    assert values[("cacheprune_pool_private_tokens_total", ())] == 1
    assert values[("cacheprune_pool_metadata_mismatches_total", ())] == 1
    assert values[("cacheprune_pool_published_entries_total", ())] == 3
    assert values[("cacheprune_pool_evictions_total", (("reason", "budget"),))] == 1
    assert values[("cacheprune_pool_entries", ())] == 2
    assert values[("cacheprune_pool_bytes_in_use", ())] == 16 * BYTES_PER_TOKEN
    assert values[("cacheprune_pool_utilization", ())] == 16 / 20
    reason = "exception:ValueError"
    assert values[("cacheprune_pool_rejected_entries_total", (("reason", reason),))] == 1

    pool.close()
    text = log_path.read_text()
    for token in first + second + third:
        assert str(token) not in text
    events = [json.loads(line) for line in text.splitlines()]
    assert all(set(event) <= ALLOWED_FIELDS for event in events)
    first_name = name_of(pool, first)
    summary = [
        (e["event"], e.get("request_id", "").split(".")[0] or None,
         e.get("entry") == first_name) for e in events
    ]
    # Tenants appear as keyed hashes only.
    assert "tenant-a" not in text
    assert {e["tenant"] for e in events if e["event"] == "publish"} == {pool.keys.tenant_tag(
        "tenant-a")}
    assert summary[:4] == [
        ("publish", "req-1", True),
        ("publish", "req-2", False),
        ("reuse", "req-3", True),
        ("reuse", "req-3", False),
    ]
    assert ("evict", None, True) in summary
    assert ("reject", "req-6", False) in summary
    assert [e["reason"] for e in events if e["event"] == "reject"] == [reason, reason]
