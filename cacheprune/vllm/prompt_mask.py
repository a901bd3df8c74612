"""Which leading tokens of a prompt may be shared: decode the ids, detect, mask.

vLLM hands the connector token ids only. The detectors need text and each token's character
span, so the ids are decoded and re-encoded with cacheprune's tokenizer (the model's own
tokenizer.json); if re-encoding does not give back the same ids (a prompt tokenized some other
way), no character span can be trusted and the whole prompt counts as private (fail closed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cacheprune.detectors import DetectionPolicy
from cacheprune.models import ChatTokenizer
from cacheprune.serving.prompt import inside_ranges
from cacheprune.tokens import MaskArray


@dataclass(slots=True, frozen=True)
class PromptMask:
    """`private[i]`: token i is private; `declared_public[i]`: its text lies inside a range
    the operator declared public. `shareable` tokens lead the prompt, none private."""

    private: MaskArray
    failed_closed: bool
    declared_public: MaskArray

    @property
    def shareable(self) -> int:
        hits = np.flatnonzero(self.private)
        return int(hits[0]) if hits.size else int(self.private.shape[0])


def mask_prompt(token_ids: Sequence[int], tokenizer: ChatTokenizer, policy: DetectionPolicy,
                public_ranges: Sequence[tuple[int, int]] = ()) -> PromptMask:
    """`public_ranges`: [start, end) character offsets into the prompt's text (its ids decoded)
    that the operator declares public; a range outside the text raises a ValueError."""
    ids = list(token_ids)
    all_private = np.ones(len(ids), dtype=np.bool_)
    text = tokenizer.decode(ids, skip_special_tokens=False)
    for start, end in public_ranges:
        if not 0 <= start <= end <= len(text):
            raise ValueError(f"public range ({start}, {end}) lies outside the prompt's "
                             f"{len(text)} characters")
    encoding = tokenizer.encode(text)
    none_declared = np.zeros(len(ids), dtype=np.bool_)
    if encoding.ids != ids:
        return PromptMask(all_private, True, none_declared)
    masked = policy.mask(text, encoding.offsets, public_ranges)
    if masked.detection.failed_closed:
        return PromptMask(all_private, True, none_declared)
    return PromptMask(np.asarray(masked.mask, dtype=np.bool_), False,
                      inside_ranges(encoding.offsets, public_ranges))


def parse_public_ranges(value: Any) -> list[tuple[int, int]]:
    """A request's declared public ranges, as sent: a list of [start, end] integer pairs."""
    if not isinstance(value, list):
        raise ValueError(f"public ranges must be a list of [start, end] pairs, got "
                         f"{type(value).__name__}")
    ranges = []
    for item in value:
        if not (isinstance(item, list | tuple) and len(item) == 2
                and all(isinstance(x, int) and not isinstance(x, bool) for x in item)):
            raise ValueError(f"public range {item!r} is not a [start, end] pair of integers")
        ranges.append((int(item[0]), int(item[1])))
    return ranges
