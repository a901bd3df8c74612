"""Read a Hugging Face model folder: config.json plus *.safetensors (Llama, Mistral, Qwen2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from cacheprune.models.config import ModelConfig, ModelLoadError, RopeScaling

_ARCHITECTURES = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2",
}


def read_config(folder: Path) -> ModelConfig:
    path = folder / "config.json"
    if not path.is_file():
        raise ModelLoadError(f"{folder} has no config.json: not a Hugging Face model folder")
    try:
        raw: dict[str, Any] = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ModelLoadError(f"{path} is not valid JSON: {exc}") from exc
    names = raw.get("architectures") or []
    arch = next((_ARCHITECTURES[n] for n in names if n in _ARCHITECTURES), None)
    if arch is None:
        raise ModelLoadError(
            f"{path}: unknown architecture {names!r}; supported: {', '.join(_ARCHITECTURES)}"
        )
    # NOTE: transformers 5 writes RoPE settings (theta included) under "rope_parameters";
    # older folders use top-level "rope_theta" and "rope_scaling". Both are read.
    rope = raw.get("rope_parameters") or raw.get("rope_scaling") or {}
    try:
        num_heads = int(raw["num_attention_heads"])
        hidden = int(raw["hidden_size"])
        return ModelConfig(
            architecture=arch,
            vocab_size=int(raw["vocab_size"]),
            hidden_size=hidden,
            intermediate_size=int(raw["intermediate_size"]),
            num_layers=int(raw["num_hidden_layers"]),
            num_heads=num_heads,
            num_kv_heads=int(raw.get("num_key_value_heads") or num_heads),
            head_dim=int(raw.get("head_dim") or hidden // num_heads),
            max_context=int(raw["max_position_embeddings"]),
            rope_theta=float(raw.get("rope_theta") or rope.get("rope_theta") or 10000.0),
            rms_norm_eps=float(raw["rms_norm_eps"]),
            qkv_bias=arch == "qwen2" or bool(raw.get("attention_bias", False)),
            tie_embeddings=bool(raw.get("tie_word_embeddings", False)),
            rope_scaling=_rope_scaling(rope, path),
        )
    except KeyError as exc:
        raise ModelLoadError(f"{path}: missing field {exc.args[0]!r}") from exc


def _rope_scaling(raw: dict[str, Any], path: Path) -> RopeScaling | None:
    kind = raw.get("rope_type") or raw.get("type")
    if kind in (None, "default"):
        return None
    if kind == "linear":
        return RopeScaling("linear", float(raw["factor"]))
    if kind == "llama3":
        return RopeScaling(
            "llama3",
            float(raw["factor"]),
            float(raw["low_freq_factor"]),
            float(raw["high_freq_factor"]),
            int(raw["original_max_position_embeddings"]),
        )
    raise ModelLoadError(f"{path}: rope_scaling type {kind!r} is not supported (linear, llama3)")


def load_hf_folder(folder: Path) -> tuple[ModelConfig, dict[str, torch.Tensor]]:
    """Config and float32 state dict of a safetensors model folder."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    config = read_config(folder)
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise ModelLoadError(f"{folder} has no *.safetensors weight files")
    state: dict[str, torch.Tensor] = {}
    for file in files:
        try:
            tensors = load_file(str(file))
        except (SafetensorError, OSError) as exc:
            raise ModelLoadError(f"{file} is not a readable safetensors file: {exc}") from exc
        state.update({name: t.float() for name, t in tensors.items()})
    return config, state
