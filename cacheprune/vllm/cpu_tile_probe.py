"""Measure how vLLM-CPU's attention kernel lays out K and V inside a cache tile.

The kernel packs K in an ISA-specific order; instead of reimplementing that order, the worker
runs the kernel's own cache write once, on a scratch tile holding marker values, at start-up.
"""

from __future__ import annotations

import torch

from cacheprune.vllm.kv_layout import TileLayout, layout_from_markers


def probe_cpu_layout(block_size: int, head_dim: int, dtype: torch.dtype,
                     kv_cache_dtype: str = "auto") -> TileLayout:
    from vllm._custom_ops import cpu_attn_reshape_and_cache
    from vllm.v1.attention.backends.cpu_attn import _get_attn_isa

    if dtype != torch.float32:
        # NOTE: markers up to 2 * block_size * head_dim must be exact; bf16 holds 8 bits.
        raise NotImplementedError(
            f"CachePruneConnector on CPU supports dtype float32, got {dtype}")
    isa = _get_attn_isa(dtype, block_size, head_dim, kv_cache_dtype)
    size = block_size * head_dim
    scratch = torch.zeros(1, 1, 2 * block_size, head_dim, dtype=dtype)
    key_cache, value_cache = scratch.chunk(2, dim=2)  # as the CPU backend splits its tile
    keys = torch.arange(size, dtype=dtype).view(block_size, 1, head_dim)
    cpu_attn_reshape_and_cache(keys, keys + size, key_cache, value_cache,
                               torch.arange(block_size), isa)
    return layout_from_markers(scratch.view(-1), block_size, head_dim)
