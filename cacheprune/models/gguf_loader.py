"""Read a llama-architecture GGUF file: model shape, float32 weights under Hugging Face names,
and the tokenizer metadata.

GGUF stores Q and K projection rows interleaved per head (llama.cpp rotates adjacent pairs),
while Hugging Face checkpoints and our RoPE rotate the two halves of a head: those two weights
are permuted back on load.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from cacheprune.models.config import ModelConfig, ModelLoadError

_LAYER_NAMES = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
}
_GLOBAL_NAMES = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}


def _reader(path: Path) -> Any:
    from gguf import GGUFReader

    if not path.is_file():
        raise ModelLoadError(f"GGUF file not found: {path}")
    try:
        return GGUFReader(os.fspath(path))
    except Exception as exc:  # the gguf package raises bare ValueError/IndexError on bad bytes
        raise ModelLoadError(f"{path} is not a readable GGUF file: {exc}") from exc


def _metadata(reader: Any) -> dict[str, Any]:
    return {key: field.contents() for key, field in reader.fields.items()}


def read_metadata(path: Path) -> dict[str, Any]:
    """All metadata of the file (tokenizer vocabulary included), without reading weights."""
    return _metadata(_reader(path))


def _config(meta: dict[str, Any]) -> ModelConfig:
    arch = meta.get("general.architecture")
    if arch is None:
        raise ModelLoadError("GGUF metadata has no 'general.architecture'")

    def get(key: str, default: Any = None) -> Any:
        full = f"{arch}.{key}"
        if full not in meta:
            if default is None:
                raise ModelLoadError(f"GGUF metadata has no {full!r}")
            return default
        return meta[full]

    num_heads = int(get("attention.head_count"))
    hidden = int(get("embedding_length"))
    return ModelConfig(
        architecture=str(arch),
        vocab_size=len(meta["tokenizer.ggml.tokens"]),
        hidden_size=hidden,
        intermediate_size=int(get("feed_forward_length")),
        num_layers=int(get("block_count")),
        num_heads=num_heads,
        num_kv_heads=int(get("attention.head_count_kv", num_heads)),
        head_dim=int(get("rope.dimension_count", hidden // num_heads)),
        max_context=int(get("context_length")),
        rope_theta=float(get("rope.freq_base", 10000.0)),
        rms_norm_eps=float(get("attention.layer_norm_rms_epsilon")),
        qkv_bias=arch == "qwen2",
    )


def _unpermute(weight: np.ndarray, num_heads: int) -> np.ndarray:
    """Rows of each head from llama.cpp's interleaved pairs back to the half-split layout."""
    rows = weight.shape[0]
    head_dim = rows // num_heads
    shaped = weight.reshape(num_heads, head_dim // 2, 2, *weight.shape[1:])
    return shaped.swapaxes(1, 2).reshape(weight.shape)


def load_gguf(path: Path) -> tuple[ModelConfig, dict[str, torch.Tensor], dict[str, Any]]:
    """Config, float32 state dict (Hugging Face names) and metadata of a GGUF model."""
    reader = _reader(path)
    meta = _metadata(reader)
    config = _config(meta)
    state: dict[str, torch.Tensor] = {}
    for tensor in reader.tensors:
        name = _hf_name(tensor.name)
        if name is None:
            continue
        array = _float32_array(path, tensor)
        if name.endswith("q_proj.weight") and config.architecture == "llama":
            array = _unpermute(array, config.num_heads)
        elif name.endswith("k_proj.weight") and config.architecture == "llama":
            array = _unpermute(array, config.num_kv_heads)
        state[name] = torch.from_numpy(np.array(array, dtype=np.float32))  # owned, writable
    if "lm_head.weight" not in state:
        config = replace(config, tie_embeddings=True)
    return config, state, meta


def read_token_embeddings(path: Path) -> np.ndarray:
    """The float32 (vocabulary, hidden) token embedding table alone, without the other weights."""
    for tensor in _reader(path).tensors:
        if tensor.name == "token_embd.weight":
            return np.array(_float32_array(path, tensor))  # owned, writable
    raise ModelLoadError(f"{path} has no token embedding table (token_embd.weight)")


def _float32_array(path: Path, tensor: Any) -> np.ndarray:
    """A GGUF tensor dequantized to float32, in Hugging Face's (rows, columns) order."""
    from gguf.quants import dequantize

    try:
        array = dequantize(tensor.data, tensor.tensor_type).astype(np.float32, copy=False)
    except Exception as exc:  # the gguf package raises bare ValueError/IndexError on bad bytes
        raise ModelLoadError(f"{path}: tensor {tensor.name!r} cannot be read: {exc}") from exc
    return array.reshape([int(d) for d in reversed(tensor.shape)])


def _hf_name(gguf_name: str) -> str | None:
    if gguf_name in _GLOBAL_NAMES:
        return _GLOBAL_NAMES[gguf_name]
    parts = gguf_name.split(".")
    if len(parts) == 4 and parts[0] == "blk" and parts[2] in _LAYER_NAMES:
        return f"model.layers.{parts[1]}.{_LAYER_NAMES[parts[2]]}.{parts[3]}"
    if gguf_name == "rope_freqs.weight":
        return None  # llama3 scaling tables; we recompute them from the config
    raise ModelLoadError(f"unexpected tensor {gguf_name!r} in GGUF file")
