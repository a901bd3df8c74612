"""The oracle bound: the cheapest prefill of each warm request, timed alongside the systems."""

from eval.bound.oracle import BoundRecord, OracleBound
from eval.bound.sources import PromptSources, TokenKey, prompt_sources
from eval.bound.summary import (
    BOUND_EXPLAINED,
    BOUND_LABEL,
    SHARE_OF_BOUND,
    Bound,
    bound_as_dict,
    share_of_bound,
)

__all__ = [
    "BOUND_EXPLAINED",
    "BOUND_LABEL",
    "SHARE_OF_BOUND",
    "Bound",
    "BoundRecord",
    "OracleBound",
    "PromptSources",
    "TokenKey",
    "bound_as_dict",
    "prompt_sources",
    "share_of_bound",
]
