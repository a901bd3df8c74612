from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cacheprune.retriever.cover import best_cover


def brute_force_cover(starts, max_lengths, min_length, num_tokens):
    longest = dict(zip(starts, max_lengths, strict=True))
    best = [0] * (num_tokens + 1)
    for p in range(num_tokens - 1, -1, -1):
        best[p] = best[p + 1]
        for length in range(min_length, longest.get(p, 0) + 1):
            best[p] = max(best[p], length + best[p + length])
    return best[0]


@st.composite
def candidate_sets(draw):
    num_tokens = draw(st.integers(1, 70))
    min_length = draw(st.integers(1, 6))
    starts = sorted(draw(st.sets(st.integers(0, num_tokens - 1), max_size=num_tokens)))
    starts = [s for s in starts if num_tokens - s >= min_length]
    lengths = [draw(st.integers(min_length, num_tokens - s)) for s in starts]
    return num_tokens, min_length, starts, lengths


@settings(max_examples=300, deadline=None)
@given(candidate_sets())
def test_cover_is_as_large_as_brute_force_and_valid(case):
    num_tokens, min_length, starts, lengths = case
    chosen = best_cover(
        np.asarray(starts, dtype=np.int64), np.asarray(lengths, dtype=np.int64), min_length
    ).tolist()
    intervals = [(s, s + c) for s, c in zip(starts, chosen, strict=True) if c > 0]
    for (_, end), (next_start, _) in zip(intervals, intervals[1:], strict=False):
        assert end <= next_start
    for c, longest in zip(chosen, lengths, strict=True):
        assert c == 0 or min_length <= c <= longest
    assert sum(chosen) == brute_force_cover(starts, lengths, min_length, num_tokens)
