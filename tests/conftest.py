"""Shared fixtures: the real default model is loaded once per test session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def default_model():
    """Our transformer and tokenizer for SmolLM2-135M-Instruct (float32)."""
    from cacheprune.engine import load_default

    return load_default()


@pytest.fixture(scope="session")
def hf_reference():
    """transformers' own model on the same GGUF weights: the independent reference."""
    import torch
    from transformers import AutoModelForCausalLM

    from cacheprune.models.sources import default_model_path

    path = default_model_path()
    model = AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32, attn_implementation="eager"
    )
    return model.eval()
