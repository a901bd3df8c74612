"""Token ids and private masks as the library passes them around, and the checks that make
them so.

- `TokenIds` (int64) is the library's token-id type from a request's admission on: the served
  request and its views, what the pool's sessions take and what the pool returns
  (`stored_token_ids`), the caches' audits.
- `TokenArray` (contiguous little-endian uint32) is the form the pool and the retriever hash
  and store as is: made at the pool session's boundary (`as_token_array`, which also checks
  the ids) and never handed back.
- Lists only where ids arrive one at a time (the tokenizer's `Encoding.ids`, the tokens a
  generation appends, vLLM's prompts), made `TokenIds` where they enter the library
  (`as_token_ids`); tensors only at the model's input.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

TokenArray = npt.NDArray[np.uint32]  # contiguous little-endian uint32: hashed and stored as is
MaskArray = npt.NDArray[np.bool_]  # one flag per token: True where the token is private
TokenIds = npt.NDArray[np.int64]  # what a tokenizer returns, as the model takes it

_MAX_TOKEN_ID = 2**32 - 1


def as_token_array(token_ids: Sequence[int] | npt.NDArray[np.integer]) -> TokenArray:
    """Token ids as a contiguous little-endian uint32 array; rejects ids that do not fit."""
    array = np.asarray(token_ids)
    if array.ndim != 1:
        raise ValueError(f"token_ids must be 1-D, got shape {array.shape}")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"token_ids must be integers, got dtype {array.dtype}")
    if array.size and (int(array.min()) < 0 or int(array.max()) > _MAX_TOKEN_ID):
        raise ValueError(
            f"token ids must lie in [0, {_MAX_TOKEN_ID}], got range "
            f"[{int(array.min())}, {int(array.max())}]"
        )
    return np.ascontiguousarray(array, dtype="<u4")


def as_token_ids(token_ids: Sequence[int] | npt.NDArray[np.integer]) -> TokenIds:
    """Token ids as `TokenIds` (1-D int64; an int64 array is returned as is): where a list of
    ids (a tokenizer's encoding, a vLLM prompt) enters the library."""
    array = np.asarray(token_ids, dtype=np.int64)
    if array.ndim != 1:
        raise ValueError(f"token_ids must be 1-D, got shape {array.shape}")
    return array


def as_mask_array(
    private_mask: Sequence[bool] | npt.NDArray[np.bool_], num_tokens: int
) -> MaskArray:
    """A private mask as a bool array, checked to have one flag per token."""
    array = np.asarray(private_mask)
    if array.shape != (num_tokens,):
        raise ValueError(
            f"private_mask must have one flag per token: shape ({num_tokens},), got {array.shape}"
        )
    if array.size and array.dtype != np.bool_:
        raise ValueError(f"private_mask must be bool, got dtype {array.dtype}")
    return np.ascontiguousarray(array, dtype=np.bool_)


def common_prefix_length(a: npt.NDArray[np.integer], b: npt.NDArray[np.integer]) -> int:
    """How many leading tokens two id arrays share."""
    limit = min(a.shape[0], b.shape[0])
    differs = np.flatnonzero(a[:limit] != b[:limit])
    return int(differs[0]) if differs.size else limit


def true_runs(mask: MaskArray) -> list[tuple[int, int]]:
    """[start, end) of each run of consecutive True entries of `mask`, in order."""
    edges = np.flatnonzero(np.diff(np.concatenate([[False], mask, [False]]).astype(np.int8)))
    return [(int(start), int(end)) for start, end in zip(edges[::2], edges[1::2], strict=True)]
