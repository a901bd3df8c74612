"""The connector's worker half: run the ordered prefills into vLLM's paged cache, in the step
before vLLM's forward pass or in the loader thread while the steps go on (`async_load`);
publish each request's segments later, off the engine's steps.

Calling contract (vLLM's model runner, in the worker process, once per step, empty steps
included): `hold_step` when the step's metadata is bound (before its forward pass, which may
come before `start_step`), `start_step` before or after the forward pass (vLLM computes only
each prompt's last token; a step that prefills in the step has it before), `end_step` after
both, then `take_loaded`, `take_failed_blocks` and `take_report`.

An order `in_background` goes to the loader thread (`loader`), which plans, prefills and
writes it over the worker's copy of the weights (or vLLM's layers in turns with the steps);
`take_loaded` tells vLLM which are done, and their outcomes are applied then, in the engine's
thread, as an order prefilled in the step is applied at once. A verdict on a request still
with the loader (it was aborted) waits for its outcome.

An order to publish first (`PrefillOrder.publish_first`: the k-th tenant's cold prompt) is
published before it is planned, where it is prefilled (the step, over vLLM's layers, or the
loader), and committed at once; its plan then reuses what it published.

Any other request's publication (annotate, isolated KV, stage) and its settling (commit or
abort) run in the publisher thread (`publisher`), over its own copy of the weights or, failing that,
over vLLM's layers in turns with the steps (`model_turns`). At most MAX_WAITING_PUBLICATIONS
wait or run; a request beyond them is not published (counted in the figures as `dropped`): a
later request with the same document publishes it. A publication is committed as soon as it
is staged, unless the scheduler's verdict that the request ended badly came first (then it is
discarded, or skipped if it has not run); every request with a publication is settled
exactly once.

The worker advances each order's `ServedRequest`: PREFILLED (its prefill ran, or vLLM's),
FINISHED (its publication settled); `ended_well` is the scheduler's verdict, which may come
before or after the commit.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import torch

from cacheprune.serving import ServedRequest
from cacheprune.vllm import kv_layout, model_turns
from cacheprune.vllm.blend import Blender
from cacheprune.vllm.cold_probe import new_text_after
from cacheprune.vllm.kv_layout import TileLayout
from cacheprune.vllm.loader import Loader
from cacheprune.vllm.orders import PrefillOrder, StepOrders, WorkerReport
from cacheprune.vllm.publisher import Publisher
from cacheprune.vllm.request_log import PrefillFigures, RequestLog

logger = logging.getLogger(__name__)
_LAYER_NUMBER = re.compile(r"\.(\d+)\.")
# Publications that may wait or run at once: each holds a prompt's KV until it has run.
MAX_WAITING_PUBLICATIONS = 4
# The most rows one pass computes for a step's prefills (`Blender.prefill`). Batching pays where
# each request computes few rows (8 warm requests of ~35 rows: 1.58x faster than one by one)
# and not for long ones (4 cold 1,873-token prompts: 0.86x; benchmarks/batched_prefill.py), so
# warm requests go together and a cold prompt goes alone.
MAX_BATCH_ROWS = 1024
# How long a step with nothing to compute waits for the publisher: vLLM keeps stepping while a
# finished request's publication is pending, and should not spin meanwhile.
IDLE_STEP_WAIT_S = 0.02


def _no_figures() -> dict[str, int]:
    return {"pool": 0, "computed": 0, "recomputed": 0, "published": 0, "dropped": 0}


@dataclass(slots=True, frozen=True)
class Loaded:
    """What came of one order's prefill: what the pool served it, or None when it failed (its
    blocks are reported not loaded); and the tokens it published before it (publish_first)."""

    order: PrefillOrder
    figures: PrefillFigures | None
    num_published_first: int = 0


def layer_order(layer_names: list[str]) -> list[str]:
    """Attention layers in model order (by the layer number in their names)."""
    def number(name: str) -> int:
        found = _LAYER_NUMBER.search(name)
        if found is None:
            raise ValueError(f"cannot tell the layer number of KV cache {name!r}")
        return int(found.group(1))
    return sorted(layer_names, key=number)


class WorkerSide:
    def __init__(self, blender: Blender, block_size: int, layout: TileLayout,
                 num_layers: int, request_log: RequestLog,
                 max_waiting_publications: int = MAX_WAITING_PUBLICATIONS,
                 loader_threads: int | None = None) -> None:
        self._blender = blender
        self._publisher = Publisher(blender, max_waiting_publications)
        self._loader: Loader[Loaded] = Loader(self._load_in_background, loader_threads)
        self._loading: set[str] = set()  # requests with the loader
        self._request_log = request_log
        self._block_size = block_size
        self._layout = layout
        self._num_layers = num_layers
        self._layers: list[torch.Tensor] = []
        self._device = torch.device("cpu")
        # Requests whose publication is not settled (PREFILLED, with the publisher).
        self._requests: dict[str, ServedRequest] = {}
        self._verdicts: dict[str, bool] = {}  # arrived, not yet applied
        self._report = WorkerReport()
        self._failed_blocks: set[int] = set()
        self._figures = _no_figures()
        self._computes = True  # this step runs a forward pass

    def register(self, kv_caches: dict[str, torch.Tensor]) -> None:
        layers = [kv_caches[name] for name in layer_order(list(kv_caches))]
        if len(layers) != self._num_layers:
            raise ValueError(f"vLLM registered {len(layers)} KV cache layers, the model "
                             f"config says {self._num_layers}")
        self._layers = layers
        # NOTE: the index tensors live where the cache does, so no copy is made per layer.
        self._device = layers[0].device
        self._layout = self._layout.to(self._device)

    # ---- before the forward pass ---------------------------------------------------------

    def hold_step(self) -> None:
        """A step begins: vLLM's layers are the engine's until `end_step` (model_turns)."""
        model_turns.hold_for_step()

    def start_step(self, orders: StepOrders) -> None:
        self._computes = orders.computes
        if orders.computes:
            model_turns.hold_for_step()  # no-op when `hold_step` came first, as it should
        else:
            model_turns.release_after_step()  # no forward pass: the publisher may go on
        self._verdicts.update(orders.verdicts)
        in_background = [order for order in orders.prefills if order.in_background]
        self._apply(self._load([order for order in orders.prefills
                                if not order.in_background]))
        self._loading.update(order.request.request_id for order in in_background)
        self._loader.submit(in_background)
        for prefill in orders.vllm_prefills:
            self._log_vllm_prefill(prefill.request_id, prefill.num_tokens,
                                   prefill.num_local_tokens)

    def _log_vllm_prefill(self, request_id: str, num_tokens: int, num_local: int) -> None:
        """The request-log line of a prompt vLLM computed: nothing from the pool."""
        self._request_log.prefill(request_id, num_tokens, PrefillFigures(
            [], 0, num_tokens - num_local, num_local), computed_by="vllm")

    def _load(self, orders: Sequence[PrefillOrder], background: bool = False
              ) -> Iterator[Loaded]:
        """Plan, prefill and write the orders: in the engine's thread, or in the loader's
        (`background`). One outcome per order, each batch's as soon as it is done, the
        batches with the fewest rows to compute first (the warm requests' first tokens need
        not wait for a cold prompt's prefill); an order to publish first is published (and
        committed) before its plan, in order, so that a later order for the same text finds
        it. Nothing of the worker's state changes here."""
        planned = []
        published: dict[str, int] = {}
        for order in orders:
            if order.publish_first:
                published[order.request.request_id] = self._publish_first(order, background)
            if self._plan(order):
                planned.append(order)
            else:
                yield Loaded(order, None, published.get(order.request.request_id, 0))
        planned.sort(key=_computed_rows)
        for batch in _batches(planned, MAX_BATCH_ROWS):
            for outcome in self._prefill(batch, background):
                request_id = outcome.order.request.request_id
                yield Loaded(outcome.order, outcome.figures, published.get(request_id, 0))

    def _publish_first(self, order: PrefillOrder, background: bool) -> int:
        """Publish the order's new text from its tokens alone and commit it; returns the
        tokens published (0 if that failed: the prefill then computes the prompt)."""
        request = order.request
        try:
            publication = self._blender.publish(
                request, new_text_after(request, order.num_local_tokens), background)
            return 0 if publication is None else publication.settle(ended_well=True)
        except Exception:  # noqa: BLE001 - a lost publication is only a future miss
            logger.exception("cacheprune: publishing request %s before its prefill failed",
                             request.request_id)
            return 0

    def _load_in_background(self, orders: Sequence[PrefillOrder]) -> Iterator[Loaded]:
        """`_load` in the loader thread, which must outlive any fault: vLLM waits for every
        order it was given."""
        done: set[str] = set()
        try:
            for outcome in self._load(orders, background=True):
                done.add(outcome.order.request.request_id)
                yield outcome
        except Exception:  # noqa: BLE001
            logger.exception("cacheprune: loading %d requests failed; their blocks are "
                             "reported as not loaded", len(orders))
            yield from (Loaded(order, None) for order in orders
                        if order.request.request_id not in done)

    def _plan(self, order: PrefillOrder) -> bool:
        """Plan the order (its request PLANNED); False if that failed."""
        try:
            local_keys = local_values = None
            if order.num_local_tokens:
                local_keys, local_values = self._gather(order.block_ids, 0,
                                                        order.num_local_tokens)
            self._blender.plan(order, local_keys, local_values)
            return True
        except Exception:  # noqa: BLE001 - any failure: vLLM must not use these blocks
            logger.exception("cacheprune: planning request %s failed; its blocks are "
                             "reported as not loaded", order.request.request_id)
            return False

    def _prefill(self, orders: list[PrefillOrder], background: bool) -> list[Loaded]:
        """The planned orders' prefills in one pass, each written into its blocks."""
        try:
            figures = self._blender.prefill(orders, background)
        except Exception:  # noqa: BLE001
            if len(orders) > 1:  # one request's fault must not cost the others theirs
                logger.exception("cacheprune: a batched prefill of %d requests failed; each "
                                 "is prefilled alone", len(orders))
                return [outcome for order in orders
                        for outcome in self._prefill([order], background)]
            logger.exception("cacheprune: the prefill of request %s failed; its blocks are "
                             "reported as not loaded", orders[0].request.request_id)
            return [Loaded(orders[0], None)]
        outcomes = []
        for order, request_figures in zip(orders, figures, strict=True):
            try:
                self._write(order)
            except Exception:  # noqa: BLE001
                logger.exception("cacheprune: writing the KV of request %s failed; its "
                                 "blocks are reported as not loaded", order.request.request_id)
                outcomes.append(Loaded(order, None))
                continue
            outcomes.append(Loaded(order, request_figures))
        return outcomes

    def _apply(self, outcomes: Iterable[Loaded]) -> None:
        for outcome in outcomes:
            order = outcome.order
            if outcome.figures is None:
                self._fail(order)
            else:
                self._prefilled(order, outcome.figures, outcome.num_published_first)
            if order.publish_first:  # committed before the prefill, whatever came of it
                self._mark_settled(order.request.request_id, outcome.num_published_first)

    def _write(self, order: PrefillOrder) -> None:
        """The prefilled KV of the order's computed tokens into its blocks."""
        request = order.request
        prefilled = request.prefill
        assert prefilled is not None, "the blender attaches the prefill"
        stop = request.num_tokens - 1  # vLLM computes the last token itself
        where = self._locate(order.block_ids, order.num_local_tokens, stop)
        for index, layer in enumerate(self._layers):
            kv_layout.write(layer, where, prefilled.keys[index, :, order.num_local_tokens:stop],
                            prefilled.values[index, :, order.num_local_tokens:stop])

    def _fail(self, order: PrefillOrder) -> None:
        # NOTE: reported as a failed load: vLLM then recomputes the request's tokens from the
        # first of these blocks itself (kv_load_failure_policy "recompute") or fails the
        # request ("fail"); either way no half-written KV is attended to.
        first_block = order.num_local_tokens // self._block_size
        self._failed_blocks.update(order.block_ids[first_block:])
        self._report.failed.add(order.request.request_id)
        if order.publish and not order.publish_first:
            self._mark_settled(order.request.request_id, 0)

    def _prefilled(self, order: PrefillOrder, figures: PrefillFigures,
                   num_published_first: int = 0) -> None:
        request = order.request
        figures = dataclasses.replace(
            figures, num_published_first=min(num_published_first, figures.num_reused))
        self._request_log.prefill(request.request_id, request.num_tokens, figures)
        self._figures["pool"] += figures.num_pooled
        # NOTE: what the request published first, its own private-free pass computed.
        self._figures["computed"] += figures.num_computed + figures.num_published_first
        self._figures["recomputed"] += figures.num_recomputed
        if not order.publish or order.publish_first:
            return
        if self._verdicts.get(request.request_id) is False:  # aborted while it loaded
            del self._verdicts[request.request_id]
            self._mark_settled(request.request_id, 0)
            return
        if not self._blender.worth_publishing(request):
            self._mark_settled(request.request_id, 0)  # nothing to publish: no publisher slot
            return
        if self._publisher.submit(request):
            self._requests[request.request_id] = request
        else:
            self._figures["dropped"] += 1
            self._mark_settled(request.request_id, 0)

    # ---- after the forward pass ----------------------------------------------------------

    def end_step(self) -> None:
        model_turns.release_after_step()
        verdicts, self._verdicts = self._verdicts, {}
        for request_id, ended_well in verdicts.items():
            if request_id in self._loading:  # aborted while the loader prefills it
                self._verdicts[request_id] = ended_well  # applied once its outcome is
                continue
            request = self._requests.get(request_id)
            if request is None:
                self._mark_settled(request_id, 0)  # nothing went to the publisher
            elif request.ended_well is None:
                request.ended_well = ended_well
                if not ended_well:
                    self._publisher.cancel(request_id)  # unless committed already
        # NOTE: a step that computed nothing exists only to wait for publications (vLLM
        # keeps stepping for them): wait a little for one instead of spinning.
        idle = not self._computes and not verdicts and not self._report.settled
        for result in self._publisher.take_done(IDLE_STEP_WAIT_S if idle else 0.0):
            self._requests.pop(result.request_id).finish()
            self._mark_settled(result.request_id, result.num_published_tokens)

    def _mark_settled(self, request_id: str, num_published_tokens: int) -> None:
        if request_id in self._report.settled:
            return
        self._report.settled.add(request_id)
        self._request_log.settled(request_id, num_published_tokens)
        self._figures["published"] += num_published_tokens

    def take_loaded(self) -> set[str]:
        """The requests whose prefill in the loader is over since the last call, done or
        failed (a failed one's blocks are in `take_failed_blocks`, which vLLM asks next)."""
        # NOTE: a step that computed nothing may exist only to wait for loads: wait a little
        # for one instead of spinning.
        idle = not self._computes and bool(self._loading)
        outcomes = self._loader.take_done(IDLE_STEP_WAIT_S if idle else 0.0)
        self._apply(outcomes)
        loaded = {outcome.order.request.request_id for outcome in outcomes}
        self._loading -= loaded
        return loaded

    def take_figures(self) -> dict[str, int]:
        """Counts since the last call: tokens (pool, computed, recomputed, published) and
        dropped publications."""
        figures, self._figures = self._figures, _no_figures()
        return figures

    def take_report(self) -> WorkerReport | None:
        report, self._report = self._report, WorkerReport()
        return report if report.settled or report.failed else None

    def take_failed_blocks(self) -> set[int]:
        failed, self._failed_blocks = self._failed_blocks, set()
        return failed

    def close(self) -> None:
        """vLLM shuts down: publications not started are dropped (the one running finishes or
        is abandoned after the publisher's wait; the pool drops what was never committed)."""
        model_turns.release_after_step()
        self._loader.close()
        self._publisher.close()
        self._requests.clear()
        self._request_log.close()
        self._blender.close()

    @property
    def num_pending_publications(self) -> int:
        return len(self._requests)

    # ---- paged cache ---------------------------------------------------------------------

    def _gather(self, block_ids: Sequence[int], start: int, stop: int
                ) -> tuple[torch.Tensor, torch.Tensor]:
        where = self._locate(block_ids, start, stop)
        pairs = [kv_layout.read(layer, where) for layer in self._layers]
        return torch.stack([k for k, _ in pairs]), torch.stack([v for _, v in pairs])

    def _locate(self, block_ids: Sequence[int], start: int, stop: int) -> kv_layout.FlatIndex:
        """Where positions [start, stop) of a request sit in every layer's cache."""
        slots = kv_layout.slots(block_ids, self._block_size, start, stop)
        return kv_layout.locate(self._layers[0], slots, self._layout)


def _batches(orders: list[PrefillOrder], max_rows: int) -> Iterator[list[PrefillOrder]]:
    """The orders in runs whose computed rows stay within `max_rows` (one order at least)."""
    batch: list[PrefillOrder] = []
    rows = 0
    for order in orders:
        order_rows = _computed_rows(order)
        if batch and rows + order_rows > max_rows:
            yield batch
            batch, rows = [], 0
        batch.append(order)
        rows += order_rows
    if batch:
        yield batch


def _computed_rows(order: PrefillOrder) -> int:
    plan = order.request.plan
    assert plan is not None, "after the plan"
    return int(plan.compute_mask().sum())
