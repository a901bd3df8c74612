"""Open the pool, tokenizer and detection policy a connector needs, from vLLM's config.

Every failure here happens at start-up and names the setting to fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cacheprune.detectors import DetectionPolicy, DetectorConfigError, load_policy
from cacheprune.models.sources import model_identity
from cacheprune.models.tokenizer import ChatTokenizer, load_tokenizer
from cacheprune.pool.config import KVShape, PoolConfig
from cacheprune.pool.errors import PoolError
from cacheprune.pool.file_store import FileKVStore
from cacheprune.vllm.settings import ConnectorConfigError, ConnectorSettings, parse_settings


@dataclass(slots=True)
class ConnectorResources:
    settings: ConnectorSettings
    store: FileKVStore
    policy: DetectionPolicy
    block_size: int


def open_resources(vllm_config: Any) -> ConnectorResources:
    """`vllm_config` is a `vllm.config.VllmConfig` (typed loosely to keep this module vLLM-free)."""
    settings = parse_settings(vllm_config.kv_transfer_config.kv_connector_extra_config)
    model_config, parallel_config = vllm_config.model_config, vllm_config.parallel_config
    if parallel_config.tensor_parallel_size != 1 or parallel_config.pipeline_parallel_size != 1:
        raise ConnectorConfigError(
            "CachePruneConnector supports one worker per instance (tensor_parallel_size=1, "
            "pipeline_parallel_size=1): the pool stores every KV head of every layer")
    try:
        policy = load_policy(settings.detector_config)
    except (DetectorConfigError, OSError) as error:
        raise ConnectorConfigError(
            f"CachePruneConnector: detector_config {settings.detector_config!r}: {error}"
        ) from error
    shape = KVShape(
        num_layers=int(model_config.get_num_layers(parallel_config)),
        num_kv_heads=int(model_config.get_num_kv_heads(parallel_config)),
        head_dim=int(model_config.get_head_size()),
    )
    try:
        config = PoolConfig(
            kv_shape=shape,
            budget_bytes=settings.pool_budget_bytes,
            max_context_tokens=int(model_config.max_model_len),
            min_entry_tokens=min(settings.min_shared_tokens, int(model_config.max_model_len)),
            ttl_s=settings.pool_ttl_s,
            audit_log_path=settings.audit_log,
        )
        store = FileKVStore(settings.pool_dir, config, _model_id(model_config),
                            policy.policy_version)
    except (PoolError, OSError) as error:
        raise ConnectorConfigError(
            f"CachePruneConnector: pool_dir={settings.pool_dir!r}, "
            f"pool_budget_bytes={settings.pool_budget_bytes}: {error}") from error
    return ConnectorResources(settings, store, policy, int(vllm_config.cache_config.block_size))


def open_tokenizer(vllm_config: Any) -> ChatTokenizer:
    source = vllm_config.model_config.tokenizer
    try:
        return load_tokenizer(source)
    except Exception as error:  # noqa: BLE001 - any failure: name the tokenizer and stop
        raise ConnectorConfigError(
            f"CachePruneConnector needs the model's tokenizer.json in a local folder to find "
            f"private tokens; {source!r} could not be loaded: {error}") from error


def _model_id(model_config: Any) -> str:
    """The pool identity of the KV this instance computes: weights and compute dtype."""
    path = Path(str(model_config.model))
    name = model_identity(path) if path.exists() else f"{path}@{model_config.revision}"
    return f"{name}|{model_config.dtype}"
