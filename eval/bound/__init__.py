"""The oracle bound: the cheapest prefill of each warm request, timed alongside the systems."""

from eval.bound.oracle import BoundRecord, OracleBound
from eval.bound.reference import KeepReferenceKV, ReferenceKV
from eval.bound.sources import PromptSources, TokenKey, prompt_sources
from eval.bound.summary import Bound, share_of_bound

__all__ = [
    "Bound",
    "BoundRecord",
    "KeepReferenceKV",
    "OracleBound",
    "PromptSources",
    "ReferenceKV",
    "TokenKey",
    "prompt_sources",
    "share_of_bound",
]
