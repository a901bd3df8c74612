"""Serving many tenants from one model and one shared pool: `Engine.generate(tenant, prompt)`.

    from cacheprune.serving import Engine, EngineConfig, SamplingParams
    engine = Engine.from_default(EngineConfig(mode="cacheprune", publish_mode="isolated"))
"""

from cacheprune.engine.generate import SamplingParams
from cacheprune.serving.config import EngineConfig, PublishMode, SharingMode
from cacheprune.serving.engine import Engine
from cacheprune.serving.prompt import Prompt, PublicRange
from cacheprune.serving.record import RequestRecord, ScoredContinuation

__all__ = [
    "Engine",
    "EngineConfig",
    "Prompt",
    "PublicRange",
    "PublishMode",
    "RequestRecord",
    "ScoredContinuation",
    "SamplingParams",
    "SharingMode",
]
