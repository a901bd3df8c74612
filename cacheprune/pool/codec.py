"""The bytes of a shared entry (file and Valkey backends): one value, authenticated twice.

    PREAMBLE  magic "CPKV", version, JSON length, token count          (13 bytes)
    head      JSON (identity, KV shape, tenant/domain/scope tags, created_at)
              token ids uint32 | positions int64 | recompute marks uint8  (little-endian)
    head tag  HMAC-SHA256(name, preamble + head)                          (32 bytes)
    KV        keys then values, float32 [layers, kv heads, tokens, head dim]
    tag       HMAC-SHA256(name, everything before it)                     (32 bytes)

A lookup reads only the preamble, head and head tag (`head_len` bytes, which the index records
carry); a read takes the whole value and checks the final tag before using any byte. Both tags
cover the entry's name, so an entry copied under another name is refused. No pickle: JSON and
raw little-endian arrays only, every length checked against the config before slicing.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch

from cacheprune.pool.config import PoolConfig
from cacheprune.pool.entry import SegmentKV, ValidSegment
from cacheprune.pool.handles import EntryIdentity
from cacheprune.pool.keys import TAG_BYTES, PoolKeys
from cacheprune.retriever import EntryName
from cacheprune.tokens import TokenArray

MAGIC = b"CPKV"
VERSION = 2
_PREAMBLE = struct.Struct("<4sBII")
MAX_HEAD_JSON = 4096
HEAD_PROBE_BYTES = 13  # the preamble: enough for `head_length`
# An entry written in the future by a skewed clock is accepted this far ahead, no further
# (a far-future `created_at` would otherwise never expire).
MAX_CLOCK_SKEW_S = 60.0


class EntryRejected(Exception):  # noqa: N818 - a verdict, caught by the backends
    """The bytes are not a usable entry; `reason` is a short code for metrics and audit."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(slots=True, frozen=True)
class EntryHead:
    """What a lookup learns from an entry without its KV."""

    name: EntryName
    identity: EntryIdentity
    tenant_tag: str
    domain_tag: str
    scope_tag: str
    created_at: float
    token_ids: TokenArray
    positions: npt.NDArray[np.int64]
    recompute: npt.NDArray[np.bool_]
    head_len: int

    @property
    def num_tokens(self) -> int:
        return int(self.token_ids.shape[0])


def encode_entry(keys: PoolKeys, name: EntryName, identity: EntryIdentity, scope_tag: str,
                 tenant_tag: str, domain_tag: str, created_at: float, segment: ValidSegment
                 ) -> tuple[bytes, int]:
    """The entry's bytes and its head length (what index records carry)."""
    shape = list(segment.keys.shape)
    meta = json.dumps({
        "model_id": identity.model_id, "policy_version": identity.policy_version,
        "kv_layout": identity.kv_layout, "dtype": identity.dtype, "shape": shape,
        "tenant": tenant_tag, "domain": domain_tag, "scope": scope_tag,
        "created_at": created_at,
    }, separators=(",", ":")).encode()
    if len(meta) > MAX_HEAD_JSON:
        raise ValueError(f"entry metadata is {len(meta)} bytes, more than {MAX_HEAD_JSON}: "
                         "shorten the model id or policy version")
    head = b"".join((
        _PREAMBLE.pack(MAGIC, VERSION, len(meta), segment.num_tokens), meta,
        segment.token_ids.astype("<u4").tobytes(), segment.positions.astype("<i8").tobytes(),
        segment.recompute.astype(np.uint8).tobytes(),
    ))
    head_tag = keys.tag(b"head", name.encode(), head)
    body = b"".join((head, head_tag, segment.keys.numpy().astype("<f4").tobytes(),
                     segment.values.numpy().astype("<f4").tobytes()))
    return body + keys.tag(b"entry", name.encode(), body), len(head) + TAG_BYTES


def head_length(start: bytes) -> int:
    """The head length (through the head tag) from an entry's first bytes: read at least
    `HEAD_PROBE_BYTES`; a value too short to tell gives the preamble size (decode rejects)."""
    if len(start) < _PREAMBLE.size:
        return _PREAMBLE.size
    _, _, meta_len, num_tokens = _PREAMBLE.unpack_from(start)
    return _PREAMBLE.size + min(meta_len, MAX_HEAD_JSON) + 13 * num_tokens + TAG_BYTES


def decode_head(keys: PoolKeys, name: EntryName, data: bytes, config: PoolConfig,
                now: float, *, enforce_ttl: bool = True) -> EntryHead:
    """Parse and authenticate the head; raises `EntryRejected` with a reason code.
    `enforce_ttl=False` accepts expired entries (to find and remove them)."""
    if len(data) < _PREAMBLE.size + TAG_BYTES:
        raise EntryRejected("truncated")
    magic, version, meta_len, num_tokens = _PREAMBLE.unpack_from(data)
    if magic != MAGIC or version != VERSION:
        raise EntryRejected("corrupt")
    if meta_len > MAX_HEAD_JSON or not 1 <= num_tokens <= config.max_context_tokens:
        raise EntryRejected("corrupt")
    head_len = _PREAMBLE.size + meta_len + 13 * num_tokens
    if len(data) < head_len + TAG_BYTES:
        raise EntryRejected("truncated")
    if not keys.check_tag(data[head_len : head_len + TAG_BYTES], b"head", name.encode(),
                          data[:head_len]):
        raise EntryRejected("unauthenticated")
    try:
        meta = json.loads(data[_PREAMBLE.size : _PREAMBLE.size + meta_len])
        identity = EntryIdentity(str(meta["model_id"]), str(meta["policy_version"]),
                                 str(meta["kv_layout"]), str(meta["dtype"]))
        shape = [int(x) for x in meta["shape"]]
        created_at = float(meta["created_at"])
        tags = (str(meta["tenant"]), str(meta["domain"]), str(meta["scope"]))
    except (ValueError, KeyError, TypeError) as error:
        raise EntryRejected("corrupt") from error
    kv = config.kv_shape
    if shape != [kv.num_layers, kv.num_kv_heads, num_tokens, kv.head_dim]:
        raise EntryRejected("shape")
    if created_at > now + MAX_CLOCK_SKEW_S:
        raise EntryRejected("future")
    if enforce_ttl and config.ttl_s is not None and created_at + config.ttl_s <= now:
        raise EntryRejected("expired")
    start = _PREAMBLE.size + meta_len
    tokens = np.frombuffer(data, "<u4", num_tokens, start)
    positions = np.frombuffer(data, "<i8", num_tokens, start + 4 * num_tokens)
    marks = np.frombuffer(data, np.uint8, num_tokens, start + 12 * num_tokens)
    tenant_tag, domain_tag, scope_tag = tags
    return EntryHead(name, identity, tenant_tag, domain_tag, scope_tag, created_at,
                     tokens.astype(np.uint32), positions.astype(np.int64),
                     marks.astype(np.bool_), head_len + TAG_BYTES)


def decode_part(keys: PoolKeys, name: EntryName, data: bytes, config: PoolConfig,
                now: float, start: int, stop: int) -> tuple[EntryHead, SegmentKV]:
    """Authenticate the whole entry, then copy out tokens [start, stop) of its KV."""
    if len(data) < TAG_BYTES or not keys.check_tag(
            data[-TAG_BYTES:], b"entry", name.encode(), memoryview(data)[:-TAG_BYTES]):
        raise EntryRejected("unauthenticated")
    head = decode_head(keys, name, data, config, now)
    kv = config.kv_shape
    shape = (kv.num_layers, kv.num_kv_heads, head.num_tokens, kv.head_dim)
    count = int(np.prod(shape))
    if len(data) != head.head_len + 8 * count + TAG_BYTES:
        raise EntryRejected("truncated")
    if not 0 <= start < stop <= head.num_tokens:
        raise EntryRejected("range")
    stored_keys = np.frombuffer(data, "<f4", count, head.head_len).reshape(shape)
    stored_values = np.frombuffer(data, "<f4", count, head.head_len + 4 * count).reshape(shape)
    return head, SegmentKV(
        keys=torch.from_numpy(np.array(stored_keys[:, :, start:stop])),  # copies: writable
        values=torch.from_numpy(np.array(stored_values[:, :, start:stop])),
        positions=head.positions[start:stop],
        recompute=head.recompute[start:stop],
    )
