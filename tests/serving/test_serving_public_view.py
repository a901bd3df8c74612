"""The public view of a prompt (private tokens taken out) against brute-force references."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cacheprune.annotator import AnnotatorConfig, annotate
from cacheprune.serving.public_view import PublicView, has_run, public_attention


@given(st.lists(st.booleans(), min_size=1, max_size=40), st.data())
@settings(max_examples=200, deadline=None)
def test_pieces_cover_exactly_the_public_positions_of_a_match(private_flags, data):
    private = np.array(private_flags, dtype=np.bool_)
    if private.all():
        return
    view = PublicView.of(np.arange(100, 100 + private.size, dtype=np.int64), private)
    start = data.draw(st.integers(0, view.num_tokens - 1))
    length = data.draw(st.integers(1, view.num_tokens - start))
    pieces = view.pieces(start, length)
    # Brute force: the prompt positions of public tokens start..start+length-1, in order.
    expected = [p for p in range(private.size) if not private[p]][start:start + length]
    covered = [prompt_start + i for prompt_start, _, n in pieces for i in range(n)]
    assert covered == expected
    assert [offset for _, offset, _ in pieces] == np.cumsum(
        [0] + [n for _, _, n in pieces[:-1]]).tolist()
    for (a, _, n), (b, _, _) in zip(pieces, pieces[1:], strict=False):
        assert b > a + n  # a piece ends where a private token sits
    assert view.token_ids.tolist() == [100 + p for p in range(private.size) if not private[p]]


def test_pieces_refuse_a_span_outside_the_view():
    view = PublicView.of(np.arange(5, dtype=np.int64), np.array([0, 1, 0, 0, 1], dtype=bool))
    with pytest.raises(ValueError, match=r"tokens \[2, 4\) lie outside the 3 tokens"):
        view.pieces(2, 2)


@given(st.lists(st.booleans(), max_size=30), st.integers(1, 8))
def test_has_run_against_a_scan(flags, length):
    best = run = 0
    for flag in flags:
        run = run + 1 if flag else 0
        best = max(best, run)
    assert has_run(np.array(flags, dtype=np.bool_), length) == (best >= length)


def _causal_attention(rng, n):
    scores = rng.random((n, n)).astype(np.float32)
    scores = np.tril(scores)
    return (scores / scores.sum(axis=1, keepdims=True)).astype(np.float32)


def _brute_force_external(attention, private, view_positions, start, end, sink):
    """Attention rows of public tokens [start, end) of the view pay to anything outside the
    segment's own tokens, sinks excluded: earlier public tokens and every private token."""
    members = set(view_positions[start:end].tolist())
    total = 0.0
    for row in view_positions[start:end]:
        for col in range(sink, row + 1):
            if col not in members and (private[col] or col < view_positions[start]):
                total += attention[row, col]
    return total


def test_public_attention_counts_private_attention_as_outside_every_segment():
    rng = np.random.default_rng(7)
    n, sink = 40, 1
    attention = _causal_attention(rng, n)
    private = np.zeros(n, dtype=np.bool_)
    private[[5, 6, 17, 30]] = True
    matrix, inserted = public_attention(attention, private, sink)
    view = PublicView.of(np.arange(n, dtype=np.int64), private)
    assert matrix.shape == (n - 4 + 1, n - 4 + 1) and inserted == 1
    config = AnnotatorConfig(min_len=4, ratio=0.01, sink_mode="exclude",
                             recompute_context="all")
    flags = np.zeros(matrix.shape[0], dtype=np.bool_)
    flags[inserted] = True
    computed = np.ones(matrix.shape[0], dtype=np.bool_)
    annotation = annotate(matrix, flags, computed, config)
    assert annotation.segments  # a low ratio admits segments spanning private values
    for segment in annotation.segments:
        assert segment.start > inserted  # never the inserted column
        start, end = segment.start - 1, segment.end - 1  # view indices -> public tokens
        expected = _brute_force_external(attention, private, view.positions, start, end, sink)
        assert segment.external == pytest.approx(expected, rel=1e-5)
