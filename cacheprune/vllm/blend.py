"""One vLLM request planned, prefilled and published exactly as cacheprune's own engine serves
it: the engine's sharing strategy, pool, identity and annotator, over vLLM's model.

Every pool call of the connector goes through here. The steps the own engine takes inside one
pool session are split in two sessions, because vLLM's request outlives its prefill:
- reading (`prefill`): the strategy's plan (lookup, read), the prefill; the session, and with
  it every lease, ends before the KV goes into vLLM's blocks;
- publishing (`publish`): the strategy's publication, staged in a session that stays open
  until the request ends, then committed or aborted (`PendingPublication.settle`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np
import torch

from cacheprune.engine.plan import PrefillPlan, PrefillResult, ReusedSpan
from cacheprune.pool import PoolSession, Scope
from cacheprune.serving import Engine, ServedRequest, SharingStrategy
from cacheprune.vllm.orders import PrefillOrder
from cacheprune.vllm.request_log import PrefillFigures


@dataclass(slots=True)
class BlendedPrefill:
    """A prompt's KV as cacheprune's prefill computed it (reused, recomputed and computed)."""

    result: PrefillResult

    @property
    def keys(self) -> torch.Tensor:
        return self.result.keys

    @property
    def values(self) -> torch.Tensor:
        return self.result.values


class PendingPublication:
    """Staged segments of one request, waiting for how the request ended."""

    def __init__(self, stack: contextlib.ExitStack, session: PoolSession,
                 staged: dict[str, int]) -> None:
        self._stack = stack
        self._session = session
        self._staged = staged  # segment name -> tokens

    def settle(self, ended_well: bool) -> int:
        """Publish (the request ended well) or discard; returns the tokens published."""
        if ended_well:
            self._session.commit()
        else:
            self._session.abort("request_did_not_end_well")
        self._stack.close()
        return sum(self._staged.get(str(name), 0) for name in self._session.published)


class Blender:
    """`publishing`: the strategy that publishes, when it is not the engine's own (the same
    strategy over another copy of the weights: the connector's publisher thread)."""

    def __init__(self, engine: Engine, publishing: SharingStrategy | None = None) -> None:
        self._engine = engine
        self._publishing = publishing or engine.strategy
        self._device = engine.model.inv_freq.device

    def prefill(self, order: PrefillOrder, local_keys: torch.Tensor | None,
                local_values: torch.Tensor | None) -> tuple[BlendedPrefill, PrefillFigures]:
        """The prompt's KV, computed as the own engine would (the first
        `order.num_local_tokens` given, from vLLM's own cache), and what the pool served."""
        engine, strategy = self._engine, self._engine.strategy
        request = _served_request(order)
        with engine.pool.session(order.request_id, self._scope(order)) as reading:
            plan = strategy.plan(request, reading)
            pooled = _cut(plan.reused, order.num_local_tokens)
            if local_keys is not None and local_values is not None:
                local = ReusedSpan(0, local_keys, local_values,
                                   torch.arange(order.num_local_tokens))
                plan = PrefillPlan(plan.token_ids, [local, *pooled])
            else:
                plan = PrefillPlan(plan.token_ids, pooled)
            with torch.device(self._device):
                result = engine.model.prefill(_on(plan, self._device))
        figures = PrefillFigures([(span.start, span.end) for span in pooled],
                                 result.num_recomputed, result.num_computed,
                                 order.num_local_tokens)
        return BlendedPrefill(result), figures

    def publish(self, order: PrefillOrder, prefilled: BlendedPrefill
                ) -> PendingPublication | None:
        """Stage the request's segments; None when there is nothing to publish."""
        engine = self._engine
        stack = contextlib.ExitStack()
        session = stack.enter_context(engine.pool.session(order.request_id,
                                                          self._scope(order)))
        with stack:
            published = self._publishing.publish(_served_request(order), session,
                                                 prefilled.result)
            if not published:
                return None
            staged = {p.segment_hash: p.num_tokens for p in published}
            return PendingPublication(stack.pop_all(), session, staged)

    def close(self) -> None:
        self._engine.pool.close()

    def _scope(self, order: PrefillOrder) -> Scope:
        engine = self._engine
        return Scope(engine.identity, order.tenant, engine.config.sharing_domain(order.tenant))


def _served_request(order: PrefillOrder) -> ServedRequest:
    return ServedRequest(request_id=order.request_id, tenant=order.tenant,
                         token_ids=np.asarray(order.token_ids, dtype=np.int64),
                         private=np.asarray(order.private, dtype=np.bool_),
                         failed_closed_reason=None,
                         declared_public=np.asarray(order.declared_public, dtype=np.bool_))


def _cut(spans: list[ReusedSpan], num_local: int) -> list[ReusedSpan]:
    """Pooled spans cut to start after the first `num_local` tokens, whose KV vLLM's own
    prefix cache holds already (at their positions)."""
    kept = []
    for span in spans:
        cut = max(num_local - span.start, 0)
        if cut >= span.length:
            continue
        kept.append(span if cut == 0 else ReusedSpan(
            span.start + cut, span.keys[:, :, cut:], span.values[:, :, cut:],
            span.source_positions[cut:],
            None if span.recompute is None else span.recompute[cut:]))
    return kept


def _on(plan: PrefillPlan, device: torch.device) -> PrefillPlan:
    if device.type == "cpu":
        return plan
    return PrefillPlan(plan.token_ids.to(device), [
        ReusedSpan(span.start, span.keys.to(device), span.values.to(device),
                   span.source_positions.to(device),
                   None if span.recompute is None else span.recompute.to(device))
        for span in plan.reused])
