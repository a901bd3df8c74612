"""Attention with explicit probabilities, for the layers whose attention a prefill captures.

The captured heads' probabilities are averaged into one n x n float32 matrix; no layer's full
[heads, n, n] attention exists at any time. Rows are processed in chunks, one KV head at a
time, and every chunk reuses the same scratch buffers: a 4k prefill does not allocate (and
page-fault) a fresh scores tensor for each of its 30 x 32 x 3 steps.
"""

from __future__ import annotations

import math

import torch

from cacheprune.engine.linear import linear
from cacheprune.engine.plan import AttentionCapture
from cacheprune.models.config import ModelConfig

# Query rows per chunk. Each KV head's chunk is scored, normalized, multiplied by the values
# and summed over its query heads in one buffer of group x chunk x n floats (3 x 128 x 4096 x
# 4 B = 6 MB at 4k tokens), which stays in the last-level cache through those four passes.
CAPTURE_CHUNK = 128


class CaptureState:
    """The capture matrix of one prefill, the layers and heads it averages, and the scratch
    buffers its chunks share."""

    @classmethod
    def of(cls, capture: AttentionCapture, config: ModelConfig, n: int) -> CaptureState:
        """The state of a prefill of `n` tokens under `capture` (its layers and heads checked)."""
        return cls(n, capture.layer_set(config), capture.head_index(config))

    def __init__(self, n: int, layers: frozenset[int], heads: torch.Tensor | None) -> None:
        self.matrix = torch.zeros(n, n)
        self.layers = layers
        self.heads = heads
        self.weight = 1.0 / max(len(layers), 1)
        self._scratch: dict[str, torch.Tensor] = {}

    def buffer(self, name: str, *shape: int) -> torch.Tensor:
        """A scratch tensor of `shape`, reusing (and growing) the one kept under `name`."""
        size = math.prod(shape)
        held = self._scratch.get(name)
        if held is None or held.numel() < size:
            held = self._scratch[name] = torch.empty(size)
        return held[:size].view(shape)


def attend_and_capture(
    q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, positions: torch.Tensor,
    state: CaptureState, last_row_only: bool = False,
) -> torch.Tensor:
    """Causal attention of q [heads, m, d] (at `positions`, ascending) over keys/values
    [kv_heads, n, d]; adds the captured heads' probabilities, scaled by the layer weight and
    averaged over heads, to `state.matrix` rows `positions`. Returns the output [heads, m, d],
    or [heads, 1, d] for the last row alone (the capture still covers every row)."""
    num_heads, m, head_dim = q.shape
    num_kv_heads = keys.shape[0]
    group = num_heads // num_kv_heads
    # NOTE: the scale goes on q (m rows) rather than on the scores (m x n).
    grouped = (q * (1.0 / math.sqrt(head_dim))).reshape(num_kv_heads, group, m, head_dim)
    out = torch.empty(num_kv_heads, group, 1 if last_row_only else m, head_dim)
    captured = _captured_heads(state.heads, num_kv_heads, group)
    scale = state.weight / sum(group if h is None else h.numel() for h in captured)
    for a in range(0, m, CAPTURE_CHUNK):
        b = min(a + CAPTURE_CHUNK, m)
        rows, c = positions[a:b], b - a
        first, width = int(rows[0]), int(rows[-1]) + 1
        # Keys before the chunk's first position are visible to every row: only the columns
        # from there on can lie in some row's future.
        future = torch.arange(first, width)[None, :] > rows[:, None]
        contiguous = width - first == c
        probs = state.buffer("probs", group, c, width)  # one KV head's chunk at a time
        summed = state.buffer("summed", c, width)  # the chunk's sum over captured heads
        head_sum = state.buffer("head_sum", c, width)
        any_captured = False
        for h in range(num_kv_heads):
            linear(grouped[h, :, a:b].reshape(group * c, head_dim), keys[h, :width],
                   out=probs.view(group * c, width))
            probs[..., first:].masked_fill_(future, -math.inf)
            # NOTE: normalized in place (the CPU kernel reads each row before writing it); the
            # capture tests compare the result with transformers' eager attention.
            torch.ops.aten._softmax.out(probs, -1, False, out=probs)
            if not last_row_only:
                out[h, :, a:b] = probs.view(group * c, width).matmul(values[h, :width]).view(
                    group, c, head_dim)
            elif b == m:
                out[h, :, 0] = probs[:, -1].matmul(values[h, :width])
            heads = captured[h]
            if heads is not None and heads.numel() == 0:
                continue
            chosen = probs if heads is None else probs[heads]
            if any_captured:
                summed.add_(torch.sum(chosen, 0, out=head_sum))
            else:
                torch.sum(chosen, 0, out=summed)
                any_captured = True
        # NOTE: the matrix (n x n, far larger than the cache) is updated once per chunk, not
        # once per KV head: the heads are summed in `summed`, which stays in the cache.
        if not any_captured:
            continue
        if contiguous:  # a slice, not an index
            state.matrix[first:width, :width].add_(summed, alpha=scale)
        else:
            state.matrix[rows, :width] += summed.mul_(scale)
    return out.view(num_heads, out.shape[2], head_dim)


def _captured_heads(
    heads: torch.Tensor | None, num_kv_heads: int, group: int,
) -> list[torch.Tensor | None]:
    """For each KV head, the indices (within its group) of the captured query heads; None
    where all of them are."""
    if heads is None:
        return [None] * num_kv_heads
    return [heads[(heads >= h * group) & (heads < (h + 1) * group)] - h * group
            for h in range(num_kv_heads)]
