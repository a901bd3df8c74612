"""Numba kernels: the best cover by self-contextualized segments, and per-token scores.

The DP runs over end positions j. It keeps one row of the summed-area table at a time
(`external[i]` = attention of rows [i, j) to columns < i, for every start i of the current run)
plus prefix sums of row totals, so internal/external of any candidate [i, j) is O(1) and the
whole search is O(n^2) time, O(n) memory.
NOTE: the full (n+1)^2 float64 table would be 512 MiB at n = 8k and building it alone would
take longer than the annotator's budget; the DP only ever needs the current row of it.
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

from cacheprune.annotator.sat import STATUS_OK, row_scale, scale_for, sum_range


@numba.njit(cache=True)
def choose_segments(
    attention: npt.NDArray[np.float32],
    eligible: npt.NDArray[np.bool_],
    sink_tokens: int,
    renormalize: bool,
    ratio: float,
    min_len: int,
    max_len: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int, int]:
    """Segments [starts[k], ends[k]) of eligible tokens, each at least `min_len` and at most
    `max_len` long with internal >= ratio * external, covering the most tokens (fewest segments
    among equal covers). Returns (starts, ends, status, row of the fault)."""
    n = attention.shape[0]
    covered = np.zeros(n + 1, dtype=np.int64)
    num_segments = np.zeros(n + 1, dtype=np.int64)
    ends_segment = np.zeros(n + 1, dtype=np.bool_)
    best_start = np.zeros(n + 1, dtype=np.int64)
    totals = np.zeros(n + 1, dtype=np.float64)  # totals[k] = sum of row totals of rows < k
    external = np.zeros(n, dtype=np.float64)
    run_prefix = np.zeros(n, dtype=np.float64)
    run_start = 0
    empty = np.zeros(0, dtype=np.int64)
    for end in range(1, n + 1):
        row = end - 1
        covered[end] = covered[row]
        num_segments[end] = num_segments[row]
        if not eligible[row]:
            totals[end] = totals[row]
            run_start = end
            continue
        # Raw prefix of this row's non-sink columns up to each start of the run, with the
        # row's sums and minimum for the scale and the input check on the way.
        sink_end = min(sink_tokens, end)
        sink_sum, low = sum_range(attention, row, 0, sink_end)
        first_counted = max(sink_end, run_start)
        running, before_low = sum_range(attention, row, sink_end, first_counted)
        low = min(low, before_low)
        for start in range(run_start, first_counted):
            run_prefix[start] = 0.0
        for start in range(first_counted, end):
            run_prefix[start] = running
            value = np.float64(attention[row, start])
            running += value
            low = min(low, value)
        scale, row_total, status = scale_for(sink_sum, running, low, renormalize)
        if status != STATUS_OK:
            return empty, empty, status, row
        totals[end] = totals[row] + row_total
        for start in range(run_start, end):
            external[start] += run_prefix[start] * scale
        lowest = max(run_start, end - max_len)
        for start in range(lowest, end - min_len + 1):
            outside = external[start]
            inside = (totals[end] - totals[start]) - outside
            if inside < ratio * outside:
                continue
            candidate = covered[start] + (end - start)
            count = num_segments[start] + 1
            if candidate > covered[end] or (
                candidate == covered[end] and count < num_segments[end]
            ):
                covered[end] = candidate
                num_segments[end] = count
                ends_segment[end] = True
                best_start[end] = start
    num = num_segments[n]
    starts = np.zeros(num, dtype=np.int64)
    ends = np.zeros(num, dtype=np.int64)
    end = n
    k = num
    while end > 0:
        if ends_segment[end]:
            k -= 1
            starts[k] = best_start[end]
            ends[k] = end
            end = int(best_start[end])
        else:
            end -= 1
    return starts, ends, STATUS_OK, 0


@numba.njit(cache=True)
def score_segments(
    attention: npt.NDArray[np.float32],
    private: npt.NDArray[np.bool_],
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    sink_tokens: int,
    renormalize: bool,
) -> tuple[
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
]:
    """Per token of every segment (concatenated, in order): the share of its attention that goes
    to tokens before its segment. Per segment: internal, external and private attention."""
    num = starts.shape[0]
    internal = np.zeros(num, dtype=np.float64)
    external = np.zeros(num, dtype=np.float64)
    private_attention = np.zeros(num, dtype=np.float64)
    num_covered = 0
    for k in range(num):
        num_covered += ends[k] - starts[k]
    shares = np.zeros(num_covered, dtype=np.float64)
    private_columns = np.flatnonzero(private)
    offset = 0
    for k in range(num):
        start = starts[k]
        for row in range(start, ends[k]):
            scale, row_total, _ = row_scale(attention, row, sink_tokens, renormalize)
            outside = sum_range(attention, row, min(sink_tokens, start), start)[0] * scale
            on_private = 0.0
            for col in private_columns:
                if col >= start:
                    break
                if col >= sink_tokens:
                    on_private += np.float64(attention[row, col])
            external[k] += outside
            internal[k] += row_total - outside
            private_attention[k] += on_private * scale
            if row_total > 0.0:
                shares[offset] = outside / row_total
            offset += 1
    return shares, internal, external, private_attention
