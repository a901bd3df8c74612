"""The model runtime: our transformer, a prefill that reuses cached KV at new positions,
attention capture for the annotator, decoding, and loading real checkpoints into it."""

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
from cacheprune.engine.rope import move_keys

__all__ = [
    "AttentionCapture",
    "Generation",
    "KVBuffer",
    "PlanError",
    "PrefillPlan",
    "PrefillResult",
    "RequestStats",
    "ReusedSpan",
    "SamplingParams",
    "Transformer",
    "generate",
    "load_default",
    "load_model",
    "move_keys",
]
