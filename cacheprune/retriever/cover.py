"""The set of non-overlapping matches that covers the most request tokens.

Each candidate is `(start, max_length)`: the request from `start` equals the first `max_length`
tokens of some entry, so any length in `[min_length, max_length]` is also a valid match (a
shorter prefix of the same entry). Cutting a match short only pays when the next chosen match
starts exactly where it ends, so a DP over candidates (sorted by start) only needs, besides
"skip" and "take it whole", the option "end at the start of a later candidate" — a range
maximum, answered by a segment tree: O(C log C) for C candidates.
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

_NEG = np.int64(-(1 << 62))


@numba.njit(cache=True)
def _best_cover(
    starts: npt.NDArray[np.int64], max_lengths: npt.NDArray[np.int64], min_length: int
) -> npt.NDArray[np.int64]:
    num_candidates = starts.shape[0]
    best = np.zeros(num_candidates + 1, dtype=np.int64)  # best[c]: cover using candidates >= c
    chosen_length = np.zeros(num_candidates, dtype=np.int64)  # 0 means "skip"
    size = 1
    while size < num_candidates + 1:
        size *= 2
    # tree leaf d holds starts[d] + best[d]: the cover if a match ends exactly at starts[d].
    tree = np.full(2 * size, _NEG, dtype=np.int64)
    for c in range(num_candidates - 1, -1, -1):
        start = starts[c]
        length = max_lengths[c]
        best_value = best[c + 1]
        best_length = np.int64(0)
        after = np.searchsorted(starts, start + length)  # first candidate free of this match
        whole = length + best[after]
        if whole > best_value:
            best_value = whole
            best_length = length
        lo = np.searchsorted(starts, start + min_length) + size
        hi = after + size  # exclusive
        cut_value = _NEG
        while lo < hi:
            if lo & 1:
                cut_value = max(cut_value, tree[lo])
                lo += 1
            if hi & 1:
                hi -= 1
                cut_value = max(cut_value, tree[hi])
            lo //= 2
            hi //= 2
        if cut_value - start > best_value:
            best_value = cut_value - start
            best_length = np.int64(-1)  # resolved below: which later start gave the maximum
            for d in range(c + 1, after):
                if starts[d] - start >= min_length and starts[d] + best[d] == cut_value:
                    best_length = starts[d] - start
                    break
        best[c] = best_value
        chosen_length[c] = best_length
        node = c + size
        tree[node] = start + best_value
        node //= 2
        while node >= 1:
            tree[node] = max(tree[2 * node], tree[2 * node + 1])
            node //= 2
    # Walk forward: after a match [s, s + l), the next usable candidate is the first at >= s + l.
    result = np.zeros(num_candidates, dtype=np.int64)
    c = 0
    while c < num_candidates:
        if chosen_length[c] > 0:
            result[c] = chosen_length[c]
            c = np.searchsorted(starts, starts[c] + chosen_length[c])
        else:
            c += 1
    return result


def best_cover(
    starts: npt.NDArray[np.int64], max_lengths: npt.NDArray[np.int64], min_length: int
) -> npt.NDArray[np.int64]:
    """Chosen length per candidate (0 = not used); chosen matches never overlap.

    `starts` must be strictly increasing and every `max_lengths[c] >= min_length`.
    """
    if starts.shape != max_lengths.shape or starts.ndim != 1:
        raise ValueError(
            f"starts {starts.shape} and max_lengths {max_lengths.shape} must be 1-D and equal"
        )
    if starts.size and (np.any(np.diff(starts) <= 0) or int(max_lengths.min()) < min_length):
        raise ValueError("starts must be strictly increasing and every length >= min_length")
    return _best_cover(
        np.ascontiguousarray(starts, dtype=np.int64),
        np.ascontiguousarray(max_lengths, dtype=np.int64),
        min_length,
    )
