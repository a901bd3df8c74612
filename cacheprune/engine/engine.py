"""The request path: tokenize -> mask -> retrieve -> plan -> prefill -> decode -> annotate ->
publish. One `Engine` serves many tenants from one shared pool."""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch

from cacheprune.annotator import annotate, score_spans
from cacheprune.detectors import DetectionPolicy, load_policy
from cacheprune.engine.generate import Generation, SamplingParams, generate
from cacheprune.engine.loader import load_default
from cacheprune.engine.model import Transformer
from cacheprune.engine.plan import AttentionCapture, PrefillPlan, ReusedSpan
from cacheprune.engine.prefix_store import PrefixStore
from cacheprune.engine.prompt import Prompt, PublicRange, render_prompt
from cacheprune.engine.sharing import EngineConfig, RequestRecord
from cacheprune.engine.tokenizer import ChatTokenizer
from cacheprune.pool import (
    EntryIdentity,
    KVShape,
    Match,
    PoolConfig,
    PoolSession,
    Scope,
    open_pool,
)

BoolMask = npt.NDArray[np.bool_]
TokenIds = npt.NDArray[np.int64]
GLOBAL_SCOPE = "*"  # the unsafe global prefix cache's single scope


class Engine:
    def __init__(self, model: Transformer, tokenizer: ChatTokenizer, policy: DetectionPolicy,
                 config: EngineConfig | None = None) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.policy = policy
        self.config = config or EngineConfig()
        shape = model.config
        kv_shape = KVShape(shape.num_layers, shape.num_kv_heads, shape.head_dim)
        self.identity = EntryIdentity.for_shape(model.model_id, policy.policy_version, kv_shape)
        self.pool = open_pool(self.config.pool_url, PoolConfig(
            kv_shape=kv_shape,
            budget_bytes=self.config.pool_budget_bytes,
            max_context_tokens=shape.max_context,
            min_entry_tokens=self.config.annotator.min_len,
            anchor_stride=self.config.anchor_stride,
            ttl_s=self.config.pool_ttl_s,
            audit_log_path=self.config.audit_log_path,
        ), pool_key=self.config.pool_key)
        self.prefix_store = PrefixStore(self.config.max_prefix_prompts)
        self._request_numbers = itertools.count(1)

    @classmethod
    def from_default(cls, config: EngineConfig | None = None,
                     policy_path: str | None = None) -> Engine:
        model, tokenizer = load_default()
        return cls(model, tokenizer, load_policy(policy_path), config)

    def generate(
        self,
        tenant: str,
        prompt: Prompt,
        sampling: SamplingParams | None = None,
        public_ranges: Sequence[PublicRange] = (),
    ) -> RequestRecord:
        """Serve one request of `tenant`. `prompt` is a string or chat messages; public ranges
        are character ranges the operator declares public (not scanned), see `render_prompt`."""
        started = time.perf_counter()  # TTFT counts detection and lookup too
        if not tenant:
            raise ValueError("tenant must be a non-empty string")
        sampling = sampling or SamplingParams()
        text, public = render_prompt(self.tokenizer, prompt, public_ranges)
        encoding = self.tokenizer.encode(text)
        token_ids = np.asarray(encoding.ids, dtype=np.int64)
        masked = self.policy.mask(text, encoding.offsets, public)
        private = masked.mask
        request_id = f"req-{next(self._request_numbers)}"
        scope = Scope(self.identity, tenant, self.config.sharing_domain(tenant))
        with self.pool.session(request_id, scope) as session:
            plan = self._plan(session, tenant, token_ids, private)
            generation = generate(self.model, plan, sampling, self.tokenizer.stop_token_ids,
                                  capture=self._capture(), request_start=started)
            # Everything below runs after the first token: it is off the TTFT path.
            published = self._publish(session, tenant, token_ids, private, generation)
            session.commit()
        return RequestRecord(
            request_id=request_id,
            tenant=tenant,
            text=self.tokenizer.decode(generation.token_ids),
            token_ids=generation.token_ids,
            stats=generation.stats,
            num_private=int(private.sum()),
            num_hit_tokens=sum(span.length for span in plan.reused),
            hit_spans=[(span.start, span.end) for span in plan.reused],
            private_mask=private,
            num_published_tokens=sum(length for _, length in published),
            published=[segment_hash for segment_hash, _ in published],
            failed_closed_reason=masked.detection.reason if masked.detection.failed_closed
            else None,
            finish_reason=generation.finish_reason,
        )

    # -- retrieve and plan ------------------------------------------------------------------

    def _plan(self, session: PoolSession, tenant: str, token_ids: TokenIds,
              private: BoolMask) -> PrefillPlan:
        mode = self.config.mode
        reused: list[ReusedSpan] = []
        if mode in ("cacheprune", "fixed_chunks"):
            for match in session.lookup(token_ids, private):
                if mode == "fixed_chunks" and not self._is_whole_chunk(match):
                    continue
                kv = session.read(match)
                if kv is None:  # gone or failed its checks since the lookup: compute it
                    continue
                reused.append(ReusedSpan(
                    match.request_start, kv.keys, kv.values,
                    torch.tensor(kv.positions, dtype=torch.long),
                    torch.tensor(kv.recompute, dtype=torch.bool),
                ))
        elif mode in ("tenant_prefix", "global_prefix"):
            scope = tenant if mode == "tenant_prefix" else GLOBAL_SCOPE
            cached, length = self.prefix_store.longest_prefix(scope, token_ids)
            if cached is not None:
                reused.append(ReusedSpan(0, cached.keys[:, :, :length],
                                         cached.values[:, :, :length], torch.arange(length)))
        return PrefillPlan(torch.from_numpy(token_ids), reused)

    def _is_whole_chunk(self, match: Match) -> bool:
        size = self.config.chunk_tokens
        return match.request_start % size == 0 and match.length == size and \
            match.entry_start == 0

    def _capture(self) -> AttentionCapture | None:
        if self.config.mode not in ("cacheprune", "fixed_chunks"):
            return None
        layers = range(0, self.model.config.num_layers, self.config.capture_layer_stride)
        return AttentionCapture(layers=tuple(layers))

    # -- annotate and publish ---------------------------------------------------------------

    def _publish(self, session: PoolSession, tenant: str, token_ids: TokenIds,
                 private: BoolMask, generation: Generation) -> list[tuple[str, int]]:
        """Stage what this request contributes; it becomes visible only if the request ends
        well. Returns (segment hash, length) pairs."""
        mode = self.config.mode
        result = generation.prefill
        if mode in ("tenant_prefix", "global_prefix"):
            scope = tenant if mode == "tenant_prefix" else GLOBAL_SCOPE
            self.prefix_store.add(scope, token_ids, result.keys, result.values)
            return []
        if mode == "no_sharing":
            return []
        assert result.attention is not None, "publishing modes capture attention"
        attention = result.attention.numpy()
        computed = np.zeros(len(token_ids), dtype=np.bool_)
        computed[result.computed_positions.numpy()] = True
        if mode == "fixed_chunks":
            segments = self._chunk_segments(attention, private, computed)
        else:
            annotation = annotate(attention, private, computed, self.config.annotator)
            segments = [(s.start, s.end, s.recompute) for s in annotation.segments]
        private_positions = np.flatnonzero(private)
        first_private = int(private_positions[0]) if private_positions.size else len(token_ids)
        private_free: _PrivateFreeKV | None = None
        published = []
        for start, end, marks in segments:
            if mode == "fixed_chunks":
                keys, values, positions = self._isolated_kv(token_ids, private, start, end)
            elif self.config.publish_mode == "isolated" and end > first_private:
                if private_free is None:  # one pass serves every segment of the request
                    last_end = max(segment_end for _, segment_end, _ in segments)
                    private_free = self._private_free_kv(token_ids, private, last_end)
                keys, values, positions = private_free.segment(start, end)
            else:
                keys = result.keys[:, :, start:end]
                values = result.values[:, :, start:end]
                positions = np.arange(start, end)
            segment_hash = session.stage(token_ids[start:end], keys, values, positions, marks,
                                         private[start:end])
            published.append((str(segment_hash), end - start))
        return published

    def _chunk_segments(self, attention: npt.NDArray[np.float32], private: BoolMask,
                        computed: BoolMask) -> list[tuple[int, int, BoolMask]]:
        """Fixed-size chunks at fixed boundaries, dropped if they hold a private token or were
        not computed here; recompute marks by the same policy as cacheprune's segments."""
        size, n = self.config.chunk_tokens, len(private)
        starts = np.arange(0, n - size + 1, size, dtype=np.int64)
        keep = [s for s in starts if not private[s:s + size].any() and computed[s:s + size].all()]
        if not keep:
            return []
        spans = [(int(s), int(s) + size) for s in keep]
        # Each chunk's KV is computed alone, so everything before a chunk counts as outside it.
        config = self.config.annotator.model_copy(update={"recompute_context": "all"})
        scored = score_spans(attention, private, spans, config)
        return [(segment.start, segment.end, segment.recompute) for segment in scored]

    def _private_free_kv(self, token_ids: TokenIds, private: BoolMask,
                         end: int) -> _PrivateFreeKV:
        """KV of the prompt's first `end` tokens computed with every private token left out:
        a segment cut from it never attended to a private token, yet saw the public text
        before it (the system prompt, the document's earlier part)."""
        kept = np.flatnonzero(~private[:end])
        result = self.model.prefill(PrefillPlan.full(torch.from_numpy(token_ids[kept])))
        index_of = np.full(end, -1, dtype=np.int64)
        index_of[kept] = np.arange(kept.size)
        return _PrivateFreeKV(result.keys, result.values, index_of)

    def _isolated_kv(self, token_ids: TokenIds, private: BoolMask, start: int,
                     end: int) -> tuple[torch.Tensor, torch.Tensor, npt.NDArray[np.int64]]:
        """A fixed chunk's KV computed with nothing before it but the sequence's first token
        (the attention sink the model expects), unless that token is private."""
        lead = [] if private[0] or start == 0 else [int(token_ids[0])]
        ids = torch.as_tensor(lead + token_ids[start:end].tolist(), dtype=torch.long)
        result = self.model.prefill(PrefillPlan.full(ids))
        skip = len(lead)
        return (result.keys[:, :, skip:], result.values[:, :, skip:],
                np.arange(skip, skip + end - start))


@dataclass(slots=True)
class _PrivateFreeKV:
    """KV of a prompt with its private tokens taken out; `index_of[p]` is where prompt position
    p sits in it (-1 for a private token)."""

    keys: torch.Tensor
    values: torch.Tensor
    index_of: npt.NDArray[np.int64]

    def segment(self, start: int, end: int
                ) -> tuple[torch.Tensor, torch.Tensor, npt.NDArray[np.int64]]:
        first = int(self.index_of[start])
        if first < 0 or int(self.index_of[end - 1]) != first + end - start - 1:
            raise ValueError(f"segment [{start}, {end}) holds a private token")
        return (self.keys[:, :, first:first + end - start],
                self.values[:, :, first:first + end - start],
                np.arange(first, first + end - start))
