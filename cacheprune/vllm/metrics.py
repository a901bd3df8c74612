"""The connector's figures in vLLM's metrics: `/metrics` of the OpenAI server and
`LLM.get_metrics()` (vLLM's connector-stats interface; needs stats logging on).

    cacheprune:prompt_tokens_total{source="pool"}       prompt tokens whose KV the pool served
    cacheprune:prompt_tokens_total{source="computed"}   prompt tokens cacheprune computed
    cacheprune:recomputed_tokens_total                  pooled tokens recomputed (marks)
    cacheprune:published_tokens_total                   tokens published to the pool
    cacheprune:dropped_publications_total               publications not run: too many waited

vLLM counts every prompt token the connector supplies as an external prefix-cache hit
(`vllm:external_prefix_cache_hits`): the pooled and the computed ones alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vllm.distributed.kv_transfer.kv_connector.v1.metrics import (
    KVConnectorPromMetrics,
    KVConnectorStats,
)
from vllm.v1.metrics.utils import create_metric_per_engine

FIGURES = ("pool", "computed", "recomputed", "published", "dropped")


@dataclass
class CachePruneStats(KVConnectorStats):
    """Token counts since the last report: `data[figure]` for each of FIGURES."""

    def __post_init__(self) -> None:
        self.data = {figure: int(self.data.get(figure, 0)) for figure in FIGURES}

    def reset(self) -> None:
        self.data = dict.fromkeys(FIGURES, 0)

    def add(self, figure: str, num_tokens: int) -> None:
        self.data[figure] += num_tokens

    def aggregate(self, other: KVConnectorStats) -> KVConnectorStats:
        for figure in FIGURES:
            self.data[figure] += int(other.data.get(figure, 0))
        return self

    def reduce(self) -> dict[str, int | float]:
        return {("cacheprune_dropped_publications" if figure == "dropped"
                 else f"cacheprune_{figure}_tokens"): self.data[figure] for figure in FIGURES}

    def is_empty(self) -> bool:
        return not any(self.data.values())


class CachePrunePromMetrics(KVConnectorPromMetrics):
    def __init__(self, vllm_config: Any, metric_types: Any, labelnames: list[str],
                 per_engine_labelvalues: dict[int, list[object]]) -> None:
        super().__init__(vllm_config, metric_types, labelnames, per_engine_labelvalues)
        prompt_tokens = self._counter_cls(
            name="cacheprune:prompt_tokens",
            documentation="Prompt tokens whose KV the CachePruneConnector supplied, by source "
                          "(pool: served from the shared pool; computed: by cacheprune)",
            labelnames=[*labelnames, "source"])
        recomputed = self._counter_cls(
            name="cacheprune:recomputed_tokens",
            documentation="Pooled prompt tokens recomputed (the pool's recompute marks)",
            labelnames=labelnames)
        published = self._counter_cls(
            name="cacheprune:published_tokens",
            documentation="Tokens the CachePruneConnector published to the shared pool",
            labelnames=labelnames)
        dropped = self._counter_cls(
            name="cacheprune:dropped_publications",
            documentation="Requests whose publication was dropped (too many were waiting)",
            labelnames=labelnames)
        self._counters: dict[str, dict[int, Any]] = {
            "pool": {i: prompt_tokens.labels(*values, "pool")
                     for i, values in per_engine_labelvalues.items()},
            "computed": {i: prompt_tokens.labels(*values, "computed")
                         for i, values in per_engine_labelvalues.items()},
            "recomputed": create_metric_per_engine(recomputed, per_engine_labelvalues),
            "published": create_metric_per_engine(published, per_engine_labelvalues),
            "dropped": create_metric_per_engine(dropped, per_engine_labelvalues),
        }

    def observe(self, transfer_stats_data: dict[str, Any], engine_idx: int = 0) -> None:
        for figure, counters in self._counters.items():
            counters[engine_idx].inc(int(transfer_stats_data.get(figure, 0)))
