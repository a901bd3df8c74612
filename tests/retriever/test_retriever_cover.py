from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_matching import naive_stretch_cover

from cacheprune.retriever.cover import best_cover


@st.composite
def stretch_sets(draw):
    num_tokens = draw(st.integers(1, 60))
    min_length = draw(st.integers(1, 6))
    stretches = []
    for _ in range(draw(st.integers(0, 8))):
        low = draw(st.integers(0, num_tokens - 1))
        if num_tokens - low >= min_length:
            stretches.append((low, draw(st.integers(low + min_length, num_tokens))))
    return num_tokens, min_length, stretches


@settings(max_examples=300, deadline=None)
@given(stretch_sets())
def test_cover_is_as_large_as_brute_force_and_valid(case):
    num_tokens, min_length, stretches = case
    lows = np.asarray([low for low, _ in stretches], dtype=np.int64)
    ends = np.asarray([end for _, end in stretches], dtype=np.int64)
    starts, stops, which = best_cover(lows, ends, min_length)
    chosen = list(zip(starts.tolist(), stops.tolist(), which.tolist(), strict=True))
    for (_, stop, _), (next_start, _, _) in zip(chosen, chosen[1:], strict=False):
        assert stop <= next_start
    for start, stop, index in chosen:
        low, end = stretches[index]
        assert low <= start and stop <= end and stop - start >= min_length
    assert sum(stop - start for start, stop, _ in chosen) == naive_stretch_cover(
        num_tokens, stretches, min_length)
