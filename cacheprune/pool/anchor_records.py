"""Anchor records of the shared backends: `entry name (32 bytes) | offset | head length`.

An anchor holds the records of every entry that has one window hash in one scope, appended as
entries are published. Whoever can write the store can append anything, so a reader trusts a
record only as a hint and bounds what it costs:
- at most `MAX_RECORDS_PER_ANCHOR` records per anchor are read, the oldest (records appended
  after them, by a flood or by many entries sharing one window, are never parsed; a publish
  trims longer anchors to them), and at most `MAX_CANDIDATES_PER_LOOKUP` entries per lookup;
- a record's head length must lie in what a head of this pool can be (`head_len_bounds`)
  before a byte of its entry is fetched, and must equal the authenticated head's length;
- records whose entry is gone are removed in one rewrite per anchor, not one call per record.
"""

from __future__ import annotations

import struct

from cacheprune.pool.codec import head_len_bounds
from cacheprune.pool.config import PoolConfig
from cacheprune.retriever import EntryName

RECORD = struct.Struct("<32sII")  # entry name (raw SHA-256), anchor offset, head length
# NOTE: the oldest, not the newest: records appended by whoever can write the store cannot push
# the genuine ones out. An entry left out of a full anchor is still found from its other
# windows, and the lookups that meet dangling records remove them, making room.
MAX_RECORDS_PER_ANCHOR = 64
MAX_ANCHOR_BYTES = MAX_RECORDS_PER_ANCHOR * RECORD.size
MAX_CANDIDATES_PER_LOOKUP = 1024

AnchorRecord = tuple[EntryName, int, int]


def pack_record(name: EntryName, offset: int, head_len: int) -> bytes:
    return RECORD.pack(bytes.fromhex(name), offset, head_len)


def unpack_records(blob: bytes, config: PoolConfig) -> tuple[list[AnchorRecord], list[bytes]]:
    """(usable records, raw bytes of refused ones) of the first `MAX_RECORDS_PER_ANCHOR`
    records in `blob` (the start of an anchor, a whole number of records)."""
    if len(blob) % RECORD.size:
        raise ValueError(f"an anchor of {len(blob)} bytes is not a whole number of records")
    head = blob[:MAX_ANCHOR_BYTES]
    low, high = head_len_bounds(config)
    usable, refused = [], []
    for start in range(0, len(head), RECORD.size):
        raw = head[start : start + RECORD.size]
        name, offset, head_len = RECORD.unpack(raw)
        if low <= head_len <= high and offset < config.max_context_tokens:
            usable.append((EntryName(name.hex()), offset, head_len))
        else:
            refused.append(raw)
    return usable, refused


def without_records(blob: bytes, dropped: set[bytes]) -> bytes:
    """`blob` with every copy of the dropped records removed, trimmed to the first
    `MAX_RECORDS_PER_ANCHOR` (a blob that is not a whole number of records becomes empty)."""
    if len(blob) % RECORD.size:
        return b""
    kept = [blob[i : i + RECORD.size] for i in range(0, len(blob), RECORD.size)
            if blob[i : i + RECORD.size] not in dropped]
    return b"".join(kept[:MAX_RECORDS_PER_ANCHOR])
