"""The summed-area table gives the same sums as adding the entries one by one."""

from __future__ import annotations

import numpy as np
import pytest
from annotator_reference import direct_external, direct_internal, synthetic_attention, treated
from hypothesis import given, settings
from hypothesis import strategies as st

from cacheprune.annotator import SummedAreaTable


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 24),
    seed=st.integers(0, 2**32 - 1),
    sink_tokens=st.integers(0, 3),
    renormalize=st.booleans(),
    data=st.data(),
)
def test_sat_sums_equal_direct_sums(
    n: int, seed: int, sink_tokens: int, renormalize: bool, data: st.DataObject
) -> None:
    attention = synthetic_attention(n, seed)
    table = SummedAreaTable.build(attention, sink_tokens=sink_tokens, renormalize=renormalize)
    weights = treated(attention, sink_tokens, renormalize)
    for _ in range(10):
        start = data.draw(st.integers(0, n))
        end = data.draw(st.integers(start, n))
        assert table.internal(start, end) == pytest.approx(
            direct_internal(weights, start, end), abs=1e-9
        )
        assert table.external(start, end) == pytest.approx(
            direct_external(weights, start, end), abs=1e-9
        )
        col_start = data.draw(st.integers(0, n))
        col_end = data.draw(st.integers(col_start, n))
        assert table.block(start, end, col_start, col_end) == pytest.approx(
            float(weights[start:end, col_start:col_end].sum()), abs=1e-9
        )


def test_sat_ignores_entries_above_the_diagonal() -> None:
    attention = synthetic_attention(8, seed=3)
    noisy = attention + np.triu(np.full_like(attention, 0.5), 1)
    clean_table = SummedAreaTable.build(attention)
    noisy_table = SummedAreaTable.build(noisy)
    assert noisy_table.internal(2, 7) == clean_table.internal(2, 7)


def test_sat_rejects_spans_outside_the_prompt() -> None:
    table = SummedAreaTable.build(synthetic_attention(5, seed=1))
    with pytest.raises(ValueError, match=r"\[3, 9\) is not inside a prompt of 5 tokens"):
        table.internal(3, 9)


def test_sat_names_the_row_with_a_bad_value() -> None:
    attention = synthetic_attention(6, seed=2)
    attention[4, 1] = np.nan
    with pytest.raises(ValueError, match="attention row 4"):
        SummedAreaTable.build(attention)
