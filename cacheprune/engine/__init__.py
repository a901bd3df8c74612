"""The model side of cacheprune: loading real checkpoints, a prefill that reuses cached KV at
new positions, attention capture for the annotator, and decoding."""

from cacheprune.engine.config import ModelConfig, ModelLoadError
from cacheprune.engine.convert import converted_folder
from cacheprune.engine.generate import Generation, RequestStats, SamplingParams, generate
from cacheprune.engine.loader import load_default, load_model
from cacheprune.engine.model import Transformer
from cacheprune.engine.plan import (
    AttentionCapture,
    KVBuffer,
    PlanError,
    PrefillPlan,
    PrefillResult,
    ReusedSpan,
)
from cacheprune.engine.tokenizer import ChatTokenizer, Encoding, load_tokenizer

__all__ = [
    "AttentionCapture",
    "ChatTokenizer",
    "Encoding",
    "Generation",
    "KVBuffer",
    "ModelConfig",
    "ModelLoadError",
    "PlanError",
    "PrefillPlan",
    "PrefillResult",
    "RequestStats",
    "ReusedSpan",
    "SamplingParams",
    "Transformer",
    "converted_folder",
    "generate",
    "load_default",
    "load_model",
    "load_tokenizer",
]
