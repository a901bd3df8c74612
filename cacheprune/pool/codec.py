"""The bytes of a shared entry (file and Valkey backends): one value, encrypted at rest.

    PREAMBLE  magic "CPKV", version, JSON length, token count          (13 bytes)
    head      JSON (identity, KV shape, stored dtype, tenant/domain/scope tags, created_at)
              nonce | AES-256-GCM(token ids uint32 | positions int64 | marks uint8)
    head tag  HMAC-SHA256(name, preamble + head)                          (32 bytes)
    KV        nonce | AES-256-GCM(keys then values, [layers, kv heads, tokens, head dim] in
              the stored dtype), associated data: name + everything before it

A lookup reads only the preamble, head and head tag (`head_len` bytes, which the index records
carry) and checks the head tag before decrypting; a read takes the whole value, and GCM checks
its tag before a byte of KV is used. The key is per sharing domain (`PoolKeys.at_rest`, HKDF
from the pool key): a reader of the store without it learns sizes, times and keyed tags only,
neither token ids nor KV. Every tag covers the entry's name, so an entry copied under another
name is refused. No pickle: JSON and raw little-endian arrays only, every length checked
against the config before slicing.

KV is stored as `PoolConfig.kv_storage_dtype` (float16 by default: half the bytes of the
engine's float32) and handed back as float32.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch
from cryptography.exceptions import InvalidTag

from cacheprune.pool.config import STORED_DTYPE_BYTES, PoolConfig
from cacheprune.pool.decoded import DecodedEntries
from cacheprune.pool.entry import SegmentKV, ValidSegment
from cacheprune.pool.errors import InvalidEntryError
from cacheprune.pool.handles import EntryIdentity
from cacheprune.pool.keys import TAG_BYTES, PoolKeys
from cacheprune.retriever import EntryName
from cacheprune.tokens import TokenArray

MAGIC = b"CPKV"
VERSION = 3
NONCE_BYTES = 12
GCM_TAG_BYTES = 16
SEALED_EXTRA = NONCE_BYTES + GCM_TAG_BYTES  # what encryption adds to a section
STORED_DTYPES = {name: (getattr(torch, name), size) for name, size in STORED_DTYPE_BYTES.items()}
_PREAMBLE = struct.Struct("<4sBII")
MAX_HEAD_JSON = 4096
HEAD_PROBE_BYTES = 13  # the preamble: enough for `head_length`
HEAD_PEEK_BYTES = HEAD_PROBE_BYTES + MAX_HEAD_JSON  # enough for `peek_tags`
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
    stored_dtype: str = "float32"

    @property
    def num_tokens(self) -> int:
        return int(self.token_ids.shape[0])


def _seal(keys: PoolKeys, domain_tag: str, plain: bytes, associated: bytes) -> bytes:
    nonce = os.urandom(NONCE_BYTES)
    return nonce + keys.at_rest(domain_tag).encrypt(nonce, plain, associated)


def _open_sealed(keys: PoolKeys, domain_tag: str, sealed: bytes | memoryview,
                 associated: bytes | memoryview) -> bytes:
    try:
        return keys.at_rest(domain_tag).decrypt(bytes(sealed[:NONCE_BYTES]),
                                                bytes(sealed[NONCE_BYTES:]), bytes(associated))
    except InvalidTag as error:
        raise EntryRejected("unauthenticated") from error


def _stored_bytes(tensor: torch.Tensor, stored_dtype: str) -> bytes:
    dtype, _ = STORED_DTYPES[stored_dtype]
    stored = tensor.to(dtype).contiguous()
    if dtype == torch.float16 and not bool(torch.isfinite(stored).all()):
        raise InvalidEntryError(
            f"KV values up to {float(tensor.abs().max()):.3g} exceed float16's range "
            "(65504): set PoolConfig.kv_storage_dtype to 'bfloat16' or 'float32'")
    if dtype == torch.float32:
        return stored.numpy().astype("<f4").tobytes()
    return stored.view(torch.int16).numpy().astype("<i2").tobytes()


def encode_entry(keys: PoolKeys, name: EntryName, identity: EntryIdentity, scope_tag: str,
                 tenant_tag: str, domain_tag: str, created_at: float, segment: ValidSegment,
                 stored_dtype: str) -> tuple[bytes, int]:
    """The entry's bytes and its head length (what index records carry)."""
    shape = list(segment.keys.shape)
    meta = json.dumps({
        "model_id": identity.model_id, "policy_version": identity.policy_version,
        "kv_layout": identity.kv_layout, "dtype": identity.dtype, "shape": shape,
        "stored": stored_dtype, "tenant": tenant_tag, "domain": domain_tag,
        "scope": scope_tag, "created_at": created_at,
    }, separators=(",", ":")).encode()
    if len(meta) > MAX_HEAD_JSON:
        raise ValueError(f"entry metadata is {len(meta)} bytes, more than {MAX_HEAD_JSON}: "
                         "shorten the model id or policy version")
    clear = _PREAMBLE.pack(MAGIC, VERSION, len(meta), segment.num_tokens) + meta
    tokens = b"".join((segment.token_ids.astype("<u4").tobytes(),
                       segment.positions.astype("<i8").tobytes(),
                       segment.recompute.astype(np.uint8).tobytes()))
    head = clear + _seal(keys, domain_tag, tokens, name.encode() + clear)
    head += keys.tag(b"head", name.encode(), head)
    kv = _stored_bytes(segment.keys, stored_dtype) + _stored_bytes(segment.values, stored_dtype)
    return head + _seal(keys, domain_tag, kv, name.encode() + head), len(head)


def head_len_bounds(config: PoolConfig) -> tuple[int, int]:
    """The shortest and longest head (through its tag) an entry of this pool can have."""
    low = _PREAMBLE.size + 2 + 13 * config.min_entry_tokens + SEALED_EXTRA + TAG_BYTES
    high = _PREAMBLE.size + MAX_HEAD_JSON + 13 * config.max_context_tokens + SEALED_EXTRA \
        + TAG_BYTES
    return low, high


def entry_length(config: PoolConfig, head_len: int, num_tokens: int) -> int:
    """The exact size of an entry whose authenticated head is `head_len` bytes long, in this
    pool's stored dtype."""
    kv = config.kv_shape
    _, item_bytes = STORED_DTYPES[config.kv_storage_dtype]
    return head_len + 2 * item_bytes * kv.num_layers * kv.num_kv_heads * num_tokens \
        * kv.head_dim + SEALED_EXTRA


def head_length(start: bytes) -> int:
    """The head length (through the head tag) from an entry's first bytes: read at least
    `HEAD_PROBE_BYTES`; a value too short to tell gives the preamble size (decode rejects)."""
    if len(start) < _PREAMBLE.size:
        return _PREAMBLE.size
    _, _, meta_len, num_tokens = _PREAMBLE.unpack_from(start)
    return _PREAMBLE.size + min(meta_len, MAX_HEAD_JSON) + 13 * num_tokens + SEALED_EXTRA \
        + TAG_BYTES


def peek_tags(start: bytes) -> tuple[int, str, str] | None:
    """(token count, tenant tag, domain tag) from an entry's first `HEAD_PEEK_BYTES`, NOT
    authenticated: for share accounting only (a forged head can only misplace its own bytes)."""
    if len(start) < _PREAMBLE.size:
        return None
    magic, _, meta_len, num_tokens = _PREAMBLE.unpack_from(start)
    if magic != MAGIC or meta_len > MAX_HEAD_JSON:
        return None
    try:
        meta = json.loads(start[_PREAMBLE.size : _PREAMBLE.size + meta_len])
        return int(num_tokens), str(meta["tenant"]), str(meta["domain"])
    except (ValueError, KeyError, TypeError):
        return None


def decode_head(keys: PoolKeys, name: EntryName, data: bytes, config: PoolConfig,
                now: float, *, enforce_ttl: bool = True) -> EntryHead:
    """Parse, authenticate and decrypt the head; raises `EntryRejected` with a reason code.
    `enforce_ttl=False` accepts expired entries (to find and remove them)."""
    if len(data) < _PREAMBLE.size + TAG_BYTES:
        raise EntryRejected("truncated")
    magic, version, meta_len, num_tokens = _PREAMBLE.unpack_from(data)
    if magic != MAGIC or version != VERSION:
        raise EntryRejected("corrupt")
    if meta_len > MAX_HEAD_JSON or not 1 <= num_tokens <= config.max_context_tokens:
        raise EntryRejected("corrupt")
    clear_len = _PREAMBLE.size + meta_len
    head_len = clear_len + 13 * num_tokens + SEALED_EXTRA
    if len(data) < head_len + TAG_BYTES:
        raise EntryRejected("truncated")
    if not keys.check_tag(data[head_len : head_len + TAG_BYTES], b"head", name.encode(),
                          data[:head_len]):
        raise EntryRejected("unauthenticated")
    try:
        meta = json.loads(data[_PREAMBLE.size : clear_len])
        identity = EntryIdentity(str(meta["model_id"]), str(meta["policy_version"]),
                                 str(meta["kv_layout"]), str(meta["dtype"]))
        shape = [int(x) for x in meta["shape"]]
        stored_dtype = str(meta["stored"])
        created_at = float(meta["created_at"])
        tenant_tag, domain_tag, scope_tag = (str(meta["tenant"]), str(meta["domain"]),
                                             str(meta["scope"]))
    except (ValueError, KeyError, TypeError) as error:
        raise EntryRejected("corrupt") from error
    kv = config.kv_shape
    if shape != [kv.num_layers, kv.num_kv_heads, num_tokens, kv.head_dim]:
        raise EntryRejected("shape")
    if stored_dtype not in STORED_DTYPES:
        raise EntryRejected("corrupt")
    if created_at > now + MAX_CLOCK_SKEW_S:
        raise EntryRejected("future")
    if enforce_ttl and config.ttl_s is not None and created_at + config.ttl_s <= now:
        raise EntryRejected("expired")
    plain = _open_sealed(keys, domain_tag, memoryview(data)[clear_len:head_len],
                         name.encode() + data[:clear_len])
    tokens = np.frombuffer(plain, "<u4", num_tokens, 0)
    positions = np.frombuffer(plain, "<i8", num_tokens, 4 * num_tokens)
    marks = np.frombuffer(plain, np.uint8, num_tokens, 12 * num_tokens)
    return EntryHead(name, identity, tenant_tag, domain_tag, scope_tag, created_at,
                     tokens.astype(np.uint32), positions.astype(np.int64),
                     marks.astype(np.bool_), head_len + TAG_BYTES, stored_dtype)


def decode_part(keys: PoolKeys, name: EntryName, data: bytes, config: PoolConfig,
                now: float, start: int, stop: int, decoded: DecodedEntries | None = None
                ) -> tuple[EntryHead, SegmentKV]:
    """Authenticate and decrypt the whole entry, then copy out tokens [start, stop) of its KV
    as float32. With `decoded`, the head is authenticated every time but the KV is decrypted
    once: later reads of the same bytes get views of the cached float32 KV."""
    head = decode_head(keys, name, data, config, now)
    kv = config.kv_shape
    shape = (kv.num_layers, kv.num_kv_heads, head.num_tokens, kv.head_dim)
    count = int(np.prod(shape))
    _, item_bytes = STORED_DTYPES[head.stored_dtype]
    if len(data) != head.head_len + 2 * item_bytes * count + SEALED_EXTRA:
        raise EntryRejected("truncated")
    if not 0 <= start < stop <= head.num_tokens:
        raise EntryRejected("range")
    sealed = memoryview(data)[head.head_len:]
    if decoded is None:
        both = _open_kv(keys, name, data, head, shape, item_bytes, start, stop)
    else:
        key = (str(name), bytes(data[head.head_len - TAG_BYTES : head.head_len]),
               bytes(sealed[:NONCE_BYTES]), bytes(sealed[-GCM_TAG_BYTES:]))
        whole = decoded.get(key)
        if whole is None:
            whole = _open_kv(keys, name, data, head, shape, item_bytes, 0, head.num_tokens)
            decoded.put(key, whole)
        both = whole[:, :, :, start:stop]
    return head, SegmentKV(keys=both[0], values=both[1],
                           positions=head.positions[start:stop],
                           recompute=head.recompute[start:stop])


def _open_kv(keys: PoolKeys, name: EntryName, data: bytes, head: EntryHead,
             shape: tuple[int, int, int, int], item_bytes: int, start: int, stop: int
             ) -> torch.Tensor:
    """Tokens [start, stop) of the entry's K and V, [2, layers, heads, tokens, dim], float32."""
    plain = _open_sealed(keys, head.domain_tag, memoryview(data)[head.head_len:],
                         name.encode() + data[: head.head_len])
    raw = np.frombuffer(plain, "<f4" if item_bytes == 4 else "<i2", 2 * int(np.prod(shape)))
    both = torch.from_numpy(raw.reshape((2, *shape))[:, :, :, start:stop].copy())
    if item_bytes != 4:
        both = both.view(STORED_DTYPES[head.stored_dtype][0]).to(torch.float32)
    return both
