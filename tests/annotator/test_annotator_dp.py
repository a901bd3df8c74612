"""annotate() finds the best cover that an exhaustive search over all segmentations finds."""

from __future__ import annotations

import numpy as np
import pytest
from annotator_reference import (
    best_cover,
    bridged_gaps,
    direct_external,
    direct_internal,
    synthetic_attention,
    treated,
    valid_intervals,
)
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from cacheprune.annotator import AnnotatorConfig, annotate, last_segment_end


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(1, 14),
    seed=st.integers(0, 2**32 - 1),
    private=st.lists(st.booleans(), min_size=14, max_size=14),
    computed=st.lists(st.booleans(), min_size=14, max_size=14),
    density=st.sampled_from([0.0, 0.15, 0.4]),
    min_len=st.integers(1, 5),
    max_len=st.one_of(st.none(), st.integers(5, 9)),
    ratio=st.sampled_from([0.25, 1.0, 3.0]),
    sink_tokens=st.integers(0, 2),
    sink_mode=st.sampled_from(["exclude", "renormalize"]),
    every_row=st.booleans(),
)
def test_dp_matches_exhaustive_search(
    n: int,
    seed: int,
    private: list[bool],
    computed: list[bool],
    density: float,
    min_len: int,
    max_len: int | None,
    ratio: float,
    sink_tokens: int,
    sink_mode: str,
    every_row: bool,
) -> None:
    # Masks are sparse-ish so that long eligible runs (the interesting case) come up often.
    rng = np.random.default_rng(seed)
    private_mask = np.array(private[:n]) & (rng.random(n) < density * 2)
    computed_mask = ~(~np.array(computed[:n]) & (rng.random(n) < density * 2))
    attention = synthetic_attention(n, seed, None if every_row else computed_mask)
    config = AnnotatorConfig(
        min_len=min_len, max_len=max_len, ratio=ratio, sink_tokens=sink_tokens,
        sink_mode=sink_mode,  # type: ignore[arg-type]
    )
    weights = treated(attention, sink_tokens, sink_mode == "renormalize")
    eligible = computed_mask & ~private_mask
    if every_row:
        eligible = eligible | bridged_gaps(private_mask, computed_mask, min_len)
    intervals, closest = valid_intervals(
        weights, eligible, min_len, n if max_len is None else max_len, ratio
    )
    # A candidate sitting on the threshold could go either way with a different summation order.
    assume(closest > 1e-9)

    annotation = annotate(attention, private_mask, computed_mask, config, every_row=every_row)

    event(f"segments: {min(len(annotation.segments), 3)}")
    event(f"cover: {'all' if annotation.num_covered == annotation.num_eligible else 'partial'}")
    expected_covered, expected_negative_count = best_cover(n, intervals)
    assert annotation.num_covered == expected_covered
    assert len(annotation.segments) == -expected_negative_count
    previous_end = 0
    for segment in annotation.segments:
        assert previous_end <= segment.start < segment.end <= n
        previous_end = segment.end
        assert (segment.start, segment.end) in intervals
        assert not private_mask[segment.start : segment.end].any()
        assert eligible[segment.start : segment.end].all()
        assert segment.internal == pytest.approx(
            direct_internal(weights, segment.start, segment.end), abs=1e-9
        )
        assert segment.external == pytest.approx(
            direct_external(weights, segment.start, segment.end), abs=1e-9
        )
        on_private = weights[segment.start : segment.end, : segment.start][:, private_mask[
            : segment.start
        ]]
        assert segment.private_attention == pytest.approx(float(on_private.sum()), abs=1e-9)
    assert annotation.num_eligible == int(eligible.sum())


def test_dp_covers_a_block_diagonal_document_in_its_blocks() -> None:
    # Blocks [4, 24), [24, 44), [44, 64) attend only to themselves and the sink at column 0;
    # a private token at 30 cuts the middle block. [31, 44) alone leans on 24..29 (external
    # 7.03 > internal 5.97), but with the self-contained block after it, [31, 64) passes: the best
    # cover is every token but the private one, in two segments.
    n = 64
    attention = np.zeros((n, n), dtype=np.float32)
    for row in range(n):
        block_start = 4 + 20 * ((row - 4) // 20) if row >= 4 else 0
        attention[row, 0] = 0.5
        attention[row, block_start : row + 1] += 0.5 / (row + 1 - block_start)
    attention[0, 0] = 1.0
    private_mask = np.zeros(n, dtype=bool)
    private_mask[30] = True
    computed_mask = np.ones(n, dtype=bool)
    config = AnnotatorConfig(min_len=3, sink_tokens=1, ratio=1.0)

    annotation = annotate(attention, private_mask, computed_mask, config)

    assert [(s.start, s.end) for s in annotation.segments] == [(0, 30), (31, 64)]
    assert annotation.segments[0].external == pytest.approx(0.0, abs=1e-12)
    assert annotation.segments[1].external > 0.0
    assert annotation.coverage == pytest.approx(63 / 63)

    without_tail = annotate(
        attention[:44, :44].copy(), private_mask[:44].copy(), computed_mask[:44].copy(), config
    )
    spans = [(s.start, s.end) for s in without_tail.segments]
    assert spans[0] == (0, 30)
    assert all(end - start < 13 for start, end in spans[1:])


def _one_block_document(n: int) -> np.ndarray:
    """Every row pays 0.5 to the sink at column 0 and 0.5 evenly to columns 1..row."""
    attention = np.zeros((n, n), dtype=np.float32)
    attention[0, 0] = 1.0
    for row in range(1, n):
        attention[row, 0] = 0.5
        attention[row, 1 : row + 1] = 0.5 / row
    return attention


@pytest.mark.parametrize("reused_length", [6, 16])
def test_a_short_reused_stretch_inside_new_text_does_not_cut_its_segment(
        reused_length: int) -> None:
    # A template [0, 9) and a stretch inside the text from 30 on were reused from the pool;
    # the rest was computed. Every row leans on all the text before it, so the text after the
    # stretch alone is not self-contextualized (external ~ 0.7 of it), while [9, 60) is.
    n, min_len = 60, 16
    attention = _one_block_document(n)
    computed_mask = np.ones(n, dtype=bool)
    computed_mask[:9] = False
    computed_mask[30 : 30 + reused_length] = False
    private_mask = np.zeros(n, dtype=bool)
    config = AnnotatorConfig(min_len=min_len, sink_tokens=1, ratio=1.0)
    weights = treated(attention, 1, renormalize=True)

    cut = annotate(attention, private_mask, computed_mask, config)
    whole = annotate(attention, private_mask, computed_mask, config, every_row=True)

    assert [(s.start, s.end) for s in cut.segments] == [(9, 30)]
    assert not cut.segments[0].recompute.any()  # the reused template is shared text
    tail = 30 + reused_length
    assert direct_internal(weights, tail, n) < direct_external(weights, tail, n)
    if reused_length < min_len:  # the short template and stretch join the new text
        assert [(s.start, s.end) for s in whole.segments] == [(0, n)]
    else:  # as long as a segment: an entry of its own, not published again
        assert [(s.start, s.end) for s in whole.segments] == [(0, 30)]
    assert whole.segments[0].external == 0.0


@pytest.mark.parametrize("sink_mode", ["exclude", "renormalize"])
def test_a_heavy_sink_stops_counting_as_external_once_excluded(sink_mode: str) -> None:
    # Every row pays 0.6 to column 0 and 0.4 to its own 10-token block. Counted as external,
    # the sink makes no block self-contextualized (internal 0.4 per row < external 0.6); once
    # excluded, every block after the private token is (external 0).
    n = 41
    attention = np.zeros((n, n), dtype=np.float32)
    for row in range(n):
        block_start = 1 + 10 * ((row - 1) // 10) if row >= 1 else 0
        attention[row, 0] = 0.6
        attention[row, block_start : row + 1] += 0.4 / (row + 1 - block_start)
    attention[0, 0] = 1.0
    private_mask = np.zeros(n, dtype=bool)
    private_mask[10] = True  # the last token of the first block
    computed_mask = np.ones(n, dtype=bool)

    def spans(sink_tokens: int) -> list[tuple[int, int]]:
        config = AnnotatorConfig(
            min_len=10, max_len=10, sink_tokens=sink_tokens,
            sink_mode=sink_mode,  # type: ignore[arg-type]
        )
        annotation = annotate(attention, private_mask, computed_mask, config)
        return [(s.start, s.end) for s in annotation.segments]

    assert spans(sink_tokens=0) == [(0, 10)]
    assert spans(sink_tokens=1) == [(0, 10), (11, 21), (21, 31), (31, 41)]


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 40),
    seed=st.integers(0, 2**32 - 1),
    computed=st.lists(st.booleans(), min_size=40, max_size=40),
    min_len=st.integers(1, 8),
    max_len=st.one_of(st.none(), st.integers(8, 12)),
)
def test_a_pass_that_stops_at_the_last_segment_end_finds_the_same_segments(
    n: int, seed: int, computed: list[bool], min_len: int, max_len: int | None
) -> None:
    """Isolated mode's private-free pass computes rows up to `last_segment_end` only: the
    annotation of those rows equals that of every row, and no segment ends after it."""
    rng = np.random.default_rng(seed)
    computed_mask = np.array(computed[:n]) | (rng.random(n) < 0.5)
    private_mask = np.zeros(n, dtype=np.bool_)
    attention = synthetic_attention(n, seed, None)
    config = AnnotatorConfig(min_len=min_len, max_len=max_len)
    whole = annotate(attention, private_mask, computed_mask, config, every_row=True)
    end = last_segment_end(computed_mask, private_mask, min_len)
    event(f"end {'before' if end < n else 'at'} the prompt's end")
    assert all(segment.end <= end for segment in whole.segments)
    if end == 0:
        assert whole.segments == []
        return
    cut = annotate(attention[:end, :end], private_mask[:end], computed_mask[:end], config,
                   every_row=True)
    assert [(s.start, s.end, s.recompute.tolist()) for s in cut.segments] == \
        [(s.start, s.end, s.recompute.tolist()) for s in whole.segments]
