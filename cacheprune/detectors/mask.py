"""From character spans to a per-token boolean mask (True = private)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from cacheprune.detectors.base import Span
from cacheprune.detectors.chain import CharRange, DetectionResult, DetectorChain
from cacheprune.tokens import MaskArray


@dataclass(slots=True)
class TokenMask:
    """The mask of one request and the detection it came from."""

    mask: MaskArray
    detection: DetectionResult

    @property
    def num_private(self) -> int:
        return int(self.mask.sum())


def token_mask(
    spans: Iterable[Span],
    offsets: Sequence[tuple[int, int]],
    num_tokens: int | None = None,
    widen: int = 0,
) -> MaskArray:
    """A token is private if any of its characters lies in a span; then widen by `widen` tokens.

    `offsets` are the tokenizer's per-token [start, end) character offsets. Tokens with no
    characters (special tokens, offsets (s, s)) are private only through widening.
    """
    if num_tokens is not None and num_tokens != len(offsets):
        raise ValueError(f"num_tokens={num_tokens} but {len(offsets)} token offsets were given")
    if widen < 0:
        raise ValueError(f"widen must be >= 0 tokens, got {widen}")
    count = len(offsets)
    if count == 0:
        return np.zeros(0, dtype=np.bool_)
    bounds = np.asarray(offsets, dtype=np.int64).reshape(count, 2)
    starts, ends = bounds[:, 0], bounds[:, 1]
    if (starts < 0).any() or (ends < starts).any():
        raise ValueError("token offsets must satisfy 0 <= start <= end")
    span_list = list(spans)
    text_end = int(max(ends.max(), max((s.end for s in span_list), default=0)))
    # Characters covered by any span, as a prefix count: a token holds a private character
    # iff the count grows across its [start, end).
    delta = np.zeros(text_end + 1, dtype=np.int64)
    for span in span_list:
        delta[span.start] += 1
        delta[span.end] -= 1
    covered = np.cumsum(delta[:-1]) > 0
    prefix = np.concatenate(([0], np.cumsum(covered)))
    mask = prefix[ends] > prefix[starts]
    return widen_mask(mask, widen)


def widen_mask(mask: MaskArray, widen: int) -> MaskArray:
    """Also mark the `widen` tokens on each side of every private token."""
    if widen == 0 or not mask.any():
        return mask
    private = np.flatnonzero(mask)
    diff = np.zeros(len(mask) + 1, dtype=np.int64)
    np.add.at(diff, np.maximum(private - widen, 0), 1)
    np.add.at(diff, np.minimum(private + widen + 1, len(mask)), -1)
    return np.cumsum(diff[:-1]) > 0


def mask_text(
    chain: DetectorChain,
    text: str,
    offsets: Sequence[tuple[int, int]],
    public_ranges: Iterable[CharRange] = (),
    widen: int = 0,
    skipped: Sequence[CharRange] = (),
) -> TokenMask:
    """Detect (but over `public_ranges` and `skipped`: `DetectorChain.run`), then mark tokens;
    a chain that failed closed makes every token private."""
    detection = chain.run(text, public_ranges, skipped)
    if detection.failed_closed:
        return TokenMask(np.ones(len(offsets), dtype=np.bool_), detection)
    return TokenMask(token_mask(detection.spans, offsets, widen=widen), detection)
