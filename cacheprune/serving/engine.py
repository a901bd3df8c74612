"""The request path: tokenize -> mask -> plan (retrieve) -> prefill -> decode -> publish, one
`ServedRequest` carried through it (ADMITTED -> PLANNED -> PREFILLED -> STAGED -> FINISHED).
One `Engine` serves many tenants from one shared pool; its sharing strategy decides where reused
KV comes from and what a request gives back."""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Sequence
from typing import Literal

import torch
from prometheus_client import CollectorRegistry, Counter, generate_latest

from cacheprune.detectors import DetectionPolicy, load_policy
from cacheprune.engine import (
    Generation,
    PrefillPlan,
    PrefillResult,
    ReusedSpan,
    SamplingParams,
    Transformer,
    generate,
    load_default,
)
from cacheprune.models import ChatTokenizer
from cacheprune.monitor import LeakFinding, LeakMonitor, ProbeMonitor
from cacheprune.pool import EntryIdentity, KVShape, PoolConfig, PoolSession, Scope, open_pool
from cacheprune.serving.baselines import FixedChunks, NoSharing, PrefixCaching
from cacheprune.serving.config import EngineConfig
from cacheprune.serving.context_free import ContextFreeSharing, declared_prefix_ids
from cacheprune.serving.kernels import warm_kernels
from cacheprune.serving.known_clean import KnownCleanText
from cacheprune.serving.prompt import Prompt, PublicRange
from cacheprune.serving.public_sharing import IsolatedSharing, PaperBaselineSharing
from cacheprune.serving.record import RequestRecord, ScoredContinuation
from cacheprune.serving.request import Published, ServedRequest, admit
from cacheprune.serving.sharing import PoolSharing
from cacheprune.serving.strategy import SharingStrategy
from cacheprune.tokens import TokenIds, true_runs

logger = logging.getLogger(__name__)


class Engine:
    """Serves tenants from one model and one pool. `strategy`, if given, replaces the one
    `config.mode` selects (`make_strategy`): for evaluations that observe a mode's work."""

    def __init__(self, model: Transformer, tokenizer: ChatTokenizer, policy: DetectionPolicy,
                 config: EngineConfig | None = None,
                 strategy: SharingStrategy | None = None) -> None:
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
            min_entry_tokens=self.config.match_window,
            anchor_stride=self.config.anchor_stride,
            ttl_s=self.config.pool_ttl_s,
            audit_log_path=self.config.audit_log_path,
            publish_threshold=self.config.publish_threshold,
            sender_count_ttl_s=self.config.sender_count_ttl_s,
            kv_storage_dtype=self.config.kv_storage_dtype,
            recompute_tokens_per_s=self.config.recompute_tokens_per_s,
        ), pool_key=self.config.pool_key)
        self.strategy = strategy or make_strategy(self.config, model, tokenizer)
        warm_kernels()  # before the first request, not during it
        self.registry = CollectorRegistry(auto_describe=True)
        self.publish_failures = Counter(
            "cacheprune_engine_publish_failures",
            "Requests whose publish failed after decoding (answer returned, nothing published)",
            registry=self.registry)
        self.monitor = (LeakMonitor(self.config.leak_monitor)
                        if self.config.leak_monitor is not None else None)
        self.probe_monitor = (ProbeMonitor(self.config.probe_monitor)
                              if self.config.probe_monitor is not None else None)
        self._without_reuse = NoSharing()  # for tenants the probe monitor cools off
        # Per sharing domain: the text enough of its tenants sent clean (detection skips it).
        self._known_clean: dict[str, KnownCleanText] = {}
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
        score_tokens: Sequence[int] | Literal["answer"] | None = None,
    ) -> RequestRecord:
        """Serve one request of `tenant`. `prompt` is a string or chat messages; public ranges
        are character ranges the operator declares public (not scanned), see `render_prompt`.
        `score_tokens`, for evaluation: after the answer, the next-token log-probabilities of
        these tokens (or of the answer itself, its stop token included) teacher-forced under
        this request's KV go in `record.scored`."""
        started = time.perf_counter()  # TTFT counts detection and lookup too
        request = self._admit(tenant, prompt, public_ranges)
        strategy = self.strategy
        if self.probe_monitor is not None and self.probe_monitor.observe(
                tenant, request.token_ids, request.request_id):
            strategy = self._without_reuse  # a suspected prober: nothing looked up or published
        with self.session(request) as session:
            plan = self.plan(request, session, strategy)
            request.attach_plan(plan, session.counted)
            generation = generate(self.model, plan, sampling or SamplingParams(),
                                  self.tokenizer.stop_token_ids, request_start=started)
            request.attach_prefill(generation.prefill)
            # Everything below runs after the first token: it is off the TTFT path.
            self._publish(strategy, request, session)
            request.ended_well = request.publish_error is None
            if request.ended_well:
                session.commit()  # without it the session discards what was staged
        request.finish()
        scored = None if score_tokens is None else self._score(generation, score_tokens)
        text = self.tokenizer.decode(generation.token_ids)
        findings = self._watch(request, text)
        return RequestRecord(
            request_id=request.request_id,
            tenant=tenant,
            text=text,
            token_ids=generation.token_ids,
            stats=generation.stats,
            num_private=request.num_private,
            num_hit_tokens=sum(span.length for span in plan.reused),
            hit_spans=[(span.start, span.end) for span in plan.reused],
            private_mask=request.private,
            num_published_tokens=sum(p.num_tokens for p in request.published),
            published=[p.entry for p in request.published],
            failed_closed_reason=request.failed_closed_reason,
            finish_reason=generation.finish_reason,
            publish_error=request.publish_error,
            num_leak_findings=len(findings),
            scored=scored,
        )

    # ---- one request's steps: `generate` takes them; the vLLM connector takes them itself
    # (`cacheprune.vllm.blend`), in two sessions, since vLLM's request outlives its prefill.

    def session(self, request: ServedRequest) -> PoolSession:
        """The request's pool session, in its tenant's scope; use it inside `with`."""
        scope = Scope(self.identity, request.tenant,
                      self.config.sharing_domain(request.tenant))
        return self.pool.session(request.request_id, scope)

    def plan(self, request: ServedRequest, session: PoolSession,
             strategy: SharingStrategy | None = None) -> PrefillPlan:
        """Which of the request's tokens reuse pooled KV (the engine's strategy unless given);
        looks up and reads in `session` (which counts the request's windows)."""
        return (strategy or self.strategy).plan(request, session)

    def prefill(self, plan: PrefillPlan) -> PrefillResult:
        """The plan's prefill on the model's device (the plan's tensors moved there)."""
        return self.prefill_batch([plan])[0]

    def prefill_batch(self, plans: Sequence[PrefillPlan], model: Transformer | None = None
                      ) -> list[PrefillResult]:
        """Several requests' prefills in one pass over the layers (`Transformer.prefill_batch`)
        of the engine's model, or of `model` (another copy of the same weights: the vLLM
        connector's loader thread has one), on that model's device."""
        model = model or self.model
        device = model.inv_freq.device
        if device.type == "cpu":  # NOTE: a device context costs every torch call a detour
            return model.prefill_batch(plans)
        with torch.device(device):
            return model.prefill_batch([_on_device(plan, device) for plan in plans])

    def publish(self, request: ServedRequest, session: PoolSession,
                strategy: SharingStrategy | None = None) -> list[Published]:
        """Stage what the PREFILLED request gives back in `session` (the engine's strategy
        unless given: the vLLM connector's publisher has its own copy of the weights). Raises
        what the strategy raises; the caller decides what a failure costs."""
        assert request.prefill is not None, "publish after the prefill"
        return (strategy or self.strategy).publish(request, session, request.prefill)

    def close(self) -> None:
        """Close the pool (its files, connections and audit log)."""
        self.pool.close()

    def _score(self, generation: Generation,
               token_ids: Sequence[int] | Literal["answer"]) -> ScoredContinuation:
        started = time.perf_counter()
        if token_ids == "answer":
            stop = [] if generation.stop_token_id is None else [generation.stop_token_id]
            token_ids = generation.token_ids + stop
        logits = self.model.continuation_logits(generation.prefill,
                                                generation.stats.num_prompt_tokens, token_ids)
        return ScoredContinuation(list(token_ids), logits.float().log_softmax(-1),
                                  time.perf_counter() - started)

    def _publish(self, strategy: SharingStrategy, request: ServedRequest,
                 session: PoolSession) -> None:
        """Stage what the request gives back; a failure costs the pool, never the answer."""
        try:
            request.attach_published(self.publish(request, session, strategy))
        except Exception as error:  # noqa: BLE001
            # NOTE: the answer is decoded already; losing it for a cache write would punish
            # the tenant for an operator-side fault. The failure is logged, counted and named
            # in the record, and nothing of the request is published.
            logger.exception("request %s: publishing failed; the answer is returned and "
                             "nothing is published", request.request_id)
            self.publish_failures.inc()
            request.publish_error = f"{type(error).__name__}: {error}"

    def _watch(self, request: ServedRequest, answer: str) -> list[LeakFinding]:
        """Give the leak monitor this request's private text (as hashes) and its answer."""
        if self.monitor is None:
            return []
        self.monitor.remember(request.tenant, (
            self.tokenizer.decode(request.token_ids[start:end].tolist())
            for start, end in true_runs(request.private)))
        return self.monitor.check(request.tenant, request.request_id, answer)

    def metrics_text(self) -> str:
        """The pool's, the engine's and both monitors' metrics (Prometheus text format)."""
        parts = [self.pool.metrics_text(), generate_latest(self.registry).decode("utf-8")]
        for monitor in (self.monitor, self.probe_monitor):
            if monitor is not None:
                parts.append(monitor.metrics_text())
        return "".join(parts)

    def _admit(self, tenant: str, prompt: Prompt,
               public_ranges: Sequence[PublicRange]) -> ServedRequest:
        """Render, tokenize and mask the prompt; raises on bad input before any pool access."""
        if not tenant:
            raise ValueError("tenant must be a non-empty string")
        return admit(f"req-{next(self._request_numbers)}", tenant, prompt, self.tokenizer,
                     self.policy, public_ranges, self._known_clean_for(tenant))

    def _known_clean_for(self, tenant: str) -> KnownCleanText | None:
        """What detection may skip for the tenant: its sharing domain's known-clean text,
        where the pool's threshold applies (mode "cacheprune"); None for a tenant the probe
        monitor cools off (whose requests count for nothing shared)."""
        config = self.config
        if not config.skip_known_clean or config.mode != "cacheprune" or (
                self.probe_monitor is not None and self.probe_monitor.is_cooling(tenant)):
            return None
        domain = config.sharing_domain(tenant)
        known = self._known_clean.get(domain)
        if known is None:
            known = self._known_clean[domain] = KnownCleanText(config.publish_threshold)
        return known

    def cached_token_ids(self) -> list[TokenIds]:
        """Token ids of everything this engine's caches hold (the pool and the strategy's own):
        for audits and the leakage evaluation. Never exported by metrics or logs."""
        return self.pool.stored_token_ids() + self.strategy.cached_token_ids()


def make_strategy(config: EngineConfig, model: Transformer,
                  tokenizer: ChatTokenizer) -> SharingStrategy:
    """The sharing strategy of `config.mode` (for "cacheprune", see `pool_strategy`)."""
    if config.mode == "cacheprune":
        return pool_strategy(config, model, tokenizer)
    if config.mode == "fixed_chunks":
        return FixedChunks(model, config)
    if config.mode in ("tenant_prefix", "global_prefix"):
        return PrefixCaching(per_tenant=config.mode == "tenant_prefix",
                             max_prompts=config.max_prefix_prompts)
    return NoSharing()


def pool_strategy(config: EngineConfig, model: Transformer, tokenizer: ChatTokenizer
                  ) -> PoolSharing:
    """What a "cacheprune" engine publishes, by `config.publish_mode`:
    - "isolated": `IsolatedSharing`, KV that never attended to a private token;
    - "paper_baseline": `PaperBaselineSharing`, the annotator's segments with KV as computed;
    - "segment": `ContextFreeSharing`, content-cut pieces with KV computed without their
      context (after the operator's declared prefix only)."""
    if config.publish_mode == "segment":
        return ContextFreeSharing(model, config, declared_prefix_ids(tokenizer, config))
    if config.publish_mode == "paper_baseline":
        return PaperBaselineSharing(model, config)
    return IsolatedSharing(model, config)


def _on_device(plan: PrefillPlan, device: torch.device) -> PrefillPlan:
    return PrefillPlan(plan.token_ids.to(device), [
        ReusedSpan(span.start, span.keys.to(device), span.values.to(device),
                   span.source_positions.to(device),
                   None if span.recompute is None else span.recompute.to(device))
        for span in plan.reused])
