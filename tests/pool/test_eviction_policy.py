"""Eviction keeps what is reused, on every backend: the pool's contents follow a brute-force
reference that sums each entry's decayed uses, and a stream of novel entries flushes the warm
ones under plain LRU (LMCache #4663's decay, reproduced) but not under the default policy.

Real backends: memory://, a real folder, the test session's real valkey-server."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from pool_helpers import ManualClock, make_pool, name_of, names, publish, scope, segment

HALF_LIFE_S = 50.0
ENTRY_TOKENS = 8


class DecayedUseReference:
    """What the pool should hold: every entry's use times kept, its worth recomputed from
    scratch as sum 2^-(age / half-life) (LRU: the last use time), the lowest evicted first."""

    def __init__(self, budget_tokens: int, policy: str) -> None:
        self.budget_tokens = budget_tokens
        self.policy = policy
        self.uses: dict[int, list[float]] = {}

    def worth(self, key: int, now: float) -> tuple[float, float]:
        times = self.uses[key]
        if self.policy == "lru":
            return (times[-1], times[-1])
        return (sum(2.0 ** (-(now - t) / HALF_LIFE_S) for t in times), times[-1])

    def use(self, key: int, now: float) -> bool:
        if key not in self.uses:
            return False
        self.uses[key].append(now)
        return True

    def publish(self, key: int, now: float) -> None:
        if self.use(key, now):
            return
        while (len(self.uses) + 1) * ENTRY_TOKENS > self.budget_tokens:
            del self.uses[min(self.uses, key=lambda k: self.worth(k, now))]
        self.uses[key] = [now]


def tokens_of(key: int) -> list[int]:
    # Disjoint stretches; small ids (the test KV encodes them, float16 at rest holds them).
    return segment((ENTRY_TOKENS + 1) * key + 1, ENTRY_TOKENS)


def lookup_hits(pool, key: int) -> int:
    tokens = tokens_of(key)
    with pool.session("reader", scope()) as session:
        return len(session.lookup(tokens, np.zeros(len(tokens), dtype=bool)))


@pytest.mark.parametrize("policy", ["frequency", "lru"])
def test_contents_follow_the_decayed_use_reference(pool_url, policy):
    clock = ManualClock()
    budget_tokens = 5 * ENTRY_TOKENS
    pool = make_pool(budget_tokens, url=pool_url, clock=clock, eviction_policy=policy,
                     eviction_half_life_s=HALF_LIFE_S)
    reference = DecayedUseReference(budget_tokens, policy)
    rng = random.Random(7)
    for step in range(120):
        clock.now += rng.choice([1.0, 3.0, 17.0])
        # Skewed: low keys come back often, high keys rarely (a few warm, many novel).
        key = min(int(rng.expovariate(0.25)), 14)
        if rng.random() < 0.5:
            found = lookup_hits(pool, key)
            assert found == int(reference.use(key, clock.now)), f"step {step}, key {key}"
        else:
            publish(pool, tokens_of(key))
            reference.publish(key, clock.now)
        expected = {name_of(pool, tokens_of(k)) for k in reference.uses}
        assert names(pool) == expected, f"step {step}"
    pool.close()


def novel_stream_warm_hits(pool_url: str, policy: str) -> list[int]:
    """Four warm documents, each read twice, then read in turn, each read followed by seven
    novel entries (questions no one asks again); a missed document is computed and published
    again. Returns, per round, how many of the four reads hit."""
    clock = ManualClock()
    pool = make_pool(8 * ENTRY_TOKENS, url=pool_url, clock=clock, eviction_policy=policy)
    warm, novel = range(4), iter(range(100, 1_000))
    for key in warm:
        publish(pool, tokens_of(key))
    for key in [*warm, *warm]:
        clock.now += 1.0
        assert lookup_hits(pool, key) == 1
    hits_per_round = []
    for _ in range(6):
        round_hits = 0
        for key in warm:
            clock.now += 1.0
            if lookup_hits(pool, key):
                round_hits += 1
            else:
                publish(pool, tokens_of(key))
            for _ in range(7):
                clock.now += 1.0
                publish(pool, tokens_of(next(novel)))
        hits_per_round.append(round_hits)
    pool.close()
    return hits_per_round


@pytest.mark.parametrize("policy", ["frequency", "lru"])
def test_novel_entries_flush_warm_documents_under_lru_only(pool_url, policy):
    hits_per_round = novel_stream_warm_hits(pool_url, policy)
    if policy == "lru":
        # Between two reads of a document 28 novel entries arrive and the pool holds 8:
        # under LRU each document is gone by its next read, round after round (the decay).
        assert hits_per_round[1:] == [0] * 5
    else:
        # The documents' reads outrank every novel entry: every read hits.
        assert hits_per_round == [4] * 6


def test_rank_formula_equals_the_sum_of_decayed_uses():
    from cacheprune.pool.eviction import next_use_rank

    rng = random.Random(3)
    times = sorted(rng.uniform(0, 500) for _ in range(30))
    rank = None
    for t in times:
        rank = next_use_rank(rank, t, "frequency", HALF_LIFE_S)
    now = times[-1] + 123.0
    decayed = sum(2.0 ** (-(now - t) / HALF_LIFE_S) for t in times)
    assert rank is not None
    assert math.isclose(2.0 ** ((rank - now) / HALF_LIFE_S), decayed, rel_tol=1e-9)
