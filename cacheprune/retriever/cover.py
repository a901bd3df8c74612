"""The set of non-overlapping matches that covers the most request tokens.

Each candidate is a stretch `[low, end)` of the request that equals, token for token, a stretch
of one entry: any part of it of at least `min_length` tokens is a valid match (a part of the
entry). A DP over request positions from the right: `best[p]`, the most tokens coverable from p
on, is `best[p + 1]` (token p left uncovered) or, for a stretch that holds p with at least
`min_length` tokens from p, `e - p + best[e]` for its best end e. The best end's value
`e + best[e]` gains one term per step to the left (the end `p + min_length`), so each stretch
keeps it as a running maximum: O(positions x stretches) time, O(positions + stretches) memory.
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

_NEG = np.int64(-(1 << 62))


@numba.njit(cache=True)
def _best_stretch_cover(
    lows: npt.NDArray[np.int64], ends: npt.NDArray[np.int64], min_length: int, num_tokens: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    num_stretches = lows.shape[0]
    best = np.zeros(num_tokens + 1, dtype=np.int64)
    count = np.zeros(num_tokens + 1, dtype=np.int64)  # matches of best[p] (fewest among ties)
    chosen_stretch = np.full(num_tokens, -1, dtype=np.int64)
    chosen_end = np.zeros(num_tokens, dtype=np.int64)
    running = np.full(num_stretches, _NEG, dtype=np.int64)  # max of e + best[e] so far
    running_count = np.zeros(num_stretches, dtype=np.int64)
    running_end = np.zeros(num_stretches, dtype=np.int64)
    for p in range(num_tokens - 1, -1, -1):
        best[p] = best[p + 1]
        count[p] = count[p + 1]
        for c in range(num_stretches):
            if p < lows[c] or p + min_length > ends[c]:
                continue
            e = p + min_length  # the end this step makes reachable
            if e + best[e] > running[c] or (e + best[e] == running[c]
                                            and count[e] < running_count[c]):
                running[c] = e + best[e]
                running_count[c] = count[e]
                running_end[c] = e
            value = running[c] - p
            if value > best[p] or (value == best[p] and running_count[c] + 1 < count[p]):
                best[p] = value
                count[p] = running_count[c] + 1
                chosen_stretch[p] = c
                chosen_end[p] = running_end[c]
    # Walk forward: take the choice made at p, or leave token p uncovered.
    starts = np.zeros(num_tokens, dtype=np.int64)
    stops = np.zeros(num_tokens, dtype=np.int64)
    which = np.zeros(num_tokens, dtype=np.int64)
    num_chosen = 0
    p = 0
    while p < num_tokens:
        if chosen_stretch[p] >= 0:
            starts[num_chosen] = p
            stops[num_chosen] = chosen_end[p]
            which[num_chosen] = chosen_stretch[p]
            num_chosen += 1
            p = chosen_end[p]
        else:
            p += 1
    return starts[:num_chosen], stops[:num_chosen], which[:num_chosen]


def best_cover(
    lows: npt.NDArray[np.int64], ends: npt.NDArray[np.int64], min_length: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(starts, stops, stretch index) of the chosen matches, in request order: non-overlapping,
    each at least `min_length` tokens and inside its stretch, covering the most tokens (with the
    fewest matches among equal covers).

    Every stretch `[lows[c], ends[c])` must hold at least `min_length` tokens."""
    if lows.shape != ends.shape or lows.ndim != 1:
        raise ValueError(f"lows {lows.shape} and ends {ends.shape} must be 1-D and equal")
    if min_length < 1:
        raise ValueError(f"min_length must be at least 1, got {min_length}")
    if lows.size and (int(lows.min()) < 0 or int((ends - lows).min()) < min_length):
        raise ValueError("every stretch must start at 0 or later and hold >= min_length tokens")
    num_tokens = int(ends.max()) if ends.size else 0
    return _best_stretch_cover(
        np.ascontiguousarray(lows, dtype=np.int64), np.ascontiguousarray(ends, dtype=np.int64),
        min_length, num_tokens,
    )
