"""The SHA-256 identity of a shared segment: model, detector policy and token bytes."""

from __future__ import annotations

import hashlib
import struct
from typing import NewType

import numpy as np

from cacheprune.tokens import TokenArray

SegmentHash = NewType("SegmentHash", str)
"""Hex SHA-256 of (model id, policy version, uint32 little-endian token ids)."""

# NOTE: a domain tag and length prefixes make the serialization unambiguous: ("ab", "c") and
# ("a", "bc") as (model id, policy version) must never produce the same bytes.
_DOMAIN_TAG = b"cacheprune/segment/v1\x00"


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
