"""Which leading tokens of a prompt may be shared: decode the ids, detect, mask.

vLLM hands the connector token ids only. The detectors need text and each token's character
span, so the ids are decoded and re-encoded with cacheprune's tokenizer (the model's own
tokenizer.json); if re-encoding does not give back the same ids (a prompt tokenized some other
way), no character span can be trusted and the whole prompt counts as private (fail closed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cacheprune.detectors import DetectionPolicy
from cacheprune.models.tokenizer import ChatTokenizer
from cacheprune.tokens import MaskArray


@dataclass(slots=True, frozen=True)
class PromptMask:
    """`private[i]`: token i is private. `shareable` tokens lead the prompt, none private."""

    private: MaskArray
    failed_closed: bool

    @property
    def shareable(self) -> int:
        hits = np.flatnonzero(self.private)
        return int(hits[0]) if hits.size else int(self.private.shape[0])


def mask_prompt(token_ids: Sequence[int], tokenizer: ChatTokenizer,
                policy: DetectionPolicy) -> PromptMask:
    ids = list(token_ids)
    all_private = np.ones(len(ids), dtype=np.bool_)
    text = tokenizer.decode(ids, skip_special_tokens=False)
    encoding = tokenizer.encode(text)
    if encoding.ids != ids:
        return PromptMask(all_private, failed_closed=True)
    masked = policy.mask(text, encoding.offsets)
    if masked.detection.failed_closed:
        return PromptMask(all_private, failed_closed=True)
    return PromptMask(np.asarray(masked.mask, dtype=np.bool_), failed_closed=False)
