"""Which computed, non-private spans of a prompt are worth publishing, and what to recompute."""

from cacheprune.annotator.annotate import (
    annotate,
    eligible_tokens,
    last_segment_end,
    recompute_marks,
    score_spans,
)
from cacheprune.annotator.config import (
    AnnotatorConfig,
    RecomputeAboveShare,
    RecomputePolicy,
    RecomputeTopFraction,
)
from cacheprune.annotator.sat import SummedAreaTable
from cacheprune.annotator.segments import Annotation, Segment

__all__ = [
    "Annotation",
    "AnnotatorConfig",
    "RecomputeAboveShare",
    "RecomputePolicy",
    "RecomputeTopFraction",
    "Segment",
    "SummedAreaTable",
    "annotate",
    "eligible_tokens",
    "last_segment_end",
    "recompute_marks",
    "score_spans",
]
