"""The SHA-256 identity of a shared segment: model, detector policy and token bytes."""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from typing import NewType

import numpy as np
import numpy.typing as npt

SegmentHash = NewType("SegmentHash", str)
"""Hex SHA-256 of (model id, policy version, uint32 little-endian token ids)."""

TokenArray = npt.NDArray[np.uint32]
MaskArray = npt.NDArray[np.bool_]

# NOTE: a domain tag and length prefixes make the serialization unambiguous: ("ab", "c") and
# ("a", "bc") as (model id, policy version) must never produce the same bytes.
_DOMAIN_TAG = b"cacheprune/segment/v1\x00"
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


def segment_hash(model_id: str, policy_version: str, token_ids: TokenArray) -> SegmentHash:
    """SHA-256 identity of `token_ids` as produced by `model_id` under `policy_version`.

    `token_ids` must come from `as_token_array` (contiguous uint32 little-endian).
    """
    digest = hashlib.sha256(_DOMAIN_TAG)
    for text in (model_id, policy_version):
        encoded = text.encode("utf-8")
        digest.update(struct.pack("<I", len(encoded)))
        digest.update(encoded)
    digest.update(struct.pack("<I", token_ids.shape[0]))
    digest.update(np.ascontiguousarray(token_ids, dtype="<u4").tobytes())
    return SegmentHash(digest.hexdigest())
