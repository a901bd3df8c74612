"""The small values that cross the store interface: who asks (`Scope`, `EntryIdentity`), what a
lookup leases (`Lease`, `LookupResult`) and what a request offers (`SegmentData`,
`StagedSegment`). All frozen; `Lease` and `StagedSegment` are picklable so that they can travel
between the vLLM scheduler and worker processes."""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import torch

from cacheprune.pool.config import KVShape
from cacheprune.retriever import EntryName, IdentityDigest, Match

DEFAULT_DOMAIN = "default"
KV_DTYPE = "float32"


def kv_layout(shape: KVShape) -> str:
    """The layout string of the dense K/V the pool stores: [layers, kv heads, tokens, dim]."""
    return f"layers,kv_heads,tokens,head_dim:{shape.num_layers}x{shape.num_kv_heads}x" \
           f"{shape.head_dim}"


@dataclass(slots=True, frozen=True)
class EntryIdentity:
    """What produced an entry's KV; a reader uses an entry only if this is exactly its own.

    `model_id` must cover the weights, the config (RoPE, norms, ...) and the tokenizer
    (`cacheprune.models.sources.model_identity`); `kv_layout` comes from `kv_layout(shape)`.
    """

    model_id: str
    policy_version: str
    kv_layout: str
    dtype: str = KV_DTYPE

    @classmethod
    def for_shape(cls, model_id: str, policy_version: str, shape: KVShape) -> EntryIdentity:
        return cls(model_id, policy_version, kv_layout(shape), KV_DTYPE)

    def digest(self) -> IdentityDigest:
        """SHA-256 over the length-prefixed fields (unambiguous, no pickle)."""
        digest = hashlib.sha256(b"cacheprune/identity/v2\x00")
        for text in (self.model_id, self.policy_version, self.kv_layout, self.dtype):
            encoded = text.encode("utf-8")
            digest.update(struct.pack("<I", len(encoded)))
            digest.update(encoded)
        return IdentityDigest(digest.hexdigest())


@dataclass(slots=True, frozen=True)
class Scope:
    """Who asks and for what: one request's identity, tenant and sharing domain.

    `tenant` and `domain` are never stored or logged in clear: entries and audit lines carry
    keyed hashes of them (`PoolKeys.tenant_tag`).
    """

    identity: EntryIdentity
    tenant: str
    domain: str = DEFAULT_DOMAIN

    def __post_init__(self) -> None:
        if not self.tenant:
            raise ValueError("Scope.tenant must be a non-empty string")
        if not self.domain:
            raise ValueError("Scope.domain must be a non-empty string")


@dataclass(slots=True, frozen=True)
class Lease:
    """A leased entry, as `lookup` returns it: picklable, valid until `release`.

    `entry` is the entry's keyed name; `owner` the request that holds it; `locator` a
    backend-specific hint (the header length of a shared entry), never a path to follow.
    """

    entry: EntryName
    owner: str
    num_tokens: int
    locator: int = 0


@dataclass(slots=True, frozen=True)
class LookupResult:
    """Matches in request order and one lease per match (`leases[i]` holds `matches[i]`)."""

    matches: list[Match] = field(default_factory=list)
    leases: list[Lease] = field(default_factory=list)

    @property
    def num_matched_tokens(self) -> int:
        return sum(match.length for match in self.matches)


@dataclass(slots=True, frozen=True)
class SegmentData:
    """One segment a request offers to the pool, before validation (see `PoolStore.stage`)."""

    token_ids: Sequence[int] | npt.NDArray[np.integer]
    keys: torch.Tensor  # float32 [num_layers, num_kv_heads, num_tokens, head_dim]
    values: torch.Tensor
    positions: Sequence[int] | npt.NDArray[np.integer]  # where the KV was computed (RoPE)
    recompute: Sequence[bool] | npt.NDArray[np.bool_]
    private_mask: Sequence[bool] | npt.NDArray[np.bool_]  # any True is refused


@dataclass(slots=True, frozen=True)
class StagedSegment:
    """A validated segment waiting for `publish` or `discard`: picklable."""

    staging_id: str
    entry: EntryName  # the name it will have once published
    num_tokens: int
