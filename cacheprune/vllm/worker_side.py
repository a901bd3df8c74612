"""The connector's worker half: copy pooled KV into vLLM's paged cache before a forward pass,
and stage the KV of non-private prefixes after it.

Calling contract (vLLM's model runner, in the worker process, once per step):
`start_load` before the forward pass; `save` after it (in `wait_for_save`), when the cache
holds every token of this step. Loads are synchronous: the forward pass never sees a
half-loaded block.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path

import torch

from cacheprune.pool.errors import PoolError
from cacheprune.pool.file_store import FileKVStore
from cacheprune.vllm import kv_layout
from cacheprune.vllm.kv_layout import TileLayout
from cacheprune.vllm.step_plan import StepPlan

logger = logging.getLogger(__name__)
_LAYER_NUMBER = re.compile(r"\.(\d+)\.")


def layer_order(layer_names: list[str]) -> list[str]:
    """Attention layers in model order (by the layer number in their names)."""
    def number(name: str) -> int:
        found = _LAYER_NUMBER.search(name)
        if found is None:
            raise ValueError(f"cannot tell the layer number of KV cache {name!r}")
        return int(found.group(1))
    return sorted(layer_names, key=number)


class WorkerSide:
    def __init__(self, store: FileKVStore, block_size: int, layout: TileLayout) -> None:
        self._store = store
        self._block_size = block_size
        self._layout = layout
        self._layers: list[torch.Tensor] = []

    def register(self, kv_caches: dict[str, torch.Tensor]) -> None:
        layers = [kv_caches[name] for name in layer_order(list(kv_caches))]
        expected = self._store.config.kv_shape.num_layers
        if len(layers) != expected:
            raise ValueError(f"vLLM registered {len(layers)} KV cache layers, the model "
                             f"config says {expected}")
        self._layers = layers
        # NOTE: the index tensors live where the cache does, so no copy is made per layer.
        self._device = layers[0].device
        self._layout = self._layout.to(self._device)

    def start_load(self, plan: StepPlan) -> None:
        for load in plan.loads:
            keys, values = FileKVStore.read(Path(load.lease_path), load.start, load.stop)
            where = self._slots(load.block_ids, load.start, load.stop)
            for index, layer in enumerate(self._layers):
                kv_layout.scatter(layer, where, self._layout, keys[index], values[index])

    def save(self, plan: StepPlan) -> None:
        for save in plan.saves:
            where = self._slots(save.block_ids, 0, len(save.token_ids))
            pairs = [kv_layout.gather(layer, where, self._layout)
                     for layer in self._layers]
            keys = torch.stack([k for k, _ in pairs])
            values = torch.stack([v for _, v in pairs])
            try:
                self._store.stage(save.owner, save.token_ids, keys, values)
            except (OSError, PoolError) as error:
                # NOTE: a lost save is only a future miss; the request itself is unaffected
                # and the scheduler finds nothing staged to publish.
                logger.warning("cacheprune: could not stage KV of %s: %s", save.owner, error)

    def _slots(self, block_ids: Sequence[int], start: int, stop: int
               ) -> tuple[torch.Tensor, torch.Tensor]:
        blocks, offsets = kv_layout.slots(block_ids, self._block_size, start, stop)
        return blocks.to(self._device), offsets.to(self._device)
