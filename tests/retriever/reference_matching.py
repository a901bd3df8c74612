"""Naive twins of the retriever, written for clarity: pure Python loops, no hashing."""

from __future__ import annotations

from collections.abc import Sequence

MERSENNE_61 = (1 << 61) - 1


def naive_window_hash(tokens: Sequence[int], base: int) -> int:
    value = 0
    for token in tokens:
        value = (value * base + int(token)) % MERSENNE_61
    return value


def naive_longest_prefix(
    request: Sequence[int], mask: Sequence[bool], start: int, entry: Sequence[int]
) -> int:
    length = 0
    while (
        start + length < len(request)
        and length < len(entry)
        and not mask[start + length]
        and request[start + length] == entry[length]
    ):
        length += 1
    return length


def naive_best_coverage(
    request: Sequence[int],
    mask: Sequence[bool],
    entries: Sequence[Sequence[int]],
    min_length: int,
    anchor_stride: int | None = None,
) -> int:
    """Most request tokens coverable by non-overlapping entry parts of >= min_length tokens.

    A part starts at an entry's beginning, or, with `anchor_stride` s, at any offset that is a
    multiple of s and leaves at least `min_length` tokens."""
    if anchor_stride is not None:
        entries = [
            entry[offset:]
            for entry in entries
            for offset in range(0, len(entry) - min_length + 1, anchor_stride)
        ]
    num_tokens = len(request)
    longest = [
        max((naive_longest_prefix(request, mask, p, entry) for entry in entries), default=0)
        for p in range(num_tokens)
    ]
    best = [0] * (num_tokens + 1)
    for p in range(num_tokens - 1, -1, -1):
        best[p] = best[p + 1]
        for length in range(min_length, longest[p] + 1):
            best[p] = max(best[p], length + best[p + length])
    return best[0]
