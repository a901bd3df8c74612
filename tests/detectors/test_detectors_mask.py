"""Spans -> token mask, compared with a brute-force character-by-character reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cacheprune.detectors import Span, token_mask, widen_mask


def reference_mask(spans, offsets, widen):
    private_chars = {i for s in spans for i in range(s.start, s.end)}
    base = [any(i in private_chars for i in range(a, b)) for a, b in offsets]
    return [any(base[j] for j in range(max(0, t - widen), min(len(base), t + widen + 1)))
            for t in range(len(base))]


@st.composite
def tokens_and_spans(draw):
    text_length = draw(st.integers(1, 200))
    cuts = sorted(draw(st.sets(st.integers(1, text_length - 1), max_size=60))) if \
        text_length > 1 else []
    bounds = [0, *cuts, text_length]
    offsets = [(a, b) for a, b in zip(bounds, bounds[1:], strict=False)]
    # Special tokens carry empty offsets; put a few anywhere.
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(offsets)))
        pos = draw(st.integers(0, text_length))
        offsets.insert(at, (pos, pos))
    spans = []
    for _ in range(draw(st.integers(0, 6))):
        start = draw(st.integers(0, text_length - 1))
        end = draw(st.integers(start + 1, text_length))
        spans.append(Span("X", start, end, 1.0, "test"))
    return spans, offsets, draw(st.integers(0, 3))


@settings(max_examples=300, deadline=None)
@given(tokens_and_spans())
def test_token_mask_equals_brute_force(case) -> None:
    spans, offsets, widen = case
    mask = token_mask(spans, offsets, widen=widen)
    assert mask.dtype == np.bool_
    assert mask.tolist() == reference_mask(spans, offsets, widen)


@settings(max_examples=200, deadline=None)
@given(tokens_and_spans())
def test_no_private_character_in_an_unmasked_token(case) -> None:
    spans, offsets, _ = case
    mask = token_mask(spans, offsets)
    for (a, b), private in zip(offsets, mask, strict=True):
        if not private:
            assert not any(s.start <= i < s.end for s in spans for i in range(a, b))


def test_overlapping_offsets_of_byte_level_tokens() -> None:
    # Two tokens sharing characters (one multi-byte character split in two tokens).
    offsets = [(0, 2), (2, 3), (2, 3), (3, 6)]
    spans = [Span("X", 2, 3, 1.0, "t")]
    assert token_mask(spans, offsets).tolist() == [False, True, True, False]


def test_widen_is_clipped_at_both_ends() -> None:
    mask = np.array([True, False, False, False, True])
    assert widen_mask(mask, 2).tolist() == [True, True, True, True, True]
    assert widen_mask(mask, 1).tolist() == [True, True, False, True, True]


def test_bad_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="num_tokens=3 but 2 token offsets"):
        token_mask([], [(0, 1), (1, 2)], num_tokens=3)
    with pytest.raises(ValueError, match="widen must be >= 0"):
        token_mask([], [(0, 1)], widen=-1)
    with pytest.raises(ValueError, match="0 <= start <= end"):
        token_mask([], [(3, 1)])
    with pytest.raises(ValueError, match="0 <= start < end"):
        Span("X", 4, 4, 1.0, "t")
    with pytest.raises(ValueError, match="score must lie in"):
        Span("X", 0, 4, 1.5, "t")


def test_empty_inputs() -> None:
    assert token_mask([], []).shape == (0,)
    assert token_mask([Span("X", 0, 3, 1.0, "t")], [(5, 9)]).tolist() == [False]
