"""`CachePruneConnector`: vLLM's V1 KV connector interface over cacheprune's shared pool.

A thin shim: each call goes to `SchedulerSide` or `WorkerSide`, which know nothing of vLLM.
Enable with
    --kv-transfer-config '{"kv_connector": "CachePruneConnector", "kv_role": "kv_both",
                           "kv_connector_extra_config": {"pool_dir": "/dev/shm/cacheprune"}}'
(the `vllm.general_plugins` entry point registers the name; `kv_connector_module_path`
"cacheprune.vllm.connector" works as well).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from vllm.distributed.kv_transfer.kv_connector.v1.base import (
    KVConnectorBase_V1,
    KVConnectorMetadata,
    KVConnectorRole,
)
from vllm.platforms import current_platform

from cacheprune.vllm.kv_layout import TileLayout, token_major_layout
from cacheprune.vllm.pool_setup import open_resources, open_tokenizer
from cacheprune.vllm.scheduler_side import SchedulerSide
from cacheprune.vllm.settings import ConnectorConfigError
from cacheprune.vllm.step_plan import StepPlan
from cacheprune.vllm.worker_side import WorkerSide

if TYPE_CHECKING:
    from vllm.config import VllmConfig
    from vllm.forward_context import ForwardContext


@dataclass
class CachePruneMetadata(KVConnectorMetadata):
    plan: StepPlan = field(default_factory=StepPlan)


class CachePruneConnector(KVConnectorBase_V1):
    def __init__(self, vllm_config: VllmConfig, role: Any, kv_cache_config: Any) -> None:
        super().__init__(vllm_config=vllm_config, role=role, kv_cache_config=kv_cache_config)
        if len(kv_cache_config.kv_cache_groups) != 1:
            raise ConnectorConfigError(
                "CachePruneConnector supports models with one KV cache group (plain "
                f"attention); this model has {len(kv_cache_config.kv_cache_groups)}")
        resources = open_resources(vllm_config)
        self._scheduler: SchedulerSide | None = None
        self._worker: WorkerSide | None = None
        if role == KVConnectorRole.SCHEDULER:
            self._scheduler = SchedulerSide(resources, open_tokenizer(vllm_config))
        else:
            self._worker = WorkerSide(resources.store, resources.block_size,
                                      _tile_layout(vllm_config, resources.block_size))

    # ---- worker side ---------------------------------------------------------------------

    def register_kv_caches(self, kv_caches: dict[str, torch.Tensor]) -> None:
        assert self._worker is not None
        self._worker.register(kv_caches)

    def _plan(self) -> StepPlan:
        metadata = self._get_connector_metadata()
        assert isinstance(metadata, CachePruneMetadata)
        return metadata.plan

    def start_load_kv(self, forward_context: ForwardContext, **kwargs: Any) -> None:
        assert self._worker is not None
        self._worker.start_load(self._plan())

    def wait_for_layer_load(self, layer_name: str) -> None:
        return  # loads are synchronous in start_load_kv

    def save_kv_layer(self, layer_name: str, kv_layer: torch.Tensor, attn_metadata: Any,
                      **kwargs: Any) -> None:
        return  # saved from the paged cache after the whole forward pass (wait_for_save)

    def wait_for_save(self) -> None:
        assert self._worker is not None
        if self.has_connector_metadata():
            self._worker.save(self._plan())

    # ---- scheduler side ------------------------------------------------------------------

    def get_num_new_matched_tokens(self, request: Any, num_computed_tokens: int
                                   ) -> tuple[int | None, bool]:
        assert self._scheduler is not None
        return self._scheduler.matched_tokens(request, num_computed_tokens), False

    def update_state_after_alloc(self, request: Any, blocks: Any,
                                 num_external_tokens: int) -> None:
        assert self._scheduler is not None
        self._scheduler.after_alloc(request, num_external_tokens)

    def build_connector_meta(self, scheduler_output: Any) -> KVConnectorMetadata:
        assert self._scheduler is not None
        return CachePruneMetadata(self._scheduler.build_plan(scheduler_output))

    def request_finished(self, request: Any, block_ids: list[int]
                         ) -> tuple[bool, dict[str, Any] | None]:
        assert self._scheduler is not None
        self._scheduler.finished(request)
        return False, None


def _tile_layout(vllm_config: VllmConfig, block_size: int) -> TileLayout:
    head_dim = int(vllm_config.model_config.get_head_size())
    if current_platform.is_cpu():
        from cacheprune.vllm.cpu_tile_probe import probe_cpu_layout

        dtype: Any = vllm_config.model_config.dtype  # resolved to a torch.dtype by now
        return probe_cpu_layout(block_size, head_dim, dtype, vllm_config.cache_config.cache_dtype)
    # NOTE: GPU backends (FlashAttention, Triton) split each token's row into K then V.
    return token_major_layout(block_size, head_dim)
