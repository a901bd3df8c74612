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


def naive_stretches(
    request: Sequence[int],
    mask: Sequence[bool],
    entries: Sequence[Sequence[int]],
    min_length: int,
    anchor_stride: int | None = None,
) -> list[tuple[int, int]]:
    """[low, end) of every findable stretch: a maximal stretch of non-private request tokens
    equal to an entry's at one alignment that holds a whole anchor window (the `min_length`
    tokens at an entry offset 0, or with `anchor_stride` s at any multiple of s)."""
    found = []
    for entry in entries:
        if anchor_stride is None:
            anchors = [0]
        else:
            anchors = list(range(0, len(entry) - min_length + 1, anchor_stride))
        for shift in range(-len(entry), len(request) + 1):  # request position - entry offset
            p = max(shift, 0)
            while p < len(request):
                if p - shift >= len(entry):
                    break
                if mask[p] or request[p] != entry[p - shift]:
                    p += 1
                    continue
                low = p
                while (p < len(request) and p - shift < len(entry) and not mask[p]
                       and request[p] == entry[p - shift]):
                    p += 1
                if any(low <= a + shift and a + shift + min_length <= p for a in anchors):
                    found.append((low, p))
    return found


def naive_best_coverage(
    request: Sequence[int],
    mask: Sequence[bool],
    entries: Sequence[Sequence[int]],
    min_length: int,
    anchor_stride: int | None = None,
) -> int:
    """Most request tokens coverable by non-overlapping parts of >= min_length tokens of
    findable stretches (`naive_stretches`)."""
    stretches = naive_stretches(request, mask, entries, min_length, anchor_stride)
    return naive_stretch_cover(len(request), stretches, min_length)


def naive_stretch_cover(num_tokens: int, stretches: Sequence[tuple[int, int]],
                        min_length: int) -> int:
    """Most tokens of [0, num_tokens) coverable by non-overlapping parts of the stretches."""
    best = [0] * (num_tokens + 1)
    for p in range(num_tokens - 1, -1, -1):
        best[p] = best[p + 1]
        for low, end in stretches:
            if low <= p:
                for stop in range(p + min_length, end + 1):
                    best[p] = max(best[p], stop - p + best[stop])
    return best[0]
