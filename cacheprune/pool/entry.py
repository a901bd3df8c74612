"""One pooled segment and the checks a staged segment must pass before it can become one."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from cacheprune.pool.config import PoolConfig
from cacheprune.pool.errors import InvalidEntryError, PrivateTokenError
from cacheprune.pool.handles import SegmentData
from cacheprune.retriever import EntryName, IndexedSegment
from cacheprune.tokens import TokenArray, as_token_array


class EntryState(enum.Enum):
    LIVE = "live"  # visible to lookups
    DOOMED = "doomed"  # invalidated or expired while leased: freed when the last lease ends
    FREED = "freed"


@dataclass(slots=True)
class PoolEntry:
    segment: IndexedSegment
    keys: torch.Tensor
    values: torch.Tensor
    positions: npt.NDArray[np.int64]
    recompute: npt.NDArray[np.bool_]
    created_at: float
    num_bytes: int
    identity: tuple[str, str]  # (model id, policy version), for EntryInfo
    tenant_tag: str
    domain_tag: str
    num_leases: int = 0
    state: EntryState = EntryState.LIVE

    @property
    def name(self) -> EntryName:
        return self.segment.entry_name

    @property
    def num_tokens(self) -> int:
        return self.segment.num_tokens


@dataclass(slots=True, frozen=True)
class EntryInfo:
    """What an invalidation predicate may look at: provenance, never tokens or KV.

    `created_at` is in the store's clock (monotonic for memory://, wall clock otherwise)."""

    name: EntryName
    model_id: str
    policy_version: str
    num_tokens: int
    created_at: float
    tenant_tag: str = ""  # keyed hash of the publishing tenant (`PoolKeys.tenant_tag`)
    domain_tag: str = ""  # keyed hash of the sharing domain it is found in


@dataclass(slots=True, frozen=True)
class SegmentKV:
    """The matched part of an entry, as `PoolSession.read` returns it.

    Tensors are views of the pool's storage: rotate them into new tensors, never in place.
    """

    keys: torch.Tensor  # [num_layers, num_kv_heads, length, head_dim], RoPE at `positions`
    values: torch.Tensor
    positions: npt.NDArray[np.int64]
    recompute: npt.NDArray[np.bool_]


def _frozen_copy(array: npt.NDArray[Any], dtype: npt.DTypeLike) -> npt.NDArray[Any]:
    copy = np.array(array, dtype=dtype, copy=True)
    copy.flags.writeable = False
    return copy


def _check_kv(name: str, tensor: object, expected_shape: tuple[int, ...]) -> torch.Tensor:
    if not isinstance(tensor, torch.Tensor):
        raise InvalidEntryError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.dtype != torch.float32:
        raise InvalidEntryError(f"{name} must be float32, got {tensor.dtype}")
    if tuple(tensor.shape) != expected_shape:
        raise InvalidEntryError(
            f"{name} must have shape {expected_shape} "
            f"[num_layers, num_kv_heads, num_tokens, head_dim], got {tuple(tensor.shape)}"
        )
    # NOTE: the pool owns its memory: a view would keep the whole prompt's KV alive (bytes the
    # budget does not see) and let the producer mutate a shared entry after publishing.
    return tensor.detach().to("cpu", copy=True).contiguous()


def _check_per_token(name: str, values: object, num_tokens: int, kind: str) -> np.ndarray:
    array = np.asarray(values)
    if array.shape != (num_tokens,):
        raise InvalidEntryError(
            f"{name} must have one value per token: shape ({num_tokens},), got {array.shape}"
        )
    if kind == "bool" and array.size and array.dtype != np.bool_:
        raise InvalidEntryError(f"{name} must be bool, got dtype {array.dtype}")
    if kind == "int" and array.size and not np.issubdtype(array.dtype, np.integer):
        raise InvalidEntryError(f"{name} must be integers, got dtype {array.dtype}")
    return array


@dataclass(slots=True, frozen=True)
class ValidSegment:
    """A segment that passed every check a pool makes before keeping it; arrays are copies the
    pool owns (read-only), tensors contiguous float32 on the CPU."""

    token_ids: TokenArray
    keys: torch.Tensor
    values: torch.Tensor
    positions: npt.NDArray[np.int64]
    recompute: npt.NDArray[np.bool_]

    @property
    def num_tokens(self) -> int:
        return int(self.token_ids.shape[0])


def validate_segment(config: PoolConfig, segment: SegmentData) -> ValidSegment:
    """The one check of a staged segment, for every backend: a `ValidSegment`, or an exception
    that names what is wrong. `segment.private_mask` is the producing request's mask over these
    tokens: any True is refused."""
    try:
        tokens = as_token_array(segment.token_ids)
    except ValueError as error:
        raise InvalidEntryError(f"token_ids: {error}") from error
    num_tokens = int(tokens.shape[0])
    mask = _check_per_token("private_mask", segment.private_mask, num_tokens, "bool")
    if mask.any():
        raise PrivateTokenError(
            f"segment holds {int(mask.sum())} private token(s) (first at offset "
            f"{int(np.argmax(mask))}); the pool never stores a masked token"
        )
    if not config.min_entry_tokens <= num_tokens <= config.max_context_tokens:
        raise InvalidEntryError(
            f"a segment must have between {config.min_entry_tokens} and "
            f"{config.max_context_tokens} tokens, got {num_tokens}"
        )
    shape = config.kv_shape
    expected = (shape.num_layers, shape.num_kv_heads, num_tokens, shape.head_dim)
    owned_keys = _check_kv("keys", segment.keys, expected)
    owned_values = _check_kv("values", segment.values, expected)
    position_array = _check_per_token("positions", segment.positions, num_tokens, "int")
    if position_array.size and int(position_array.min()) < 0:
        raise InvalidEntryError(f"positions must be >= 0, got min {int(position_array.min())}")
    recompute_array = _check_per_token("recompute", segment.recompute, num_tokens, "bool")
    return ValidSegment(
        token_ids=_frozen_copy(tokens, "<u4"),
        keys=owned_keys,
        values=owned_values,
        positions=_frozen_copy(position_array, np.int64),
        recompute=_frozen_copy(recompute_array, np.bool_),
    )
