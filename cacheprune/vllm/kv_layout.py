"""Moving one request's KV between vLLM's paged cache and the pool's dense layout.

The pool stores K and V as [num_kv_heads, num_tokens, head_dim] per layer. vLLM hands each
layer's cache as one tensor [num_blocks, num_kv_heads, block_size, 2 * head_dim], whose last
two dimensions are read differently by the attention backends:
- CPU (`CPU_ATTN`): each (block, head) tile is `block_size` rows of K then `block_size` rows of
  V (the kernel views it as [num_blocks, num_kv_heads, 2 * block_size, head_dim]);
- GPU (FlashAttention, Triton): each token's row holds its K then its V.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def split_kv(layer: torch.Tensor, block_major_kv: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Views of K and V, each [num_blocks, num_kv_heads, block_size, head_dim].

    `block_major_kv`: the CPU tile layout (all K rows of a block, then all V rows).
    """
    num_blocks, num_heads, block_size, channels = layer.shape
    head_dim = channels // 2
    if block_major_kv:
        tiles = layer.view(num_blocks, num_heads, 2 * block_size, head_dim)
        return tiles[:, :, :block_size], tiles[:, :, block_size:]
    return layer[..., :head_dim], layer[..., head_dim:]


def slots(block_ids: Sequence[int], block_size: int, start: int, stop: int
          ) -> tuple[torch.Tensor, torch.Tensor]:
    """(block index, offset in block) of the token positions [start, stop) of one request."""
    positions = torch.arange(start, stop)
    table = torch.as_tensor(list(block_ids), dtype=torch.long)
    if stop > table.shape[0] * block_size:
        raise ValueError(f"positions up to {stop} need more than the {table.shape[0]} blocks "
                         f"of {block_size} tokens the request holds")
    return table[positions // block_size], positions % block_size


def gather(layer: torch.Tensor, where: tuple[torch.Tensor, torch.Tensor], block_major_kv: bool
           ) -> tuple[torch.Tensor, torch.Tensor]:
    """K and V of the given slots as float32 [num_kv_heads, num_tokens, head_dim] copies."""
    blocks, offsets = where
    keys, values = split_kv(layer, block_major_kv)
    # Advanced indices on dims 0 and 2 around a slice put the token dim first: [n, heads, dim].
    return (keys[blocks, :, offsets].permute(1, 0, 2).to("cpu", torch.float32),
            values[blocks, :, offsets].permute(1, 0, 2).to("cpu", torch.float32))


def scatter(layer: torch.Tensor, where: tuple[torch.Tensor, torch.Tensor], block_major_kv: bool,
            keys: torch.Tensor, values: torch.Tensor) -> None:
    """Write [num_kv_heads, num_tokens, head_dim] K and V into the given slots, in place."""
    blocks, offsets = where
    key_view, value_view = split_kv(layer, block_major_kv)
    blocks, offsets = blocks.to(layer.device), offsets.to(layer.device)
    key_view[blocks, :, offsets] = keys.permute(1, 0, 2).to(layer.device, layer.dtype)
    value_view[blocks, :, offsets] = values.permute(1, 0, 2).to(layer.device, layer.dtype)
