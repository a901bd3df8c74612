"""A prompt seen without its private tokens: the sequence the pool is searched and filled with.

Taking the private tokens out joins the public text around them: a template's short stretches
between private values ("\\nEmail: ", "\\nPhone: "), the system prompt before the first one and
the document around a private note become one long public sequence, found and published like
any other. Nothing private is ever hashed, compared or stored, and a private value's length
does not show (its tokens are simply absent).

A match in this view covers public tokens that may be apart in the prompt (a private value
between them); `pieces` cuts it where the prompt positions jump, into the contiguous spans a
prefill plan reuses (each token's KV is moved from where it was computed to its own position).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cacheprune.tokens import MaskArray, TokenIds


@dataclass(slots=True, frozen=True)
class PublicView:
    """Tokens of a prompt as the pool sees them, in order, and where each sits in the prompt.

    `of` takes the private tokens out (the product's view); `whole` keeps every token and
    flags the private ones, which the pool then never looks up nor stores (the fixed-chunk
    baseline's view, whose chunks are cut at fixed prompt positions)."""

    token_ids: TokenIds
    positions: npt.NDArray[np.int64]  # prompt position of each token of the view, ascending
    private: MaskArray  # of the view's tokens; all False in a view made by `of`

    @classmethod
    def of(cls, token_ids: TokenIds, private: MaskArray) -> PublicView:
        positions = np.flatnonzero(~private).astype(np.int64)
        return cls(token_ids[positions], positions, np.zeros(positions.shape[0], np.bool_))

    @classmethod
    def whole(cls, token_ids: TokenIds, private: MaskArray) -> PublicView:
        return cls(token_ids, np.arange(token_ids.shape[0], dtype=np.int64), private)

    @property
    def num_tokens(self) -> int:
        return int(self.positions.shape[0])

    def pieces(self, start: int, length: int) -> list[tuple[int, int, int]]:
        """(prompt start, offset in [start, start + length), length) of each run of consecutive
        prompt positions that tokens [start, start + length) of the view occupy."""
        if not (0 <= start and length >= 1 and start + length <= self.num_tokens):
            raise ValueError(f"tokens [{start}, {start + length}) lie outside the "
                             f"{self.num_tokens} tokens of the view")
        positions = self.positions[start:start + length]
        breaks = np.flatnonzero(np.diff(positions) != 1) + 1
        bounds = [0, *breaks.tolist(), length]
        return [(int(positions[a]), a, b - a) for a, b in zip(bounds, bounds[1:], strict=False)]


def public_attention(attention: npt.NDArray[np.float32], private: MaskArray,
                     sink_tokens: int) -> tuple[npt.NDArray[np.float32], int]:
    """The captured attention seen from the public view, for the annotator: rows and columns of
    the public tokens, plus one column, inserted after the first `sink_tokens` public tokens,
    that holds each row's attention to every private token (the real attention sinks left out).

    A segment of the view may then hold public tokens from both sides of a private value, while
    the attention they paid to it still counts as coming from outside the segment (the inserted
    column lies before every segment). Returns the matrix and the index of the inserted column:
    view index i >= that index is public token i - 1.
    """
    public = np.flatnonzero(~private)
    inserted = min(sink_tokens, public.shape[0])
    private_columns = np.flatnonzero(private)
    private_columns = private_columns[private_columns >= sink_tokens]
    size = public.shape[0] + 1
    matrix = np.zeros((size, size), dtype=np.float32)
    order = np.concatenate((public[:inserted], [-1], public[inserted:]))
    kept = np.flatnonzero(order >= 0)
    matrix[np.ix_(kept, kept)] = attention[np.ix_(public, public)]
    if private_columns.size:
        matrix[kept, inserted] = attention[np.ix_(public, private_columns)].sum(
            axis=1, dtype=np.float64)
    return matrix, inserted


def has_run(mask: MaskArray, length: int) -> bool:
    """Whether `mask` holds `length` or more consecutive True values."""
    padded = np.concatenate(([False], mask, [False]))
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    return bool(edges.size) and int((edges[1::2] - edges[::2]).max()) >= length
