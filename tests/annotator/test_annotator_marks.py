"""Recompute marks follow each token's external share, computed here by direct sums."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest
from annotator_reference import synthetic_attention, treated
from hypothesis import given, settings
from hypothesis import strategies as st

from cacheprune.annotator import (
    AnnotatorConfig,
    RecomputeAboveShare,
    RecomputeTopFraction,
    annotate,
    score_spans,
)


def reference_shares(
    weights: np.ndarray, start: int, end: int, shared: Sequence[tuple[int, int]] = ()
) -> np.ndarray:
    """Each row's attention to the columns before `start`, less the `shared` spans' columns,
    over its total."""
    outside = np.zeros(weights.shape[1], dtype=bool)
    outside[:start] = True
    for a, b in shared:
        outside[a:b] = False
    shares = []
    for row in range(start, end):
        total = weights[row, : row + 1].sum()
        shares.append(weights[row, outside].sum() / total if total > 0 else 0.0)
    return np.array(shares)


def _prompt(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    private_mask = rng.random(n) < 0.08
    computed_mask = rng.random(n) < 0.95
    return synthetic_attention(n, seed, computed_mask), private_mask, computed_mask


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    share=st.floats(0.0, 1.0),
    sink_mode=st.sampled_from(["exclude", "renormalize"]),
    context=st.sampled_from(["all", "unshared"]),
)
def test_marks_above_share_match_direct_shares(
    seed: int, share: float, sink_mode: str, context: str
) -> None:
    attention, private_mask, computed_mask = _prompt(60, seed)
    config = AnnotatorConfig(
        min_len=4, ratio=0.5, sink_mode=sink_mode,  # type: ignore[arg-type]
        recompute=RecomputeAboveShare(share=share),
        recompute_context=context,  # type: ignore[arg-type]
    )
    weights = treated(attention, config.sink_tokens, sink_mode == "renormalize")

    annotation = annotate(attention, private_mask, computed_mask, config)

    reused = [(int(c), int(c) + 1) for c in np.flatnonzero(~computed_mask)]
    for k, segment in enumerate(annotation.segments):
        # "unshared": the earlier segments and the tokens reused from the pool are shared text
        earlier = [(s.start, s.end) for s in annotation.segments[:k]] + reused
        shares = reference_shares(weights, segment.start, segment.end,
                                  earlier if context == "unshared" else [])
        # Shares within float noise of the threshold may go either way.
        clear = np.abs(shares - share) > 1e-9
        np.testing.assert_array_equal(segment.recompute[clear], (shares > share)[clear])


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), fraction=st.floats(0.0, 1.0))
def test_marks_top_fraction_take_the_largest_shares(seed: int, fraction: float) -> None:
    attention, private_mask, computed_mask = _prompt(60, seed)
    config = AnnotatorConfig(
        min_len=4, ratio=0.5, recompute=RecomputeTopFraction(fraction=fraction)
    )
    weights = treated(attention, config.sink_tokens, renormalize=True)

    annotation = annotate(attention, private_mask, computed_mask, config)

    reused = [(int(c), int(c) + 1) for c in np.flatnonzero(~computed_mask)]
    for k, segment in enumerate(annotation.segments):
        earlier = [(s.start, s.end) for s in annotation.segments[:k]] + reused
        shares = reference_shares(weights, segment.start, segment.end, earlier)
        # Shares within float noise of zero (left after subtracting the shared columns, where
        # the reference sums no column at all) may count as positive or not.
        wanted = math.ceil(fraction * segment.num_tokens)
        assert min(wanted, int((shares > 1e-12).sum())) <= segment.num_recompute <= wanted
        if segment.num_recompute and segment.num_recompute < segment.num_tokens:
            assert shares[segment.recompute].min() >= shares[~segment.recompute].max() - 1e-12
    covered = annotation.num_covered
    expected_ratio = annotation.num_recompute / covered if covered else 0.0
    assert annotation.recompute_ratio == expected_ratio


def test_first_segment_of_a_prompt_needs_no_recompute() -> None:
    # Nothing comes before position 0, so no token of a segment starting there leans outside.
    attention = synthetic_attention(40, seed=5)
    nothing = np.zeros(40, dtype=bool)
    everything = np.ones(40, dtype=bool)
    config = AnnotatorConfig(min_len=40, recompute=RecomputeAboveShare(share=0.0))

    annotation = annotate(attention, nothing, everything, config)

    assert [(s.start, s.end) for s in annotation.segments] == [(0, 40)]
    assert annotation.segments[0].external == 0.0
    assert annotation.recompute_ratio == 0.0


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), data=st.data())
def test_score_spans_match_direct_sums_on_any_span(seed: int, data: st.DataObject) -> None:
    n = 30
    private_mask = np.random.default_rng(seed).random(n) < 0.1
    attention = synthetic_attention(n, seed)
    starts = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=4))
    spans = [(start, data.draw(st.integers(start + 1, n))) for start in starts]
    # Spans here may overlap and come in any order: every token before a span is outside it.
    config = AnnotatorConfig(recompute=RecomputeAboveShare(share=0.2), recompute_context="all")
    weights = treated(attention, config.sink_tokens, renormalize=True)

    segments = score_spans(attention, private_mask, spans, config)

    for (start, end), segment in zip(spans, segments, strict=True):
        shares = reference_shares(weights, start, end)
        assert (segment.start, segment.end) == (start, end)
        assert segment.external == pytest.approx(weights[start:end, :start].sum(), abs=1e-9)
        clear = np.abs(shares - 0.2) > 1e-9
        np.testing.assert_array_equal(segment.recompute[clear], (shares > 0.2)[clear])


def test_score_spans_refuses_bad_spans_and_bad_rows() -> None:
    attention = synthetic_attention(10, seed=4)
    nothing = np.zeros(10, dtype=bool)
    with pytest.raises(ValueError, match=r"spans \[5, 8\) and \[6, 9\) .* in order"):
        score_spans(attention, nothing, [(5, 8), (6, 9)], AnnotatorConfig())
    with pytest.raises(ValueError, match=r"span \[4, 12\) is not a non-empty span of the 10"):
        score_spans(attention, nothing, [(0, 3), (4, 12)], AnnotatorConfig())
    attention[6, 2] = np.inf
    with pytest.raises(ValueError, match="attention row 6"):
        score_spans(attention, nothing, [(5, 8)], AnnotatorConfig())
