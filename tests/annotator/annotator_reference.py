"""Independent reference for the annotator tests: direct numpy sums and exhaustive search."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def synthetic_attention(
    n: int, seed: int, computed: npt.NDArray[np.bool_] | None = None
) -> npt.NDArray[np.float32]:
    """Causal rows that sum to 1, with a sink on column 0 and a random locality, so that some
    spans are self-contextualized and some are not. Rows of reused positions are zero."""
    rng = np.random.default_rng(seed)
    distance = np.arange(n)[:, None] - np.arange(n)[None, :]
    decay = rng.uniform(0.0, 1.5, size=(n, 1))
    weights = rng.random((n, n)) * np.exp(-decay * np.maximum(distance, 0))
    weights[rng.random((n, n)) < 0.1] = 0.0
    np.fill_diagonal(weights, rng.uniform(0.05, 1.0, size=n))
    weights[:, 0] += rng.uniform(0.0, 3.0, size=n)
    weights = np.tril(weights)
    weights /= weights.sum(axis=1, keepdims=True)
    if computed is not None:
        weights[~computed] = 0.0
    return weights.astype(np.float32)


def treated(
    attention: npt.NDArray[np.float32], sink_tokens: int, renormalize: bool
) -> npt.NDArray[np.float64]:
    """Causal part in float64, sink columns zeroed, rows rescaled to 1 when asked."""
    weights = np.tril(attention.astype(np.float64))
    weights[:, :sink_tokens] = 0.0
    if renormalize:
        totals = weights.sum(axis=1)
        has_mass = totals > 0
        weights[has_mass] /= totals[has_mass, None]
    return weights


def direct_internal(weights: npt.NDArray[np.float64], start: int, end: int) -> float:
    return float(sum(weights[r, start : r + 1].sum() for r in range(start, end)))


def direct_external(weights: npt.NDArray[np.float64], start: int, end: int) -> float:
    return float(sum(weights[r, :start].sum() for r in range(start, end)))


def valid_intervals(
    weights: npt.NDArray[np.float64],
    eligible: npt.NDArray[np.bool_],
    min_len: int,
    max_len: int,
    ratio: float,
) -> tuple[list[tuple[int, int]], float]:
    """Every self-contextualized interval of eligible tokens, and how close the nearest
    candidate came to the threshold (so a caller can skip float ties)."""
    n = len(eligible)
    found: list[tuple[int, int]] = []
    closest = np.inf
    for start in range(n):
        for end in range(start + min_len, min(n, start + max_len) + 1):
            if not eligible[start:end].all():
                break
            inside = direct_internal(weights, start, end)
            outside = direct_external(weights, start, end)
            if outside > 0.0:  # with nothing outside, both sides agree exactly
                closest = min(closest, abs(inside - ratio * outside))
            if inside >= ratio * outside:
                found.append((start, end))
    return found, closest


def bridged_gaps(
    private: npt.NDArray[np.bool_], computed: npt.NDArray[np.bool_], min_len: int
) -> npt.NDArray[np.bool_]:
    """Token by token: public and reused, within such a stretch shorter than `min_len` that has
    a computed public token or an end of the prompt on either side, and at least one such token
    (what `annotate(..., every_row=True)` may put in a segment)."""
    n = len(computed)
    gap = ~computed & ~private
    eligible = computed & ~private
    bridged = np.zeros(n, dtype=np.bool_)
    for i in np.flatnonzero(gap):
        before = i
        while before >= 0 and gap[before]:
            before -= 1
        after = i
        while after < n and gap[after]:
            after += 1
        sides = [bool(eligible[before])] if before >= 0 else []
        sides += [bool(eligible[after])] if after < n else []
        bridged[i] = after - before - 1 < min_len and len(sides) > 0 and all(sides)
    return bridged


def best_cover(n: int, intervals: list[tuple[int, int]]) -> tuple[int, int]:
    """(tokens covered, -segments) of the best set of non-overlapping intervals, by trying
    every such set."""
    by_start: dict[int, list[int]] = {}
    for start, end in intervals:
        by_start.setdefault(start, []).append(end)
    best = (0, 0)

    def walk(position: int, covered: int, count: int) -> None:
        nonlocal best
        if position >= n:
            best = max(best, (covered, -count))
            return
        walk(position + 1, covered, count)
        for end in by_start.get(position, []):
            walk(end, covered + end - position, count + 1)

    walk(0, 0, 0)
    return best
