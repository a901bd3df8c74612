"""The request path: tokenize -> mask -> plan (retrieve) -> prefill -> decode -> publish.
One `Engine` serves many tenants from one shared pool; its sharing strategy decides where reused
KV comes from and what a request gives back."""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence

import numpy as np

from cacheprune.detectors import DetectionPolicy, load_policy
from cacheprune.engine.generate import SamplingParams, generate
from cacheprune.engine.loader import load_default
from cacheprune.engine.model import Transformer
from cacheprune.models import ChatTokenizer
from cacheprune.pool import EntryIdentity, KVShape, PoolConfig, Scope, open_pool
from cacheprune.serving.baselines import FixedChunks, NoSharing, PrefixCaching
from cacheprune.serving.config import EngineConfig
from cacheprune.serving.prompt import Prompt, PublicRange, render_prompt
from cacheprune.serving.record import RequestRecord
from cacheprune.serving.request import ServedRequest
from cacheprune.serving.sharing import SegmentSharing
from cacheprune.serving.strategy import SharingStrategy
from cacheprune.tokens import TokenIds


class Engine:
    def __init__(self, model: Transformer, tokenizer: ChatTokenizer, policy: DetectionPolicy,
                 config: EngineConfig | None = None) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.policy = policy
        self.config = config or EngineConfig()
        shape = model.config
        kv_shape = KVShape(shape.num_layers, shape.num_kv_heads, shape.head_dim)
        # What an entry must have been computed under to be reused here.
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
        self.strategy = make_strategy(self.config, model)
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
        request = self._admit(tenant, prompt, public_ranges)
        strategy = self.strategy
        scope = Scope(self.identity, tenant, self.config.sharing_domain(tenant))
        with self.pool.session(request.request_id, scope) as session:
            plan = strategy.plan(request, session)
            generation = generate(self.model, plan, sampling or SamplingParams(),
                                  self.tokenizer.stop_token_ids, capture=strategy.capture(),
                                  request_start=started)
            # Everything below runs after the first token: it is off the TTFT path.
            published = strategy.publish(request, session, generation.prefill)
            session.commit()
        return RequestRecord(
            request_id=request.request_id,
            tenant=tenant,
            text=self.tokenizer.decode(generation.token_ids),
            token_ids=generation.token_ids,
            stats=generation.stats,
            num_private=request.num_private,
            num_hit_tokens=sum(span.length for span in plan.reused),
            hit_spans=[(span.start, span.end) for span in plan.reused],
            private_mask=request.private,
            num_published_tokens=sum(p.num_tokens for p in published),
            published=[p.segment_hash for p in published],
            failed_closed_reason=request.failed_closed_reason,
            finish_reason=generation.finish_reason,
        )

    def _admit(self, tenant: str, prompt: Prompt,
               public_ranges: Sequence[PublicRange]) -> ServedRequest:
        """Render, tokenize and mask the prompt; raises on bad input before any pool access."""
        if not tenant:
            raise ValueError("tenant must be a non-empty string")
        text, public = render_prompt(self.tokenizer, prompt, public_ranges)
        encoding = self.tokenizer.encode(text)
        masked = self.policy.mask(text, encoding.offsets, public)
        detection = masked.detection
        return ServedRequest(
            request_id=f"req-{next(self._request_numbers)}",
            tenant=tenant,
            token_ids=np.asarray(encoding.ids, dtype=np.int64),
            private=masked.mask,
            failed_closed_reason=detection.reason if detection.failed_closed else None,
        )

    def cached_token_ids(self) -> list[TokenIds]:
        """Token ids of everything this engine's caches hold (the pool and the strategy's own):
        for audits and the leakage evaluation. Never exported by metrics or logs."""
        pooled: list[TokenIds] = [ids.astype(np.int64) for ids in self.pool.stored_token_ids()]
        return pooled + self.strategy.cached_token_ids()


def make_strategy(config: EngineConfig, model: Transformer) -> SharingStrategy:
    """The sharing strategy of `config.mode`."""
    if config.mode == "cacheprune":
        return SegmentSharing(model, config)
    if config.mode == "fixed_chunks":
        return FixedChunks(model, config)
    if config.mode in ("tenant_prefix", "global_prefix"):
        return PrefixCaching(per_tenant=config.mode == "tenant_prefix",
                             max_prompts=config.max_prefix_prompts)
    return NoSharing()
