from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_matching import MERSENNE_61, naive_window_hash

from cacheprune.retriever.rolling import prefix_key, random_base, window_hashes
from cacheprune.tokens import as_token_array


@settings(max_examples=60, deadline=None)
@given(
    tokens=st.lists(st.integers(0, 2**32 - 1), min_size=0, max_size=60),
    mask_seed=st.integers(0, 2**32 - 1),
    window=st.integers(1, 8),
    base=st.one_of(st.integers(2, 1000), st.integers(MERSENNE_61 - 1000, MERSENNE_61 - 2)),
)
def test_window_hashes_equal_python_big_integers(tokens, mask_seed, window, base):
    rng = np.random.default_rng(mask_seed)
    mask = rng.random(len(tokens)) < 0.1
    hashes, is_valid = window_hashes(as_token_array(tokens), mask, window, base)
    for start in range(len(tokens)):
        inside = start + window <= len(tokens) and not mask[start : start + window].any()
        assert bool(is_valid[start]) == inside
        if inside:
            assert int(hashes[start]) == naive_window_hash(tokens[start : start + window], base)


def test_extreme_values_fold_correctly():
    tokens = as_token_array([2**32 - 1] * 40)
    base = MERSENNE_61 - 2
    hashes, _ = window_hashes(tokens, np.zeros(40, dtype=bool), 17, base)
    assert int(hashes[5]) == naive_window_hash([2**32 - 1] * 17, base)


def test_prefix_key_is_the_first_window():
    tokens = as_token_array(list(range(100, 140)))
    base = random_base()
    assert prefix_key(tokens, 9, base) == naive_window_hash(list(range(100, 109)), base)
    with pytest.raises(ValueError, match="at least 50 tokens"):
        prefix_key(tokens, 50, base)


@pytest.mark.parametrize("base", [0, 1, MERSENNE_61 - 1, MERSENNE_61])
def test_degenerate_bases_are_refused(base):
    with pytest.raises(ValueError, match="base"):
        window_hashes(as_token_array([1, 2, 3]), np.zeros(3, dtype=bool), 2, base)


def test_bad_token_ids_are_refused():
    with pytest.raises(ValueError, match="range"):
        as_token_array([1, -2, 3])
    with pytest.raises(ValueError, match="1-D"):
        as_token_array([[1, 2]])
    with pytest.raises(ValueError, match="integers"):
        as_token_array([1.5, 2.0])
