"""What a prefill is asked to do (the plan) and what it gives back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import torch

from cacheprune.models.config import ModelConfig


class PlanError(ValueError):
    """A prefill plan that cannot be executed: the message names the offending part."""


@dataclass(slots=True)
class ReusedSpan:
    """Cached KV placed at `start` in the new prompt.

    `keys` carry RoPE for `source_positions` (where they were computed); the prefill rotates
    them to `start, start+1, ...`. Tokens flagged in `recompute` are computed afresh instead.
    """

    start: int
    keys: torch.Tensor  # [num_layers, num_kv_heads, length, head_dim]
    values: torch.Tensor  # same shape as keys
    source_positions: torch.Tensor  # [length] int64
    recompute: torch.Tensor | None = None  # [length] bool

    @property
    def length(self) -> int:
        return int(self.keys.shape[2])

    @property
    def end(self) -> int:
        return self.start + self.length

    def clipped(self, start: int, end: int) -> ReusedSpan | None:
        """The part of this span that lies inside prompt positions [start, end) (this span
        itself when all of it does), or None when none of it does."""
        first, last = max(start, self.start), min(end, self.end)
        if first >= last:
            return None
        if (first, last) == (self.start, self.end):
            return self
        part = slice(first - self.start, last - self.start)
        return ReusedSpan(first, self.keys[:, :, part], self.values[:, :, part],
                          self.source_positions[part],
                          None if self.recompute is None else self.recompute[part])


@dataclass(slots=True)
class PrefillPlan:
    token_ids: torch.Tensor  # [num_tokens] int64
    reused: list[ReusedSpan] = field(default_factory=list)

    @classmethod
    def full(cls, token_ids: Sequence[int] | torch.Tensor) -> PrefillPlan:
        """Compute every token: a plain forward pass."""
        return cls(torch.as_tensor(token_ids, dtype=torch.long))

    @property
    def num_tokens(self) -> int:
        return int(self.token_ids.numel())

    def reused_mask(self) -> torch.Tensor:
        covered = torch.zeros(self.num_tokens, dtype=torch.bool)
        for span in self.reused:
            covered[span.start : span.end] = True
        return covered

    def compute_mask(self) -> torch.Tensor:
        """True where the prefill computes the token: not reused, or reused but marked for
        recomputation; the last prompt token always (its logits start the decode)."""
        compute = ~self.reused_mask()
        for span in self.reused:
            if span.recompute is not None:
                compute[span.start : span.end] |= span.recompute
        compute[-1] = True
        return compute

    def validate(self, config: ModelConfig) -> None:
        n = self.num_tokens
        if self.token_ids.dim() != 1 or n == 0:
            raise PlanError("the prompt is empty: at least one token is needed")
        if n > config.max_context:
            raise PlanError(
                f"prompt of {n} tokens is longer than the model's context of "
                f"{config.max_context} tokens"
            )
        if int(self.token_ids.min()) < 0 or int(self.token_ids.max()) >= config.vocab_size:
            raise PlanError(f"token ids must lie in [0, {config.vocab_size})")
        expected = (config.num_layers, config.num_kv_heads, config.head_dim)
        previous_end = 0
        for i, span in enumerate(sorted(self.reused, key=lambda s: s.start)):
            shape = tuple(span.keys.shape)
            if span.keys.dim() != 4 or (shape[0], shape[1], shape[3]) != expected:
                raise PlanError(
                    f"reused span {i}: keys of shape {shape}, expected "
                    f"[{expected[0]}, {expected[1]}, length, {expected[2]}]"
                )
            if span.values.shape != span.keys.shape:
                raise PlanError(
                    f"reused span {i}: values {tuple(span.values.shape)} != keys {shape}"
                )
            if span.source_positions.shape != (span.length,):
                raise PlanError(
                    f"reused span {i}: source_positions must have {span.length} entries"
                )
            if span.recompute is not None and span.recompute.shape != (span.length,):
                raise PlanError(f"reused span {i}: recompute must have {span.length} entries")
            if span.start < previous_end or span.end > n:
                raise PlanError(
                    f"reused span {i} [{span.start}, {span.end}) overlaps another span or runs "
                    f"past the prompt of {n} tokens"
                )
            previous_end = span.end


@dataclass(slots=True, frozen=True)
class AttentionCapture:
    """Which layers and query heads to average into the captured attention matrix
    (`None` = all). Only the average is kept: one n x n float32 matrix, never per layer."""

    layers: Sequence[int] | None = None
    heads: Sequence[int] | None = None

    def layer_set(self, config: ModelConfig) -> frozenset[int]:
        layers = range(config.num_layers) if self.layers is None else self.layers
        bad = [i for i in layers if not 0 <= i < config.num_layers]
        if bad:
            raise PlanError(f"capture layers {bad} out of range [0, {config.num_layers})")
        return frozenset(layers)

    def head_index(self, config: ModelConfig) -> torch.Tensor | None:
        if self.heads is None:
            return None
        bad = [h for h in self.heads if not 0 <= h < config.num_heads]
        if bad or not self.heads:
            raise PlanError(f"capture heads {list(self.heads)} must be a non-empty subset of "
                            f"[0, {config.num_heads})")
        return torch.as_tensor(sorted(set(self.heads)), dtype=torch.long)


@dataclass(slots=True)
class KVBuffer:
    """Per-layer K and V of one sequence, preallocated for the prompt plus the decode."""

    keys: torch.Tensor  # [num_layers, num_kv_heads, capacity, head_dim]
    values: torch.Tensor
    length: int = 0

    @classmethod
    def allocate(cls, config: ModelConfig, capacity: int) -> KVBuffer:
        shape = (config.num_layers, config.num_kv_heads, capacity, config.head_dim)
        # NOTE: not zeroed: a prefill writes every prompt position (reused or computed) and a
        # decode step writes its own before any read reaches it.
        return cls(torch.empty(shape), torch.empty(shape))

    @property
    def capacity(self) -> int:
        return int(self.keys.shape[2])


@dataclass(slots=True)
class PrefillResult:
    logits: torch.Tensor  # [vocab] for the last prompt token, or [num_computed, vocab]
    kv: KVBuffer  # K/V of the whole prompt at positions 0..n-1 (keys rotated for them)
    computed_positions: torch.Tensor  # [num_computed] int64, ascending
    num_reused: int
    num_recomputed: int
    num_computed: int
    attention: torch.Tensor | None = None  # [n, n] float32; rows of computed tokens only

    @property
    def keys(self) -> torch.Tensor:
        return self.kv.keys[:, :, : self.kv.length]

    @property
    def values(self) -> torch.Tensor:
        return self.kv.values[:, :, : self.kv.length]
