"""The baselines cacheprune is compared with, as sharing strategies.

- `NoSharing`: every request computes everything (also the full-recompute reference).
- `PrefixCaching`: what a serving system without cacheprune offers (vLLM's prefix caching with
  or without `cache_salt`): the longest cached prefix of the prompt is reused, private tokens
  and all, per tenant (salted) or globally (unsafe: the timing channel cacheprune closes).
- `FixedChunks`: fixed-size chunks at fixed offsets, each computed alone, dropped if they hold a
  private token (CacheBlend-style), with cacheprune's recompute policy.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch

from cacheprune.annotator import score_spans
from cacheprune.engine import PrefillPlan, PrefillResult, ReusedSpan
from cacheprune.pool import Match, PoolSession
from cacheprune.serving.kv_sources import AloneKV
from cacheprune.serving.request import ServedRequest
from cacheprune.serving.sharing import PoolSharing, SegmentSpan, stage_segments
from cacheprune.serving.strategy import Published, SharingStrategy
from cacheprune.tokens import MaskArray, TokenIds, common_prefix_length

GLOBAL_SCOPE = "*"  # the unsafe global prefix cache's single scope


class NoSharing(SharingStrategy):
    def plan(self, request: ServedRequest, session: PoolSession) -> PrefillPlan:
        return PrefillPlan(torch.from_numpy(request.token_ids))

    def publish(self, request: ServedRequest, session: PoolSession,
                prefill: PrefillResult) -> list[Published]:
        return []


class PrefixCaching(SharingStrategy):
    """Whole prompts' KV in an LRU store; a request reuses the longest prefix cached in its
    scope: its own tenant's (`per_tenant=True`) or everybody's."""

    def __init__(self, per_tenant: bool, max_prompts: int) -> None:
        self.per_tenant = per_tenant
        self.store = PrefixStore(max_prompts)

    def _scope(self, request: ServedRequest) -> str:
        return request.tenant if self.per_tenant else GLOBAL_SCOPE

    def plan(self, request: ServedRequest, session: PoolSession) -> PrefillPlan:
        token_ids = request.token_ids
        cached, length = self.store.longest_prefix(self._scope(request), token_ids)
        reused = []
        if cached is not None:
            reused.append(ReusedSpan(0, cached.keys[:, :, :length], cached.values[:, :, :length],
                                     torch.arange(length)))
        return PrefillPlan(torch.from_numpy(token_ids), reused)

    def publish(self, request: ServedRequest, session: PoolSession,
                prefill: PrefillResult) -> list[Published]:
        self.store.add(self._scope(request), request.token_ids, prefill.keys, prefill.values)
        return []

    def cached_token_ids(self) -> list[TokenIds]:
        return [prompt.token_ids for prompt in self.store.cached_prompts()]


class FixedChunks(PoolSharing):
    """Chunks of `chunk_tokens` at fixed boundaries through the pool: only whole aligned chunks
    are reused; a chunk is published if it holds no private token and was computed here."""

    def accepts(self, match: Match) -> bool:
        size = self.config.chunk_tokens
        return match.request_start % size == 0 and match.length == size and \
            match.entry_start == 0

    def publish(self, request: ServedRequest, session: PoolSession,
                prefill: PrefillResult) -> list[Published]:
        publishable = self.publishable_attention(request, session, prefill)
        if publishable is None:
            return []
        view, attention, computed = publishable
        segments = self.chunk_segments(request, attention, computed)
        return stage_segments(session, view, segments, AloneKV(self.model, request),
                              self.config.annotator.min_len)

    def chunk_segments(self, request: ServedRequest, attention: npt.NDArray[np.float32],
                       computed: MaskArray) -> list[SegmentSpan]:
        """The aligned chunks free of private tokens that this prefill computed, with the
        recompute marks scored as if each chunk were computed alone."""
        size, private = self.config.chunk_tokens, request.private  # the view is the prompt
        starts = np.arange(0, request.num_tokens - size + 1, size, dtype=np.int64)
        keep = [s for s in starts if not private[s:s + size].any() and computed[s:s + size].all()]
        if not keep:
            return []
        spans = [(int(s), int(s) + size) for s in keep]
        # Each chunk's KV is computed alone, so everything before a chunk counts as outside it.
        config = self.config.annotator.model_copy(update={"recompute_context": "all"})
        scored = score_spans(attention, private, spans, config)
        return [(segment.start, segment.end, segment.recompute) for segment in scored]


@dataclass(slots=True)
class CachedPrompt:
    token_ids: TokenIds
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
        self, scope: str, token_ids: TokenIds
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

    def add(self, scope: str, token_ids: TokenIds, keys: torch.Tensor,
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

