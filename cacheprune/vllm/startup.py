"""What the connector checks and opens when vLLM starts it, from vLLM's config.

Every failure here happens at start-up and names the setting to fix. vLLM's config is typed
loosely (`Any`) to keep this module free of vLLM imports.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

import torch
from torch import nn

from cacheprune.annotator import AnnotatorConfig
from cacheprune.detectors import DetectionPolicy, DetectorConfigError, load_policy
from cacheprune.engine import Transformer
from cacheprune.models import (
    ChatTokenizer,
    ModelConfig,
    ModelLoadError,
    load_tokenizer,
    model_identity,
    read_config,
)
from cacheprune.models.hf_loader import load_hf_folder
from cacheprune.serving import Engine, EngineConfig
from cacheprune.vllm import TOKENIZER_MODE
from cacheprune.vllm.blend import Blender
from cacheprune.vllm.cold_probe import ColdProbe
from cacheprune.vllm.settings import ConnectorConfigError, ConnectorSettings

logger = logging.getLogger(__name__)


def check_deployment(vllm_config: Any, settings: ConnectorSettings) -> None:
    """Refuse set-ups the connector cannot serve safely, saying which setting to change."""
    parallel = vllm_config.parallel_config
    if parallel.tensor_parallel_size != 1 or parallel.pipeline_parallel_size != 1:
        raise ConnectorConfigError(
            "CachePruneConnector supports one worker per instance (tensor_parallel_size=1, "
            "pipeline_parallel_size=1): it computes prompts with the whole model")
    if getattr(vllm_config, "speculative_config", None) is not None:
        raise ConnectorConfigError(
            "CachePruneConnector does not support speculative decoding: remove "
            "--speculative-config")
    if vllm_config.cache_config.enable_prefix_caching and settings.tenant_source == "none":
        # NOTE: vLLM commits the KV the connector wrote (blended: pooled segments, moved and
        # partly recomputed) to its own prefix cache under the prompt's exact token hashes; a
        # salt per tenant keeps one tenant's blended blocks from being served to another.
        raise ConnectorConfigError(
            "CachePruneConnector: vLLM's prefix caching is on and tenant_source is 'none', so "
            "blended KV would be cached under exact token hashes every tenant can hit. Either "
            "set \"tenant_source\": \"cache_salt\" (and a per-tenant cache_salt on every "
            "request) or start vLLM with --no-enable-prefix-caching")
    mode = getattr(getattr(vllm_config, "model_config", None), "tokenizer_mode", TOKENIZER_MODE)
    if mode != TOKENIZER_MODE:
        # NOTE: a warning, not a refusal: token ids a client sends itself (`prompt_token_ids`)
        # are the client's whatever the mode, and the connector cannot tell a typed control
        # token from the template's. The mode is what closes the hole for chat and text.
        logger.warning(
            "cacheprune: tokenizer_mode is %r, so vLLM turns special-token text a tenant types "
            "(<|im_start|>system ...) into control tokens; start vLLM with --tokenizer-mode "
            "cacheprune (LLM(..., tokenizer_mode='cacheprune')) to tokenize message content "
            "with special tokens split", mode)


def open_policy(settings: ConnectorSettings) -> DetectionPolicy:
    try:
        return load_policy(settings.detector_config)
    except (DetectorConfigError, OSError) as error:
        raise ConnectorConfigError(
            f"CachePruneConnector: detector_config {settings.detector_config!r}: {error}"
        ) from error


def open_tokenizer(vllm_config: Any) -> ChatTokenizer:
    source = vllm_config.model_config.tokenizer
    try:
        return load_tokenizer(source)
    except Exception as error:  # noqa: BLE001 - any failure: name the tokenizer and stop
        raise ConnectorConfigError(
            f"CachePruneConnector needs the model's tokenizer.json in a local folder to find "
            f"private tokens; {source!r} could not be loaded: {error}") from error


def engine_config(settings: ConnectorSettings) -> EngineConfig:
    """The own engine's settings, with the few the connector exposes."""
    try:
        return EngineConfig(
            mode="cacheprune", publish_mode=settings.publish_mode,  # type: ignore[arg-type]
            public_system_prompt=settings.public_system_prompt,
            annotator=AnnotatorConfig(min_len=settings.min_shared_tokens),
            pool_url=settings.pool_url, pool_budget_bytes=settings.pool_budget_bytes,
            pool_ttl_s=settings.pool_ttl_s, audit_log_path=settings.audit_log,
            publish_threshold=settings.publish_threshold,
            kv_storage_dtype=settings.kv_storage_dtype,
            recompute_tokens_per_s=settings.recompute_tokens_per_s)
    except ValueError as error:
        raise ConnectorConfigError(f"CachePruneConnector: {error}") from error


def open_blender(vllm_config: Any, settings: ConnectorSettings, vllm_model: nn.Module,
                 policy: DetectionPolicy, tokenizer: ChatTokenizer) -> Blender:
    from cacheprune.vllm.internals import transformer_over

    folder, config, identity = model_shape(vllm_config)
    model = transformer_over(vllm_model, config, identity)
    engine = Engine(model, tokenizer, policy, engine_config(settings))
    copy = weights_copy(folder, config, identity) if settings.publisher_weights == "copy" \
        else None
    return Blender(engine, copy)


def open_probe(vllm_config: Any, settings: ConnectorSettings, policy: DetectionPolicy,
               tokenizer: ChatTokenizer) -> ColdProbe | None:
    """The scheduler's lookups (`cold_probe`), or None when every admitted prompt is
    cacheprune's: `cold_prompts` "cacheprune", or a memory:// pool (the worker's own)."""
    if settings.cold_prompts != "vllm":
        return None
    if settings.pool_url.startswith("memory:"):
        logger.info("cacheprune: the pool is memory://, which the scheduler's process cannot "
                    "look into: cacheprune computes every prompt it admits, cold ones too")
        return None
    _, config, identity = model_shape(vllm_config)
    with torch.device("meta"):  # never run: it names the pool's entries and their shape
        model = Transformer(config, identity)
    return ColdProbe(Engine(model, tokenizer, policy, engine_config(settings)))


def model_shape(vllm_config: Any) -> tuple[Path, ModelConfig, str]:
    """The model's folder, its shapes (with vLLM's context length) and its pool identity."""
    model_config = vllm_config.model_config
    folder = Path(str(model_config.model))
    try:
        config = read_config(folder)
    except ModelLoadError as error:
        raise ConnectorConfigError(
            f"CachePruneConnector reads the model's config.json from its local folder: "
            f"{error}") from error
    config = dataclasses.replace(config, max_context=int(model_config.max_model_len))
    return folder, config, model_id(folder, model_config.dtype)


def weights_copy(folder: Path, config: ModelConfig, identity: str) -> Transformer | None:
    """A float32 copy of the weights in `folder`, for the worker's background threads; None
    (they compute with vLLM's layers) if the folder cannot be read so."""
    try:
        _, state = load_hf_folder(folder)
        model = Transformer.from_state_dict(config, state, identity)
    except (ModelLoadError, KeyError, RuntimeError, ValueError) as error:
        logger.warning("cacheprune: the worker cannot load its copy of the weights from %s "
                       "(%s); its background threads compute with vLLM's layers, in turns "
                       "with the engine", folder, error)
        return None
    return model.eval()


def model_id(folder: Path, dtype: Any) -> str:
    """The pool identity of the KV this instance computes: the own engine's for the same
    weights in float32 (so both share entries); other compute dtypes are kept apart."""
    identity = model_identity(folder)
    return identity if dtype == torch.float32 else f"{identity}|{dtype}"
