"""Moving one request's KV between vLLM's paged cache and the pool's dense layout.

The pool stores K and V as [num_kv_heads, num_tokens, head_dim] per layer. vLLM hands each
layer's cache as one tensor [num_blocks, num_kv_heads, block_size, 2 * head_dim]; inside each
(block, head) tile the attention backend decides where a token's K and V go:
- GPU (FlashAttention, Triton): token-major rows, each row K then V (`token_major_layout`);
- CPU (`CPU_ATTN`): `block_size` rows of V after a K area whose order is the kernel's own
  (ISA-specific packing), so the layout is measured by running the kernel once
  (`internals.probe_cpu_layout`), never assumed.
A `TileLayout` records, for every (token offset, dim), the flat index inside one tile, so the
copies below are exact for any such layout and move only the tokens asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


class UnsupportedLayoutError(RuntimeError):
    """The attention backend's KV tile is not a per-tile permutation of tokens and dims."""


@dataclass(frozen=True)
class TileLayout:
    """`key_index[t, d]` / `value_index[t, d]`: flat position, inside one (block, head) tile of
    `block_size * 2 * head_dim` elements, of K / V of the tile's token `t`, dim `d`."""

    key_index: torch.Tensor  # [block_size, head_dim], int64
    value_index: torch.Tensor

    def to(self, device: torch.device) -> TileLayout:
        return TileLayout(self.key_index.to(device), self.value_index.to(device))


def token_major_layout(block_size: int, head_dim: int) -> TileLayout:
    rows = torch.arange(block_size).view(-1, 1) * 2 * head_dim
    dims = torch.arange(head_dim).view(1, -1)
    return TileLayout(rows + dims, rows + head_dim + dims)


def layout_from_markers(tile: torch.Tensor, block_size: int, head_dim: int) -> TileLayout:
    """Invert a tile written with K[t, d] = t * head_dim + d and V[t, d] = that + block_size *
    head_dim (markers exact in float32): where each marker landed is where that (t, d) lives."""
    size = block_size * head_dim
    markers = tile.reshape(-1).to(torch.int64)
    if markers.shape[0] != 2 * size or not torch.equal(
            torch.sort(markers).values, torch.arange(2 * size)):
        raise UnsupportedLayoutError(
            "the CPU attention kernel does not store each token's K and V inside its own "
            "(block, head) tile; cacheprune cannot copy single tokens of this cache")
    where = torch.empty(2 * size, dtype=torch.int64)
    where[markers] = torch.arange(2 * size)
    return TileLayout(where[:size].view(block_size, head_dim),
                      where[size:].view(block_size, head_dim))


def slots(block_ids: Sequence[int], block_size: int, start: int, stop: int
          ) -> tuple[torch.Tensor, torch.Tensor]:
    """(block id, offset in block) of the token positions [start, stop) of one request."""
    positions = torch.arange(start, stop)
    table = torch.as_tensor(list(block_ids), dtype=torch.long)
    if stop > table.shape[0] * block_size:
        raise ValueError(f"positions up to {stop} need more than the {table.shape[0]} blocks "
                         f"of {block_size} tokens the request holds")
    return table[positions // block_size], positions % block_size


@dataclass(frozen=True)
class FlatIndex:
    """Where the K and V of some tokens sit in a layer tensor: flat element indices in
    [num_kv_heads, num_tokens, head_dim] order. Every layer of one cache has the same shape,
    so one index serves them all (`locate` once per request, `read` / `write` per layer)."""

    keys: torch.Tensor  # int64 [num_kv_heads * num_tokens * head_dim]
    values: torch.Tensor
    shape: tuple[int, int, int]  # (num_kv_heads, num_tokens, head_dim)


def locate(layer: torch.Tensor, where: tuple[torch.Tensor, torch.Tensor], layout: TileLayout
           ) -> FlatIndex:
    """The flat index of the given slots (`slots`) in tensors shaped like `layer`."""
    _, num_heads, block_size, channels = layer.shape
    blocks, offsets = (t.to(layer.device) for t in where)
    heads = torch.arange(num_heads, device=layer.device)
    tile_starts = (blocks[None, :] * num_heads + heads[:, None]) \
        * (block_size * channels)  # [heads, tokens]
    key_index = layout.key_index.to(layer.device)[offsets]  # [tokens, head_dim]
    value_index = layout.value_index.to(layer.device)[offsets]
    head_dim = int(key_index.shape[1])
    return FlatIndex((tile_starts[:, :, None] + key_index[None]).reshape(-1),
                     (tile_starts[:, :, None] + value_index[None]).reshape(-1),
                     (num_heads, int(blocks.shape[0]), head_dim))


def read(layer: torch.Tensor, index: FlatIndex) -> tuple[torch.Tensor, torch.Tensor]:
    """K and V at `index` as float32 [num_kv_heads, num_tokens, head_dim] copies, on the
    cache's device."""
    flat = layer.view(-1)
    return (flat[index.keys].view(index.shape).to(torch.float32),
            flat[index.values].view(index.shape).to(torch.float32))


def write(layer: torch.Tensor, index: FlatIndex, keys: torch.Tensor,
          values: torch.Tensor) -> None:
    """Write [num_kv_heads, num_tokens, head_dim] K and V at `index`, in place."""
    flat = layer.view(-1)
    flat.index_copy_(0, index.keys, keys.to(layer.device, layer.dtype).reshape(-1))
    flat.index_copy_(0, index.values, values.to(layer.device, layer.dtype).reshape(-1))


def gather(layer: torch.Tensor, where: tuple[torch.Tensor, torch.Tensor], layout: TileLayout
           ) -> tuple[torch.Tensor, torch.Tensor]:
    """`read` of the given slots (one layer: `locate` once for many)."""
    return read(layer, locate(layer, where, layout))


def scatter(layer: torch.Tensor, where: tuple[torch.Tensor, torch.Tensor], layout: TileLayout,
            keys: torch.Tensor, values: torch.Tensor) -> None:
    """`write` into the given slots (one layer: `locate` once for many)."""
    write(layer, locate(layer, where, layout), keys, values)
