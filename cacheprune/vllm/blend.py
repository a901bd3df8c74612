"""One vLLM request planned, prefilled and published exactly as cacheprune's own engine serves
it: the same sharing strategy, pool, identity and annotator, over vLLM's model.

Every pool call of the connector is in this module.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass

import numpy as np
import torch

from cacheprune.engine.engine import Engine
from cacheprune.engine.plan import PrefillPlan, PrefillResult, ReusedSpan
from cacheprune.pool import PoolSession, Scope
from cacheprune.vllm.orders import PrefillOrder
from cacheprune.vllm.request_log import PrefillFigures

logger = logging.getLogger(__name__)


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
    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._device = engine.model.inv_freq.device

    def _scope(self, order: PrefillOrder) -> Scope:
        engine = self._engine
        return Scope(engine.identity, order.tenant, engine.config.sharing_domain(order.tenant))

    def prefill(self, order: PrefillOrder, local_keys: torch.Tensor | None,
                local_values: torch.Tensor | None) -> tuple[BlendedPrefill, PrefillFigures]:
        """The prompt's KV, computed as the own engine would (the first
        `order.num_local_tokens` given, from vLLM's own cache), and what the pool served."""
        engine = self._engine
        token_ids = np.asarray(order.token_ids, dtype=np.int64)
        private = np.asarray(order.private, dtype=np.bool_)
        with engine.pool.session(order.request_id, self._scope(order)) as reading:
            plan = engine._plan(reading, order.tenant, token_ids, private)
            pooled = [(span.start, span.end) for span in plan.reused]
            plan = _with_local_prefix(plan, order.num_local_tokens, local_keys, local_values)
            with torch.device(self._device):
                result = engine.model.prefill(_on(plan, self._device),
                                              capture=engine._capture() if order.publish
                                              else None)
        figures = PrefillFigures(pooled, result.num_recomputed, result.num_computed)
        return BlendedPrefill(result), figures

    def publish(self, order: PrefillOrder, prefilled: BlendedPrefill
                ) -> PendingPublication | None:
        engine = self._engine
        token_ids = np.asarray(order.token_ids, dtype=np.int64)
        private = np.asarray(order.private, dtype=np.bool_)
        stack = contextlib.ExitStack()
        session = stack.enter_context(engine.pool.session(order.request_id,
                                                          self._scope(order)))
        with stack:
            generation = _AsGeneration(prefilled.result)
            published = engine._publish(session, order.tenant, token_ids, private,
                                        generation)  # type: ignore[arg-type]
            if not published:
                return None
            return PendingPublication(stack.pop_all(), session, dict(published))

    def close(self) -> None:
        self._engine.pool.close()


@dataclass(slots=True)
class _AsGeneration:
    prefill: PrefillResult


def _with_local_prefix(plan: PrefillPlan, num_local: int, keys: torch.Tensor | None,
                       values: torch.Tensor | None) -> PrefillPlan:
    """The plan with its first `num_local` tokens taken from vLLM's prefix cache (KV already
    at their positions); pooled spans are cut to start after them."""
    if num_local == 0 or keys is None or values is None:
        return plan
    spans = [ReusedSpan(0, keys, values, torch.arange(num_local))]
    for span in plan.reused:
        cut = max(num_local - span.start, 0)
        if cut >= span.length:
            continue
        spans.append(ReusedSpan(
            span.start + cut, span.keys[:, :, cut:], span.values[:, :, cut:],
            span.source_positions[cut:],
            None if span.recompute is None else span.recompute[cut:]))
    return PrefillPlan(plan.token_ids, spans)


def _on(plan: PrefillPlan, device: torch.device) -> PrefillPlan:
    if device.type == "cpu":
        return plan
    return PrefillPlan(plan.token_ids.to(device), [
        ReusedSpan(span.start, span.keys.to(device), span.values.to(device),
                   span.source_positions.to(device),
                   None if span.recompute is None else span.recompute.to(device))
        for span in plan.reused])
