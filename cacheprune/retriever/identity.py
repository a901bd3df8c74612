"""The names of shared bytes, each its own type so that one cannot pass for another.

`IdentityDigest` (what produced an entry's KV) and `DomainTag` (the sharing domain it is found
in) say which entries a reader may use at all; `EntryName` names one entry. A pool names its
entries by a keyed HMAC (`cacheprune.pool.PoolKeys.entry_name`); `unkeyed_entry_name` is the
plain SHA-256 naming for callers that hold no pool key (tests, single-process tools).
"""

from __future__ import annotations

import hashlib
import struct
from typing import NewType

import numpy as np

from cacheprune.tokens import TokenArray

IdentityDigest = NewType("IdentityDigest", str)
"""Hex SHA-256 over an entry's producer: model, detector policy, KV layout, dtype."""
DomainTag = NewType("DomainTag", str)
"""Hex keyed hash of a sharing domain (never the domain's name)."""
EntryName = NewType("EntryName", str)
"""Hex name of one entry: a keyed HMAC in a pool, a plain SHA-256 from `unkeyed_entry_name`."""

# NOTE: a prefix and length prefixes make the serialization unambiguous: ("ab", "c") and
# ("a", "bc") as (identity digest, domain tag) must never produce the same bytes.
_SERIALIZATION_PREFIX = b"cacheprune/segment/v1\x00"


def unkeyed_entry_name(identity_digest: IdentityDigest, domain_tag: DomainTag,
                       token_ids: TokenArray) -> EntryName:
    """Plain SHA-256 name of the entry holding `token_ids` under (identity, domain).

    `token_ids` must come from `as_token_array` (contiguous uint32 little-endian).
    """
    digest = hashlib.sha256(_SERIALIZATION_PREFIX)
    for text in (identity_digest, domain_tag):
        encoded = text.encode("utf-8")
        digest.update(struct.pack("<I", len(encoded)))
        digest.update(encoded)
    digest.update(struct.pack("<I", token_ids.shape[0]))
    digest.update(np.ascontiguousarray(token_ids, dtype="<u4").tobytes())
    return EntryName(digest.hexdigest())
