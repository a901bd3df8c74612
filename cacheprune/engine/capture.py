"""Attention with explicit probabilities, for the layers whose attention a prefill captures.

The captured heads' probabilities are averaged into one n x n float32 matrix; no layer's full
[heads, n, n] attention exists at any time. Rows are processed in chunks, and every chunk
reuses the same scratch buffers, so a 4k prefill does not allocate (and page-fault) a fresh
scores tensor for each of its 30 x 64 chunks.
"""

from __future__ import annotations

import math

import torch

# Query rows per chunk: bounds the scores to heads x chunk x n floats (9 x 64 x 4096 x 4 B =
# 9 MB at 4k tokens), small enough to stay in the last-level cache between the two matmuls,
# the softmax and the head sum.
CAPTURE_CHUNK = 64


class CaptureState:
    """The capture matrix of one prefill, the layers and heads it averages, and the scratch
    buffers its chunks share."""

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
    keys_t = keys.transpose(1, 2).contiguous()  # [kv_heads, d, n]: each matmul reads rows
    out = torch.empty(num_kv_heads, group, 1 if last_row_only else m, head_dim)
    captured = num_heads if state.heads is None else state.heads.numel()
    scale = state.weight / captured
    for a in range(0, m, CAPTURE_CHUNK):
        b = min(a + CAPTURE_CHUNK, m)
        rows, c = positions[a:b], b - a
        first, width = int(rows[0]), int(rows[-1]) + 1
        scores = state.buffer("scores", num_kv_heads, group * c, width)
        for h in range(num_kv_heads):
            chunk = grouped[h, :, a:b].reshape(group * c, head_dim)
            torch.mm(chunk, keys_t[h, :, :width], out=scores[h])
        # Keys before the chunk's first position are visible to every row: only the columns
        # from there on can lie in some row's future.
        future = torch.arange(first, width)[None, :] > rows[:, None]
        scores.view(num_kv_heads, group, c, width)[..., first:].masked_fill_(future, -math.inf)
        probs = state.buffer("probs", num_kv_heads, group * c, width)
        torch.ops.aten._softmax.out(scores, -1, False, out=probs)
        _write_output(out, probs, values, a, c, width, last_row_only and b == m)
        per_head = probs.view(num_heads, c, width)
        if state.heads is not None:
            per_head = per_head[state.heads]
        summed = torch.sum(per_head, 0, out=state.buffer("summed", c, width))
        if width - first == c:  # contiguous rows: a slice, not an index
            state.matrix[first:width, :width].add_(summed, alpha=scale)
        else:
            state.matrix[rows, :width] += summed.mul_(scale)
    return out.view(num_heads, out.shape[2], head_dim)


def _write_output(
    out: torch.Tensor, probs: torch.Tensor, values: torch.Tensor, a: int, c: int, width: int,
    last_row: bool,
) -> None:
    """probs [kv_heads, group * c, width] @ values: into out's rows a..a+c, or, when only the
    last row is wanted, into its single row (nothing is written for the other chunks)."""
    num_kv_heads, group = out.shape[0], out.shape[1]
    if out.shape[2] == 1 and not last_row:
        return
    for h in range(num_kv_heads):
        head_probs = probs[h].view(group, c, width)
        if last_row:
            out[h, :, 0] = head_probs[:, -1] @ values[h, :width]
        else:
            out[h, :, a : a + c] = (
                head_probs.view(group * c, width) @ values[h, :width]
            ).view(group, c, -1)
