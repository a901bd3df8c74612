"""Settings of the annotator: segment criteria, attention sinks, recompute policy."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cacheprune import defaults


class RecomputeAboveShare(BaseModel):
    """Mark a token when more than `share` of its attention goes to tokens before its segment."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["above_share"] = "above_share"
    # NOTE: 0.3 marks the ~10 tokens right after a private profile on the default model and
    # about 1% of a paper's tokens overall (docs/annotator.md).
    share: float = Field(default=0.3, ge=0.0, le=1.0)


class RecomputeTopFraction(BaseModel):
    """Mark the `fraction` of each segment's tokens (rounded up) with the highest external share.

    Tokens whose external share is zero are never marked: nothing outside would change them.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["top_fraction"] = "top_fraction"
    fraction: float = Field(default=0.1, ge=0.0, le=1.0)


RecomputePolicy = Annotated[
    RecomputeAboveShare | RecomputeTopFraction, Field(discriminator="kind")
]


class AnnotatorConfig(BaseModel):
    """How segments are chosen from one prefill's attention.

    The engine decides which layers and heads are averaged into the attention it hands over;
    the annotator only sees the result.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    # NOTE: 64 is where fixed windows inside a real paper start to be self-contextualized on
    # the default model (docs/annotator.md); shorter segments are rarely worth a pool entry.
    min_len: int = Field(default=defaults.MIN_SEGMENT_TOKENS, ge=1)
    max_len: int | None = Field(default=None, ge=1)
    # A segment is kept when internal >= ratio * external.
    ratio: float = Field(default=1.0, gt=0.0)
    # The first `sink_tokens` positions of the sequence are attention sinks: their columns never
    # count as internal or external attention. 0 turns sink handling off.
    sink_tokens: int = Field(default=1, ge=0)
    # "exclude": drop the sink columns. "renormalize": also rescale each row to sum to 1 over
    # the remaining columns, so every token weighs the same in a segment's sums.
    sink_mode: Literal["exclude", "renormalize"] = "renormalize"
    recompute: RecomputePolicy = Field(default_factory=RecomputeAboveShare)
    # Which attention counts as coming from outside a token's segment when marking it for
    # recompute. "all": every token before the segment (the CachePrune paper). "unshared": the
    # same, less the earlier segments of the same prompt, which are published with it, and the
    # tokens the prefill reused from the pool: a prompt that reuses a document's later segment
    # usually has the document's earlier text (and the same template) before it.
    # NOTE: on the default workload "all" marks 72% of a document's second segment, and 65 of
    # those 72 points are attention to the document's own first segment.
    recompute_context: Literal["all", "unshared"] = "unshared"

    @model_validator(mode="after")
    def _lengths_are_ordered(self) -> AnnotatorConfig:
        if self.max_len is not None and self.max_len < self.min_len:
            raise ValueError(
                f"max_len ({self.max_len}) must be at least min_len ({self.min_len})"
            )
        return self
