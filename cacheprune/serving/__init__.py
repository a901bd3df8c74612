"""Serving many tenants from one model and one shared pool: `Engine.generate(tenant, prompt)`.

    from cacheprune.serving import Engine, EngineConfig, SamplingParams
    engine = Engine.from_default(EngineConfig(mode="cacheprune", publish_mode="isolated"))
"""

from cacheprune.engine import SamplingParams
from cacheprune.serving.baselines import NoSharing
from cacheprune.serving.config import EngineConfig, PublishMode, SharingMode
from cacheprune.serving.engine import Engine
from cacheprune.serving.prompt import (
    Messages,
    Prompt,
    PublicRange,
    RenderedPrompt,
    render,
    render_prompt,
)
from cacheprune.serving.record import RequestRecord, ScoredContinuation
from cacheprune.serving.request import (
    RequestStatus,
    RequestStatusError,
    ServedRequest,
    admit,
    mask_prompt,
)
from cacheprune.serving.strategy import Published, SharingStrategy

__all__ = [
    "Engine",
    "EngineConfig",
    "Messages",
    "NoSharing",
    "Prompt",
    "PublicRange",
    "PublishMode",
    "Published",
    "RenderedPrompt",
    "RequestStatus",
    "RequestStatusError",
    "RequestRecord",
    "ScoredContinuation",
    "SamplingParams",
    "ServedRequest",
    "SharingMode",
    "SharingStrategy",
    "admit",
    "mask_prompt",
    "render",
    "render_prompt",
]
