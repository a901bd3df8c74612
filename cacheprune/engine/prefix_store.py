"""Whole-prompt prefix caches for the baselines: per tenant (salted) or global (unsafe).

These model what a serving system without cacheprune offers (vLLM's prefix caching with or
without `cache_salt`): the longest cached prefix of the prompt is reused, private tokens and
all. They exist so the evaluation can compare against them in the same engine; the global one
is the leak cacheprune closes.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch

from cacheprune.retriever.matching import common_prefix_length


@dataclass(slots=True)
class CachedPrompt:
    token_ids: npt.NDArray[np.int64]
    keys: torch.Tensor  # [num_layers, num_kv_heads, n, head_dim], positions 0..n-1
    values: torch.Tensor


class PrefixStore:
    """LRU store of whole prompts' KV, keyed by scope (a tenant, or one global scope)."""

    def __init__(self, max_prompts: int = 64) -> None:
        if max_prompts < 1:
            raise ValueError(f"max_prompts must be >= 1, got {max_prompts}")
        self.max_prompts = max_prompts
        self._prompts: OrderedDict[tuple[str, int], CachedPrompt] = OrderedDict()
        self._next_key = 0

    def __len__(self) -> int:
        return len(self._prompts)

    def longest_prefix(
        self, scope: str, token_ids: npt.NDArray[np.int64]
    ) -> tuple[CachedPrompt | None, int]:
        """The cached prompt of `scope` sharing the longest prefix with `token_ids`."""
        best: CachedPrompt | None = None
        best_len = 0
        for key, cached in self._prompts.items():
            if key[0] != scope:
                continue
            length = common_prefix_length(cached.token_ids, token_ids)
            if length > best_len:
                best, best_len = cached, length
        if best is not None:
            # NOTE: every prompt holding the reused prefix is touched, as a block cache touches
            # the shared blocks (vLLM's), not only the one the KV is read from: otherwise a
            # stream of requests sharing a prefix would evict its first owner.
            touched = [key for key, cached in self._prompts.items() if key[0] == scope
                       and common_prefix_length(cached.token_ids, token_ids) == best_len]
            for key in touched:
                self._prompts.move_to_end(key)
        return best, best_len

    def add(self, scope: str, token_ids: npt.NDArray[np.int64], keys: torch.Tensor,
            values: torch.Tensor) -> None:
        self._prompts[(scope, self._next_key)] = CachedPrompt(
            token_ids.copy(), keys.clone(), values.clone()
        )
        self._next_key += 1
        while len(self._prompts) > self.max_prompts:
            self._prompts.popitem(last=False)

    def cached_prompts(self) -> list[CachedPrompt]:
        """Everything the store holds (for audits and the leakage evaluation)."""
        return list(self._prompts.values())

    def clear(self) -> None:
        self._prompts.clear()

