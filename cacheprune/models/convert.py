"""Convert a GGUF model into a plain Hugging Face folder (config.json, model.safetensors,
tokenizer files): what vLLM needs, and a faster start for our own engine.

The folder is cached under the model's identity (name + digest of the GGUF bytes), so the
conversion runs once per machine: later calls return the existing folder.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from cacheprune.models.config import ModelConfig
from cacheprune.models.gguf_loader import load_gguf
from cacheprune.models.sources import SOURCE_RECORD, cache_root, model_identity, resolve_source
from cacheprune.models.tokenizer import tokenizer_from_gguf_metadata

_HF_ARCHITECTURES = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
                     "qwen2": "Qwen2ForCausalLM"}


def converted_folder(source: str | os.PathLike[str] | None = None,
                     out: Path | None = None) -> Path:
    """The Hugging Face folder for a GGUF model, converting it if it is not there yet."""
    gguf_path = resolve_source(source)
    if gguf_path.is_dir():
        return gguf_path  # already a Hugging Face folder
    identity = model_identity(gguf_path)
    target = out or cache_root() / "models" / identity.replace("@", "-")
    if (target / "config.json").is_file():
        return target
    config, state, meta = load_gguf(gguf_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    # NOTE: written into a temporary sibling and renamed, so an interrupted conversion never
    # leaves a folder that looks complete.
    staging = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
    try:
        _write_folder(staging, config, state, meta)
        (staging / SOURCE_RECORD).write_text(json.dumps({"model_id": identity}))
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return target


def _write_folder(folder: Path, config: ModelConfig, state: dict, meta: dict) -> None:
    from safetensors.torch import save_file

    tokenizer = tokenizer_from_gguf_metadata(meta)
    if config.tie_embeddings:
        state = {k: v for k, v in state.items() if k != "lm_head.weight"}
    save_file({k: v.contiguous() for k, v in state.items()}, str(folder / "model.safetensors"),
              metadata={"format": "pt"})
    hf_config = {
        "architectures": [_HF_ARCHITECTURES[config.architecture]],
        "model_type": config.architecture,
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "intermediate_size": config.intermediate_size,
        "num_hidden_layers": config.num_layers,
        "num_attention_heads": config.num_heads,
        "num_key_value_heads": config.num_kv_heads,
        "head_dim": config.head_dim,
        "max_position_embeddings": config.max_context,
        "rope_theta": config.rope_theta,
        "rms_norm_eps": config.rms_norm_eps,
        "hidden_act": "silu",
        "tie_word_embeddings": config.tie_embeddings,
        "attention_bias": config.qkv_bias,
        "torch_dtype": "float32",
        "bos_token_id": meta.get("tokenizer.ggml.bos_token_id"),
        "eos_token_id": meta.get("tokenizer.ggml.eos_token_id"),
    }
    (folder / "config.json").write_text(json.dumps(hf_config, indent=2))
    generation = {"eos_token_id": sorted(tokenizer.stop_token_ids)}
    (folder / "generation_config.json").write_text(json.dumps(generation, indent=2))
    tokenizer.save(folder, config.max_context)
