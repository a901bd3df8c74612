"""One vLLM request planned, prefilled and published exactly as cacheprune's own engine serves
it: the engine's steps (`Engine.session`, `plan`, `prefill`, `publish`), over vLLM's model.

Every pool call of the connector goes through here. The steps the own engine takes inside one
pool session are split in two sessions, because vLLM's request outlives its prefill:
- reading (`prefill`): the plan (lookup, read; the publication threshold counts the request's
  windows), the prefill; the session, and with it every lease, ends before the KV goes into
  vLLM's blocks;
- publishing (`publish`): the publication, staged in a session that carries the reading
  session's count (the windows are counted once; a prompt vLLM computed counts its own) and
  stays inside its `with` until the publisher commits or discards it
  (`PendingPublication.settle`: at once, unless the request ended badly first).
Each step advances the order's `ServedRequest` (PLANNED, PREFILLED) except `publish`, which
runs in the publisher thread and only reads it.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence

import torch

from cacheprune.engine import PrefillPlan, ReusedSpan, Transformer
from cacheprune.pool import shareable_mask
from cacheprune.serving import Engine, Published, ServedRequest, SharingStrategy
from cacheprune.serving.engine import make_strategy
from cacheprune.serving.sharing import PoolSharing
from cacheprune.tokens import MaskArray
from cacheprune.vllm.orders import PrefillOrder
from cacheprune.vllm.request_log import PrefillFigures

# A publication's steps: yields the staged segments, is sent how the request ended, returns
# the tokens published.
PublicationSteps = Generator[list[Published], bool, int]


class PendingPublication:
    """Staged segments of one request, waiting to be committed or discarded: its publishing
    session, suspended inside its `with` (`Blender._publication`) until `settle` resumes it.
    One dropped unsettled is discarded when Python closes the suspended steps."""

    def __init__(self, steps: PublicationSteps) -> None:
        self._steps = steps
        self.published: list[Published] = next(steps, [])  # [] : ended, nothing staged

    def settle(self, ended_well: bool) -> int:
        """Publish (the request ended well) or discard; returns the tokens published."""
        try:
            self._steps.send(ended_well)
        except StopIteration as done:
            return int(done.value)
        raise AssertionError("a publication is settled once")


class Blender:
    """`copy`: the worker's own copy of the weights, when it has one (the engine computes with
    vLLM's layers). The background threads compute with it: publications always, prefills when
    asked (`background`), so that neither waits for vLLM's layers nor holds them."""

    def __init__(self, engine: Engine, copy: Transformer | None = None) -> None:
        self._engine = engine
        self._copy = copy
        self._publishing: SharingStrategy | None = None if copy is None else \
            make_strategy(engine.config, copy, engine.tokenizer)

    def plan(self, order: PrefillOrder, local_keys: torch.Tensor | None,
             local_values: torch.Tensor | None) -> PrefillPlan:
        """The order's plan, attached to its request (PLANNED): pooled spans as the own engine
        finds them, after the first `order.num_local_tokens` (given, from vLLM's own cache).
        The reading session, and every lease, ends here: the plan holds what was read
        (copies, or views of entries, which are never written once published)."""
        engine, request = self._engine, order.request
        with engine.session(request) as reading:
            plan = engine.plan(request, reading)
            pooled = _cut(plan.reused, order.num_local_tokens)
            if local_keys is not None and local_values is not None:
                local = ReusedSpan(0, local_keys, local_values,
                                   torch.arange(order.num_local_tokens))
                plan = PrefillPlan(plan.token_ids, [local, *pooled])
            else:
                plan = PrefillPlan(plan.token_ids, pooled)
            plan.validate(engine.model.config)
            request.attach_plan(plan, reading.counted)
        return plan

    def prefill(self, orders: Sequence[PrefillOrder], background: bool = False
                ) -> list[PrefillFigures]:
        """The PLANNED orders' prefills in one pass over the layers (`Engine.prefill_batch`),
        each attached to its request (PREFILLED); returns what the pool served each.
        `background`: called from a background thread, which computes with the copy of the
        weights when there is one (vLLM's layers, in turns with the steps, otherwise)."""
        plans = []
        for order in orders:
            assert order.request.plan is not None, "prefill after the plan"
            plans.append(order.request.plan)
        model = self._copy if background else None
        figures = []
        for order, plan, result in zip(orders, plans, self._engine.prefill_batch(plans, model),
                                       strict=True):
            order.request.attach_prefill(result)
            pooled = [span for span in plan.reused if span.start >= order.num_local_tokens]
            figures.append(PrefillFigures([(span.start, span.end) for span in pooled],
                                          result.num_recomputed, result.num_computed,
                                          order.num_local_tokens))
        return figures

    def worth_publishing(self, request: ServedRequest) -> bool:
        """Whether the PREFILLED request's publication could stage anything (cheap, in the
        engine's thread: the publisher's bounded queue is kept for requests that have
        something to publish, such as the k-th tenant's under the publication threshold)."""
        strategy = self._publishing or self._engine.strategy
        if not isinstance(strategy, PoolSharing):
            return True
        assert request.prefill is not None, "after the prefill"
        shareable = shareable_mask(request.counted, self._engine.config.applied_threshold,
                                   strategy.search_view(request).num_tokens)
        return strategy.worth_publishing(request, request.prefill, shareable)

    def publish(self, request: ServedRequest, new_text: MaskArray | None = None,
                background: bool = True) -> PendingPublication | None:
        """Stage the PREFILLED request's segments; None when there is nothing to publish.
        `new_text`: the request is published before its prefill (`PrefillOrder.publish_first`),
        its new text flagged; the publication then counts the request's windows itself (the
        scheduler's probe counted them in another process) and computes everything it stages
        from the tokens. `background`: called from a background thread, which computes with
        the copy of the weights when there is one (vLLM's layers otherwise: the step's)."""
        strategy = (self._publishing if background else None) or self._engine.strategy
        publication = PendingPublication(self._publication(request, new_text, strategy))
        return publication if publication.published else None

    def _publication(self, request: ServedRequest, new_text: MaskArray | None,
                     strategy: SharingStrategy) -> PublicationSteps:
        engine = self._engine
        with engine.session(request) as session:
            if new_text is None:
                session.carry_count(request.counted)
                published = engine.publish(request, session, strategy)
            else:
                assert isinstance(strategy, PoolSharing), "a probe needs a pool strategy"
                # NOTE: the lookup counts the request's windows in this session, and finds
                # what another request published since the probe: that is not new any more
                # (a later tenant's job behind the k-th's then skips the pass).
                matches = strategy.matches(request, session)
                new_text = new_text & ~strategy.served_mask(request, matches)
                published = strategy.publish_new_text(request, session, new_text)
            if not published:
                return 0
            ended_well = yield published
            if ended_well:
                session.commit()
            else:
                session.abort("request_did_not_end_well")
        staged = {p.entry: p.num_tokens for p in published}
        return sum(staged.get(name, 0) for name in session.published)

    def close(self) -> None:
        self._engine.close()


def _cut(spans: list[ReusedSpan], num_local: int) -> list[ReusedSpan]:
    """Pooled spans cut to start after the first `num_local` tokens, whose KV vLLM's own
    prefix cache holds already (at their positions)."""
    kept = (span.clipped(num_local, span.end) for span in spans)
    return [span for span in kept if span is not None]
