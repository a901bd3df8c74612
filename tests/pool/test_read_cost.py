"""Reuse is never slower than computing: with the engine's prefill rate given, a lookup skips
matches whose entries read slower (at the rate the pool measured) than their tokens compute."""

from __future__ import annotations

from pool_helpers import counter, make_pool, publish, segment
from test_replay_and_erasure import hits


def test_matches_that_read_slower_than_they_compute_are_skipped(shared_url):
    fast_compute = make_pool(64, url=shared_url, recompute_tokens_per_s=1e15)
    publish(fast_compute, segment(100, 8))
    assert len(hits(fast_compute, segment(100, 8))) == 1  # no read rate measured yet
    assert hits(fast_compute, segment(100, 8)) == []  # measured: no store reads at 1e15 tok/s
    assert counter(fast_compute, "cacheprune_pool_slow_reads_skipped_total") == 1
    slow_compute = make_pool(64, url=shared_url, recompute_tokens_per_s=1e-3)
    for _ in range(2):  # reading 8 tokens beats computing them at one token per 1,000 s
        assert len(hits(slow_compute, segment(100, 8))) == 1
    assert counter(slow_compute, "cacheprune_pool_slow_reads_skipped_total") == 0
