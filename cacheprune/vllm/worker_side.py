"""The connector's worker half: run the ordered prefills into vLLM's paged cache before the
forward pass; publish each request's segments later, off its time to first token.

Calling contract (vLLM's model runner, in the worker process, once per step, empty steps
included): `start_step` before the forward pass (vLLM then computes only each prompt's last
token), `end_step` after it, then `take_report` and `take_failed_blocks`.

A request's publication (annotate, isolated KV, stage) is queued by its prefill and run at the
end of a later, quiet step: one that starts no request, after one that started none. vLLM
hands a step's outputs to clients while the next step runs, and a long step holds them back
(measured: a 5 s publication in the step after a request's prefill delayed that request's
first token by 5 s); a quiet step has no first token to deliver. If more than
MAX_QUEUED_PUBLICATIONS wait, one runs in every step. A publication is published or discarded
when the scheduler's verdict on how the request ended arrives.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from cacheprune.vllm import kv_layout
from cacheprune.vllm.blend import BlendedPrefill, Blender, PendingPublication
from cacheprune.vllm.kv_layout import TileLayout
from cacheprune.vllm.orders import PrefillOrder, StepOrders, WorkerReport
from cacheprune.vllm.request_log import RequestLog

logger = logging.getLogger(__name__)
_LAYER_NUMBER = re.compile(r"\.(\d+)\.")
# Queued publications beyond which one is run even in a step that prefills: each holds a
# prompt's KV and its attention matrix until it runs.
MAX_QUEUED_PUBLICATIONS = 4


def _no_figures() -> dict[str, int]:
    return {"pool": 0, "computed": 0, "recomputed": 0, "published": 0}


def layer_order(layer_names: list[str]) -> list[str]:
    """Attention layers in model order (by the layer number in their names)."""
    def number(name: str) -> int:
        found = _LAYER_NUMBER.search(name)
        if found is None:
            raise ValueError(f"cannot tell the layer number of KV cache {name!r}")
        return int(found.group(1))
    return sorted(layer_names, key=number)


@dataclass(slots=True)
class _Queued:
    order: PrefillOrder
    prefilled: BlendedPrefill
    step: int


class WorkerSide:
    def __init__(self, blender: Blender, block_size: int, layout: TileLayout,
                 num_layers: int, request_log: RequestLog) -> None:
        self._blender = blender
        self._request_log = request_log
        self._block_size = block_size
        self._layout = layout
        self._num_layers = num_layers
        self._layers: list[torch.Tensor] = []
        self._device = torch.device("cpu")
        self._step = 0
        self._admitted = (False, False)  # (previous step, this step) started a request
        self._queued: dict[str, _Queued] = {}
        self._staged: dict[str, PendingPublication] = {}
        self._verdicts: dict[str, bool] = {}  # arrived, not yet applied
        self._ended_well: set[str] = set()  # verdict known, publication not yet run
        self._report = WorkerReport()
        self._failed_blocks: set[int] = set()
        self._figures = _no_figures()

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

    def start_step(self, orders: StepOrders) -> None:
        self._step += 1
        self._verdicts.update(orders.verdicts)
        self._admitted = (self._admitted[1], orders.admits)
        for order in orders.prefills:
            self._prefill(order)

    def _prefill(self, order: PrefillOrder) -> None:
        stop = len(order.token_ids) - 1  # vLLM computes the last token itself
        try:
            local_keys = local_values = None
            if order.num_local_tokens:
                local_keys, local_values = self._gather(order.block_ids, 0,
                                                        order.num_local_tokens)
            prefilled, figures = self._blender.prefill(order, local_keys, local_values)
            where = self._slots(order.block_ids, order.num_local_tokens, stop)
            for index, layer in enumerate(self._layers):
                kv_layout.scatter(layer, where, self._layout,
                                  prefilled.keys[index, :, order.num_local_tokens:stop],
                                  prefilled.values[index, :, order.num_local_tokens:stop])
        except Exception:  # noqa: BLE001 - any failure: vLLM must not use these blocks
            # NOTE: reported as a failed load: vLLM then recomputes the request's tokens from
            # the first of these blocks itself (kv_load_failure_policy "recompute") or fails
            # the request ("fail"); either way no half-written KV is attended to.
            logger.exception("cacheprune: prefill of request %s failed; its blocks are "
                             "reported as not loaded", order.request_id)
            first_block = order.num_local_tokens // self._block_size
            self._failed_blocks.update(order.block_ids[first_block:])
            if order.publish:
                self._mark_settled(order.request_id, 0)
            return
        self._request_log.prefill(order.request_id, len(order.token_ids), figures)
        self._figures["pool"] += figures.num_pooled
        self._figures["computed"] += figures.num_computed
        self._figures["recomputed"] += figures.num_recomputed
        if order.publish:
            self._queued[order.request_id] = _Queued(order, prefilled, self._step)

    # ---- after the forward pass ----------------------------------------------------------

    def end_step(self) -> None:
        verdicts, self._verdicts = self._verdicts, {}
        for request_id, ended_well in verdicts.items():
            if request_id in self._staged:
                self._settle(request_id, ended_well)
            elif request_id in self._queued and ended_well:
                self._ended_well.add(request_id)  # published once its publication has run
            else:
                self._queued.pop(request_id, None)
                self._mark_settled(request_id, 0)
        ready = sorted((q for q in self._queued.values() if q.step < self._step),
                       key=lambda q: q.step)
        if any(self._admitted):
            ready = ready[:1] if len(self._queued) > MAX_QUEUED_PUBLICATIONS else []
        for queued in ready:
            request_id = queued.order.request_id
            del self._queued[request_id]
            self._run(queued)
            if request_id in self._ended_well:
                self._ended_well.discard(request_id)
                if request_id in self._staged:
                    self._settle(request_id, True)

    def _run(self, queued: _Queued) -> None:
        request_id = queued.order.request_id
        try:
            publication = self._blender.publish(queued.order, queued.prefilled)
        except Exception:  # noqa: BLE001 - a lost publication is only a future miss
            logger.exception("cacheprune: publication of request %s failed", request_id)
            publication = None
        if publication is None:
            self._mark_settled(request_id, 0)
        else:
            self._staged[request_id] = publication

    def _settle(self, request_id: str, ended_well: bool) -> None:
        publication = self._staged.pop(request_id)
        published = 0
        try:
            published = publication.settle(ended_well)
        except Exception:  # noqa: BLE001 - a lost publication is only a future miss
            logger.exception("cacheprune: settling the publication of %s failed", request_id)
        self._mark_settled(request_id, published)

    def _mark_settled(self, request_id: str, num_published_tokens: int) -> None:
        if request_id in self._report.settled:
            return
        self._report.settled.add(request_id)
        self._request_log.settled(request_id, num_published_tokens)
        self._figures["published"] += num_published_tokens

    def take_figures(self) -> dict[str, int]:
        """Token counts since the last call (pool, computed, recomputed, published)."""
        figures, self._figures = self._figures, _no_figures()
        return figures

    def take_report(self) -> WorkerReport | None:
        report, self._report = self._report, WorkerReport()
        return report if report.settled else None

    def take_failed_blocks(self) -> set[int]:
        failed, self._failed_blocks = self._failed_blocks, set()
        return failed

    def close(self) -> None:
        """vLLM shuts down: what waits for a verdict is discarded (nothing half-published)."""
        for request_id in list(self._staged):
            self._settle(request_id, ended_well=False)
        self._queued.clear()
        self._ended_well.clear()
        self._request_log.close()
        self._blender.close()

    @property
    def num_pending_publications(self) -> int:
        return len(self._queued) + len(self._staged)

    # ---- paged cache ---------------------------------------------------------------------

    def _gather(self, block_ids: Sequence[int], start: int, stop: int
                ) -> tuple[torch.Tensor, torch.Tensor]:
        where = self._slots(block_ids, start, stop)
        pairs = [kv_layout.gather(layer, where, self._layout) for layer in self._layers]
        return torch.stack([k for k, _ in pairs]), torch.stack([v for _, v in pairs])

    def _slots(self, block_ids: Sequence[int], start: int, stop: int
               ) -> tuple[torch.Tensor, torch.Tensor]:
        blocks, offsets = kv_layout.slots(block_ids, self._block_size, start, stop)
        return blocks.to(self._device), offsets.to(self._device)
