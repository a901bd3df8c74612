"""Summed-area table over prefill attention, with attention sinks taken out.

Every sum here reads only the causal part of the matrix (column <= row): entries above the
diagonal are ignored rather than checked, because reading them would double the memory traffic
of the annotator, and a causal engine writes zeros there anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import numpy.typing as npt

# Status codes the kernels return instead of raising, so the caller can name the row.
STATUS_OK = 0
STATUS_BAD_VALUE = 1
STATUS_EMPTY_ROW = 2


@numba.njit(cache=True)
def sum_range(
    attention: npt.NDArray[np.float32], row: int, col_start: int, col_end: int
) -> tuple[float, float]:
    """Float64 sum and minimum of attention[row, col_start:col_end]."""
    # Four accumulators break the add-latency chain; this loop runs over most of the matrix.
    acc0 = acc1 = acc2 = acc3 = 0.0
    low0 = low1 = low2 = low3 = np.inf
    values = attention[row, col_start:col_end]
    num = col_end - col_start
    k = 0
    while k + 4 <= num:
        v0 = np.float64(values[k])
        v1 = np.float64(values[k + 1])
        v2 = np.float64(values[k + 2])
        v3 = np.float64(values[k + 3])
        acc0 += v0
        acc1 += v1
        acc2 += v2
        acc3 += v3
        low0 = min(low0, v0)
        low1 = min(low1, v1)
        low2 = min(low2, v2)
        low3 = min(low3, v3)
        k += 4
    while k < num:
        v0 = np.float64(values[k])
        acc0 += v0
        low0 = min(low0, v0)
        k += 1
    return (acc0 + acc1) + (acc2 + acc3), min(min(low0, low1), min(low2, low3))


@numba.njit(cache=True)
def scale_for(
    sink_sum: float, rest: float, low: float, renormalize: bool
) -> tuple[float, float, int]:
    """Scale for a row's non-sink entries, their scaled total, and a status code, from the raw
    sums of its sink and non-sink entries and its smallest entry.

    With `renormalize` the non-sink entries are rescaled to sum to 1 (a row that put all its
    attention on sinks is left at zero: it depends on nothing but the sequence start).
    """
    raw_total = sink_sum + rest
    # A NaN or inf anywhere makes the total non-finite.
    if not (low >= 0.0 and raw_total < np.inf):
        return 0.0, 0.0, STATUS_BAD_VALUE
    if raw_total <= 0.0:
        return 0.0, 0.0, STATUS_EMPTY_ROW
    if not renormalize:
        return 1.0, rest, STATUS_OK
    if rest > 0.0:
        return 1.0 / rest, 1.0, STATUS_OK
    return 0.0, 0.0, STATUS_OK


@numba.njit(cache=True)
def row_scale(
    attention: npt.NDArray[np.float32], row: int, sink_tokens: int, renormalize: bool
) -> tuple[float, float, int]:
    """`scale_for` of one causal row (columns 0..row)."""
    sink_end = min(sink_tokens, row + 1)
    sink_sum, sink_low = sum_range(attention, row, 0, sink_end)
    rest, rest_low = sum_range(attention, row, sink_end, row + 1)
    return scale_for(sink_sum, rest, min(sink_low, rest_low), renormalize)


@numba.njit(cache=True)
def _build_table(
    attention: npt.NDArray[np.float32], sink_tokens: int, renormalize: bool
) -> tuple[npt.NDArray[np.float64], int, int]:
    n = attention.shape[0]
    table = np.zeros((n + 1, n + 1), dtype=np.float64)
    for row in range(n):
        scale, _, status = row_scale(attention, row, sink_tokens, renormalize)
        if status == STATUS_BAD_VALUE:
            return table, status, row
        running = 0.0
        for col in range(n):
            if col <= row and col >= sink_tokens:
                running += np.float64(attention[row, col]) * scale
            table[row + 1, col + 1] = table[row, col + 1] + running
    return table, STATUS_OK, 0


@dataclass(slots=True)
class SummedAreaTable:
    """2-D prefix sums of the sink-treated causal attention: `table[r, c]` = sum of rows < r,
    columns < c. Any rectangle, hence any segment's internal/external attention, is O(1).

    Holds (n+1)^2 float64: fine for analysis and tests; `annotate` streams the same sums row by
    row instead of keeping the table.
    """

    table: npt.NDArray[np.float64]

    @classmethod
    def build(
        cls, attention: npt.NDArray[np.float32], sink_tokens: int = 0, renormalize: bool = False
    ) -> SummedAreaTable:
        matrix = check_attention(attention)
        if sink_tokens < 0:
            raise ValueError(f"sink_tokens must be >= 0, got {sink_tokens}")
        table, status, row = _build_table(matrix, sink_tokens, renormalize)
        raise_for_status(status, row)
        return cls(table)

    @property
    def num_tokens(self) -> int:
        return self.table.shape[0] - 1

    def block(self, row_start: int, row_end: int, col_start: int, col_end: int) -> float:
        """Sum of rows [row_start, row_end) over columns [col_start, col_end)."""
        t = self.table
        return float(
            t[row_end, col_end] - t[row_start, col_end] - t[row_end, col_start]
            + t[row_start, col_start]
        )

    def internal(self, start: int, end: int) -> float:
        """Attention that tokens [start, end) pay to tokens of [start, end) (causal, so the
        square block equals the triangle of columns start..row)."""
        self._check_span(start, end)
        return self.block(start, end, start, end)

    def external(self, start: int, end: int) -> float:
        """Attention that tokens [start, end) pay to the tokens before `start`."""
        self._check_span(start, end)
        return self.block(start, end, 0, start)

    def _check_span(self, start: int, end: int) -> None:
        if not 0 <= start <= end <= self.num_tokens:
            raise ValueError(
                f"span [{start}, {end}) is not inside a prompt of {self.num_tokens} tokens"
            )


def check_attention(attention: object) -> npt.NDArray[np.float32]:
    """The attention matrix as a C-contiguous float32 array, or a ValueError naming the fault."""
    if not isinstance(attention, np.ndarray):
        raise TypeError(f"attention must be a numpy array, got {type(attention).__name__}")
    if attention.ndim != 2 or attention.shape[0] != attention.shape[1]:
        raise ValueError(f"attention must be a square n x n matrix, got shape {attention.shape}")
    if attention.dtype != np.float32:
        raise ValueError(f"attention must be float32, got {attention.dtype}")
    return np.ascontiguousarray(attention)


def raise_for_status(status: int, row: int) -> None:
    if status == STATUS_BAD_VALUE:
        raise ValueError(
            f"attention row {row} holds a negative or non-finite value on or below the diagonal"
        )
    if status == STATUS_EMPTY_ROW:
        raise ValueError(
            f"attention row {row} is all zeros, but its position is read (marked computed, or "
            "a short reused stretch read with every_row): pass the attention rows of every "
            "position read"
        )
    assert status == STATUS_OK, f"unknown kernel status {status}"
