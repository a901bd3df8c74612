"""`CachePruneConnector`: vLLM's V1 KV connector interface over cacheprune.

A thin shim: each call goes to `SchedulerSide` or `WorkerSide`, which know nothing of vLLM.
Enable with
    --kv-transfer-config '{"kv_connector": "CachePruneConnector", "kv_role": "kv_both",
                           "kv_connector_extra_config": {"pool_url": "memory://"}}'
(the `vllm.general_plugins` entry point registers the name; `kv_connector_module_path`
"cacheprune.vllm.connector" works as well).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from vllm.distributed.kv_transfer.kv_connector.v1.base import (
    KVConnectorBase_V1,
    KVConnectorMetadata,
    KVConnectorRole,
    KVConnectorWorkerMetadata,
)
from vllm.platforms import current_platform

from cacheprune.vllm.kv_layout import TileLayout, token_major_layout
from cacheprune.vllm.metrics import CachePrunePromMetrics, CachePruneStats
from cacheprune.vllm.orders import StepOrders, WorkerReport
from cacheprune.vllm.settings import ConnectorConfigError, parse_settings

if TYPE_CHECKING:
    from vllm.config import VllmConfig
    from vllm.distributed.kv_transfer.kv_connector.v1.metrics import (
        KVConnectorPromMetrics,
        KVConnectorStats,
    )
    from vllm.forward_context import ForwardContext
    from vllm.v1.outputs import KVConnectorOutput

    from cacheprune.vllm.blend import Blender
    from cacheprune.vllm.scheduler_side import SchedulerSide
    from cacheprune.vllm.worker_side import WorkerSide


@dataclass
class CachePruneMetadata(KVConnectorMetadata):
    orders: StepOrders = field(default_factory=StepOrders)


@dataclass
class CachePruneWorkerMetadata(KVConnectorWorkerMetadata):
    report: WorkerReport = field(default_factory=WorkerReport)

    def aggregate(self, other: KVConnectorWorkerMetadata) -> KVConnectorWorkerMetadata:
        assert isinstance(other, CachePruneWorkerMetadata)
        return CachePruneWorkerMetadata(self.report.merge(other.report))


class CachePruneConnector(KVConnectorBase_V1):
    def __init__(self, vllm_config: VllmConfig, role: Any, kv_cache_config: Any) -> None:
        super().__init__(vllm_config=vllm_config, role=role, kv_cache_config=kv_cache_config)
        if len(kv_cache_config.kv_cache_groups) != 1:
            raise ConnectorConfigError(
                "CachePruneConnector supports models with one KV cache group (plain "
                f"attention); this model has {len(kv_cache_config.kv_cache_groups)}")
        assert vllm_config.kv_transfer_config is not None  # checked by the base class
        settings = parse_settings(vllm_config.kv_transfer_config.kv_connector_extra_config)
        # NOTE: imported here, not at the top: vLLM imports this module in its front-end
        # process to read class attributes, and cacheprune's core imports numba, whose
        # presence breaks a vLLM worker later started in that process (docs/vllm.md).
        from cacheprune.vllm import internals
        from cacheprune.vllm.request_log import RequestLog
        from cacheprune.vllm.scheduler_side import SchedulerSide
        from cacheprune.vllm.startup import (
            check_deployment,
            open_blender,
            open_policy,
            open_probe,
            open_tokenizer,
        )
        from cacheprune.vllm.worker_side import WorkerSide

        check_deployment(vllm_config, settings)
        policy, tokenizer = open_policy(settings), open_tokenizer(vllm_config)
        self._scheduler: SchedulerSide | None = None
        self._worker: WorkerSide | None = None
        if role == KVConnectorRole.SCHEDULER:
            self._scheduler = SchedulerSide(
                settings, tokenizer, policy, min_tokens=settings.min_shared_tokens,
                probe=open_probe(vllm_config, settings, policy, tokenizer))
            return
        block_size = int(vllm_config.cache_config.block_size)
        blender = self._open_blender(
            lambda: open_blender(vllm_config, settings, internals.loaded_model(), policy,
                                 tokenizer))
        self._worker = WorkerSide(
            blender, block_size, _tile_layout(vllm_config, block_size),
            num_layers=int(vllm_config.model_config.get_num_layers(
                vllm_config.parallel_config)),
            request_log=RequestLog(settings.request_log))

    def _open_blender(self, opener: Callable[[], Blender]) -> Blender:
        """How the worker gets its `Blender`; a test subclass wraps it to inject faults."""
        return opener()

    @property
    def requires_kv_delivery(self) -> bool:
        return False  # nothing is handed off: preempted requests are simply prefilled again

    # ---- worker side ---------------------------------------------------------------------

    def register_kv_caches(self, kv_caches: dict[str, torch.Tensor]) -> None:
        assert self._worker is not None
        self._worker.register(kv_caches)

    def bind_connector_metadata(self, connector_metadata: KVConnectorMetadata) -> None:
        super().bind_connector_metadata(connector_metadata)
        if self._worker is not None:
            # NOTE: bound before the step's forward pass, which vLLM runs before start_load_kv
            # in a step without synchronous loads (a decode step): the step's turn on vLLM's
            # layers starts here (model_turns).
            self._worker.hold_step()

    def start_load_kv(self, forward_context: ForwardContext, **kwargs: Any) -> None:
        assert self._worker is not None
        metadata = self._get_connector_metadata()
        assert isinstance(metadata, CachePruneMetadata)
        self._worker.start_step(metadata.orders)

    def wait_for_layer_load(self, layer_name: str) -> None:
        return  # the step's orders are done (or with the loader) when start_load_kv returns

    def save_kv_layer(self, layer_name: str, kv_layer: torch.Tensor, attn_metadata: Any,
                      **kwargs: Any) -> None:
        return  # publications use cacheprune's own copy of the KV, not the paged cache

    def wait_for_save(self) -> None:
        assert self._worker is not None
        self._worker.end_step()

    def shutdown(self) -> None:
        if self._worker is not None:
            self._worker.close()
        if self._scheduler is not None:
            self._scheduler.close()

    def get_kv_connector_stats(self) -> KVConnectorStats | None:
        if self._worker is None:  # vLLM asks the scheduler side too: it counts nothing
            return None
        figures = self._worker.take_figures()
        return None if not any(figures.values()) else CachePruneStats(figures)

    @classmethod
    def build_kv_connector_stats(cls, data: dict[str, Any] | None = None
                                 ) -> KVConnectorStats | None:
        return CachePruneStats(data or {})

    @classmethod
    def build_prom_metrics(cls, vllm_config: VllmConfig, metric_types: Any,
                           labelnames: list[str], per_engine_labelvalues: dict[int, list[object]]
                           ) -> KVConnectorPromMetrics:
        return CachePrunePromMetrics(vllm_config, metric_types, labelnames,
                                     per_engine_labelvalues)

    def get_finished(self, finished_req_ids: set[str]
                     ) -> tuple[set[str] | None, set[str] | None]:
        assert self._worker is not None
        return None, self._worker.take_loaded() or None

    def get_block_ids_with_load_errors(self) -> set[int]:
        assert self._worker is not None
        return self._worker.take_failed_blocks()

    def build_connector_worker_meta(self) -> KVConnectorWorkerMetadata | None:
        assert self._worker is not None
        report = self._worker.take_report()
        return None if report is None else CachePruneWorkerMetadata(report)

    # ---- scheduler side ------------------------------------------------------------------

    def on_new_request(self, request: Any) -> None:
        assert self._scheduler is not None
        self._scheduler.arrived(request)

    def get_num_new_matched_tokens(self, request: Any, num_computed_tokens: int
                                   ) -> tuple[int | None, bool]:
        assert self._scheduler is not None
        matched = self._scheduler.matched_tokens(request, num_computed_tokens)
        return matched, bool(matched) and self._scheduler.loads_async

    def update_state_after_alloc(self, request: Any, blocks: Any,
                                 num_external_tokens: int) -> None:
        assert self._scheduler is not None
        self._scheduler.after_alloc(request, list(blocks.get_block_ids()[0]),
                                    num_external_tokens)

    def build_connector_meta(self, scheduler_output: Any) -> KVConnectorMetadata:
        assert self._scheduler is not None
        cached = scheduler_output.scheduled_cached_reqs
        admits = bool(scheduler_output.scheduled_new_reqs) or bool(cached.resumed_req_ids)
        computes = int(getattr(scheduler_output, "total_num_scheduled_tokens", 1)) > 0
        return CachePruneMetadata(self._scheduler.build_orders(admits, computes))

    def update_connector_output(self, connector_output: KVConnectorOutput) -> None:
        assert self._scheduler is not None
        metadata = connector_output.kv_connector_worker_meta
        if isinstance(metadata, CachePruneWorkerMetadata):
            self._scheduler.worker_reported(metadata.report)

    def request_finished(self, request: Any, block_ids: list[int]
                         ) -> tuple[bool, dict[str, Any] | None]:
        assert self._scheduler is not None
        self._scheduler.finished(request)
        return False, None

    def has_pending_push_work(self) -> bool:
        return self._scheduler is not None and self._scheduler.has_pending_publications()


def _tile_layout(vllm_config: VllmConfig, block_size: int) -> TileLayout:
    head_dim = int(vllm_config.model_config.get_head_size())
    if current_platform.is_cpu():
        from cacheprune.vllm import internals

        dtype: Any = vllm_config.model_config.dtype  # resolved to a torch.dtype by now
        return internals.probe_cpu_layout(block_size, head_dim, dtype,
                                          vllm_config.cache_config.cache_dtype)
    # NOTE: GPU backends (FlashAttention, Triton) split each token's row into K then V.
    return token_major_layout(block_size, head_dim)
