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

from cacheprune.annotator.sat import STATUS_OK, scale_for, sum_range


@numba.njit(cache=True)
def _add_row_prefix(
    attention: npt.NDArray[np.float32],
    row: int,
    col_start: int,
    col_end: int,
    base: float,
    scale: float,
    external: npt.NDArray[np.float64],
) -> None:
    """external[c] += scale * (base + attention[row, col_start:c].sum()) for c in
    [col_start, col_end)."""
    # Four columns per step, with the running sum advanced once per step: the add-latency chain
    # is a quarter as long as a plain running sum's.
    values = attention[row, col_start:col_end]
    targets = external[col_start:col_end]
    num = col_end - col_start
    k = 0
    while k + 4 <= num:
        v0 = np.float64(values[k])
        v1 = np.float64(values[k + 1])
        v2 = np.float64(values[k + 2])
        v3 = np.float64(values[k + 3])
        first_two = v0 + v1
        targets[k] += base * scale
        targets[k + 1] += (base + v0) * scale
        targets[k + 2] += (base + first_two) * scale
        targets[k + 3] += ((base + first_two) + v2) * scale
        base += first_two + (v2 + v3)
        k += 4
    while k < num:
        targets[k] += base * scale
        base += np.float64(values[k])
        k += 1


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
    # rank[i] orders start i as a candidate: more covered before it minus its position first,
    # then fewer segments, then i itself. Packing all three in one int64 turns the candidate
    # scan into a max-reduction the compiler can vectorize. All ranks are > 0.
    rank = np.zeros(n + 1, dtype=np.int64)
    rank[0] = ((n + 1) * (n + 2) + (n + 1)) * (n + 1)
    run_start = 0
    empty = np.zeros(0, dtype=np.int64)
    for end in range(1, n + 1):
        row = end - 1
        covered[end] = covered[row]
        num_segments[end] = num_segments[row]
        if eligible[row]:
            sink_end = min(sink_tokens, end)
            first_counted = max(sink_end, run_start)
            sink_sum, low = sum_range(attention, row, 0, sink_end)
            before_run, before_low = sum_range(attention, row, sink_end, first_counted)
            in_run, in_run_low = sum_range(attention, row, first_counted, end)
            scale, row_total, status = scale_for(
                sink_sum, before_run + in_run, min(low, min(before_low, in_run_low)), renormalize
            )
            if status != STATUS_OK:
                return empty, empty, status, row
            totals[end] = totals[row] + row_total
            # Starts before first_counted have only sink columns before them: nothing to add.
            _add_row_prefix(attention, row, first_counted, end, before_run, scale, external)
            # internal >= ratio * external  <=>  rows' total >= (1 + ratio) * external
            limit = totals[end]
            factor = 1.0 + ratio
            best = 0
            lowest = max(run_start, end - max_len)
            highest = end - min_len + 1
            if highest > lowest:
                # NOTE: slices indexed from 0 let the compiler drop negative-index handling and
                # vectorize this scan (4x faster than indexing the full arrays).
                start_totals = totals[lowest:highest]
                start_external = external[lowest:highest]
                start_rank = rank[lowest:highest]
                for k in range(highest - lowest):
                    passes = limit - start_totals[k] >= factor * start_external[k]
                    best = max(best, start_rank[k] if passes else 0)
            if best > 0:
                start = best % (n + 1)
                candidate = covered[start] + (end - start)
                count = num_segments[start] + 1
                if candidate > covered[end] or (
                    candidate == covered[end] and count < num_segments[end]
                ):
                    covered[end] = candidate
                    num_segments[end] = count
                    ends_segment[end] = True
                    best_start[end] = start
        else:
            totals[end] = totals[row]
            run_start = end
        rank[end] = (
            (covered[end] - end + n + 1) * (n + 2) + (n + 1 - num_segments[end])
        ) * (n + 1) + end
    num = int(num_segments[n])
    starts = np.zeros(num, dtype=np.int64)
    ends = np.zeros(num, dtype=np.int64)
    end = n
    slot = num
    while end > 0:
        if ends_segment[end]:
            slot -= 1
            starts[slot] = best_start[end]
            ends[slot] = end
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
    earlier_segments_shared: bool,
    shared_columns: npt.NDArray[np.int64],
) -> tuple[
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    int,
    int,
]:
    """Per token of every segment (concatenated, in order): the share of its attention that goes
    to tokens before its segment, leaving out, when `earlier_segments_shared`, the earlier
    segments' tokens and the tokens at `shared_columns` (ascending; not in any segment).
    Per segment: internal, external and private attention.
    Then a status code and the row of the fault, as `choose_segments`."""
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
            # One pass over the row, in three disjoint parts: sinks, before the segment, inside.
            sink_end = min(sink_tokens, start)
            sink_sum, sink_low = sum_range(attention, row, 0, min(sink_tokens, row + 1))
            before, before_low = sum_range(attention, row, sink_end, start)
            inside, inside_low = sum_range(attention, row, max(sink_tokens, start), row + 1)
            scale, row_total, status = scale_for(
                sink_sum, before + inside, min(sink_low, min(before_low, inside_low)),
                renormalize,
            )
            if status != STATUS_OK:
                return shares, internal, external, private_attention, status, row
            outside = before * scale
            unshared = before
            if earlier_segments_shared:
                for j in range(k):
                    on_segment, _ = sum_range(attention, row, max(sink_tokens, starts[j]), ends[j])
                    unshared -= on_segment
                for col in shared_columns:
                    if col >= start:
                        break
                    if col >= sink_tokens:
                        unshared -= np.float64(attention[row, col])
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
                shares[offset] = max(unshared, 0.0) * scale / row_total
            offset += 1
    return shares, internal, external, private_attention, STATUS_OK, 0
