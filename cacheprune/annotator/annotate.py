"""annotate(): from one prefill's attention to the segments worth publishing."""

from __future__ import annotations

import itertools
import math

import numpy as np
import numpy.typing as npt

from cacheprune.annotator.config import AnnotatorConfig, RecomputeAboveShare, RecomputePolicy
from cacheprune.annotator.sat import check_attention, raise_for_status
from cacheprune.annotator.segmentation import choose_segments, score_segments
from cacheprune.annotator.segments import Annotation, Segment


def annotate(
    attention: npt.NDArray[np.float32],
    private_mask: npt.NDArray[np.bool_],
    computed_mask: npt.NDArray[np.bool_],
    config: AnnotatorConfig,
    *,
    every_row: bool = False,
) -> Annotation:
    """Choose the self-contextualized segments of a prompt and the tokens to recompute in them.

    `attention[r, c]` is what prompt token r paid to token c, averaged over the layers and heads
    the engine chose; only the causal part (c <= r) of the rows of computed positions is read.
    `private_mask[i]` marks private tokens, `computed_mask[i]` the positions computed in this
    prefill (reused positions are never part of a new segment, and with
    `recompute_context="unshared"` attention to them does not mark a token for recomputation:
    they came from the pool, so every request that reuses this one's segments shares them too).
    With `every_row` (`attention` holds the rows of every position, as a pass that computed
    them all gives), a public stretch of fewer than `config.min_len` reused positions that
    borders eligible tokens only (or an end of the prompt) is eligible too: a short match of the
    pool inside new text does not cut it, nor does a short template reused before it.
    Called once per prefill, after it; pure (no state is kept or changed). O(n^2) time,
    O(n) memory beyond the inputs.
    """
    matrix = check_attention(attention)
    n = matrix.shape[0]
    private = _check_mask("private_mask", private_mask, n)
    computed = _check_mask("computed_mask", computed_mask, n)
    eligible = eligible_tokens(computed, private, config.min_len, every_row)
    renormalize = config.sink_mode == "renormalize"
    max_len = n if config.max_len is None else config.max_len

    starts, ends, status, row = choose_segments(
        matrix, eligible, config.sink_tokens, renormalize, config.ratio, config.min_len, max_len
    )
    raise_for_status(status, row)
    # Tokens this prefill reused came from the pool: shared text, like the earlier segments.
    reused = ~computed
    for start, end in zip(starts, ends, strict=True):
        reused[start:end] = False  # inside a segment: not before it, not shared
    segments = _scored(matrix, private, starts, ends, config, np.flatnonzero(reused))
    return Annotation(segments=segments, num_tokens=n, num_eligible=int(eligible.sum()))


def score_spans(
    attention: npt.NDArray[np.float32],
    private_mask: npt.NDArray[np.bool_],
    spans: list[tuple[int, int]],
    config: AnnotatorConfig,
) -> list[Segment]:
    """Scores and recompute marks for spans chosen elsewhere (fixed chunks, say), computed
    exactly as `annotate` computes them for its own segments. The spans are not checked for
    being self-contextualized or free of private tokens: that is the caller's choice. With
    `recompute_context="unshared"` they must be in order and must not overlap."""
    matrix = check_attention(attention)
    n = matrix.shape[0]
    private = _check_mask("private_mask", private_mask, n)
    for start, end in spans:
        if not 0 <= start < end <= n:
            raise ValueError(f"span [{start}, {end}) is not a non-empty span of the {n} tokens")
    if config.recompute_context == "unshared":
        for (a, b), (c, d) in itertools.pairwise(spans):
            if c < b:
                raise ValueError(
                    f"spans [{a}, {b}) and [{c}, {d}) overlap or are out of order; with "
                    'recompute_context="unshared" spans must be in order'
                )
    starts = np.array([start for start, _ in spans], dtype=np.int64)
    ends = np.array([end for _, end in spans], dtype=np.int64)
    return _scored(matrix, private, starts, ends, config)


def _scored(
    matrix: npt.NDArray[np.float32],
    private: npt.NDArray[np.bool_],
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    config: AnnotatorConfig,
    shared_columns: npt.NDArray[np.intp] | None = None,
) -> list[Segment]:
    shared = np.zeros(0, np.int64) if shared_columns is None else shared_columns.astype(np.int64)
    shares, internal, external, private_attention, status, row = score_segments(
        matrix, private, starts, ends, config.sink_tokens, config.sink_mode == "renormalize",
        config.recompute_context == "unshared", shared,
    )
    raise_for_status(status, row)
    segments: list[Segment] = []
    offset = 0
    for k in range(starts.shape[0]):
        start, end = int(starts[k]), int(ends[k])
        token_shares = shares[offset : offset + end - start]
        offset += end - start
        segments.append(
            Segment(
                start=start,
                end=end,
                recompute=recompute_marks(token_shares, config.recompute),
                internal=float(internal[k]),
                external=float(external[k]),
                private_attention=float(private_attention[k]),
            )
        )
    return segments


def recompute_marks(
    external_shares: npt.NDArray[np.float64], policy: RecomputePolicy
) -> npt.NDArray[np.bool_]:
    """Which tokens of one segment to recompute, given each token's external attention share."""
    if isinstance(policy, RecomputeAboveShare):
        return np.asarray(external_shares > policy.share, dtype=np.bool_)
    marks = np.zeros(external_shares.shape[0], dtype=np.bool_)
    num_marked = math.ceil(policy.fraction * external_shares.shape[0])
    # Stable order keeps the earlier token first among equal shares: earlier tokens sit closer
    # to the text before the segment.
    order = np.argsort(-external_shares, kind="stable")[:num_marked]
    marks[order] = external_shares[order] > 0.0
    return marks


def eligible_tokens(computed: npt.NDArray[np.bool_], private: npt.NDArray[np.bool_],
                    min_len: int, every_row: bool) -> npt.NDArray[np.bool_]:
    """The tokens a segment may hold: computed and public, and with `every_row` the short
    reused stretches between them."""
    eligible = computed & ~private
    if every_row:
        # NOTE: without this, a short stretch of new text that another entry happened to hold
        # (19 tokens of a document, say) cuts the new text in two, and what follows it leans on
        # the text before it: not self-contextualized on its own, so never published. A short
        # template before new text is published with it: a later prompt whose template differs
        # (a private value of another length) finds it there, joined to the text, and not only
        # in other entries as a stretch too short to match.
        eligible |= _short_gaps(eligible, ~computed & ~private, min_len)
    return eligible


def last_segment_end(computed_mask: npt.NDArray[np.bool_], private_mask: npt.NDArray[np.bool_],
                     min_len: int) -> int:
    """The latest a segment `annotate(..., every_row=True)` chooses can end: the end of the
    last run of `min_len` or more tokens a segment may hold (0 if there is none). Attention
    rows after it change no choice, so a pass that stops there finds the same segments."""
    n = computed_mask.shape[0]
    eligible = eligible_tokens(_check_mask("computed_mask", computed_mask, n),
                               _check_mask("private_mask", private_mask, n), min_len,
                               every_row=True)
    padded = np.concatenate(([False], eligible, [False]))
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    long_runs = edges[1::2][edges[1::2] - edges[::2] >= min_len]
    return int(long_runs[-1]) if long_runs.size else 0


def _short_gaps(
    eligible: npt.NDArray[np.bool_], gap: npt.NDArray[np.bool_], max_gap: int
) -> npt.NDArray[np.bool_]:
    """The runs of `gap` shorter than `max_gap` next to an eligible token, with nothing but
    eligible tokens or an end of the sequence on either side."""
    padded = np.concatenate(([False], gap, [False]))
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    # an end of the sequence counts as eligible, but at least one real neighbour must be
    before_ok = np.concatenate(([True], eligible))
    after_ok = np.concatenate((eligible, [True]))
    bridged = np.zeros(gap.shape[0], dtype=np.bool_)
    for start, end in zip(edges[::2], edges[1::2], strict=True):
        has_neighbour = (start > 0 and eligible[start - 1]) or (
            end < gap.shape[0] and eligible[end])
        if end - start < max_gap and before_ok[start] and after_ok[end] and has_neighbour:
            bridged[start:end] = True
    return bridged


def _check_mask(name: str, mask: object, n: int) -> npt.NDArray[np.bool_]:
    if not isinstance(mask, np.ndarray):
        raise TypeError(f"{name} must be a numpy array, got {type(mask).__name__}")
    if mask.dtype != np.bool_:
        raise ValueError(f"{name} must be a bool array, got {mask.dtype}")
    if mask.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) to match attention, got {mask.shape}")
    return np.ascontiguousarray(mask)
