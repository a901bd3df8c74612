"""Which private values the detectors fully masked: every token overlapping the value private."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from cacheprune.models import ChatTokenizer
from cacheprune.serving import render_prompt
from eval.workload import Request


def fully_masked_slots(tokenizer: ChatTokenizer, request: Request,
                       private_mask: npt.NDArray[np.bool_]) -> dict[str, bool]:
    """Per slot of `request`: True when the request's private mask covers every token that
    holds a character of the slot's value (a token shared with template text counts too)."""
    text, spans = render_prompt(tokenizer, request.messages, request.private_char_spans)
    offsets = np.asarray(tokenizer.encode(text).offsets, dtype=np.int64).reshape(-1, 2)
    if offsets.shape[0] != private_mask.shape[0]:
        raise ValueError(f"request {request.request_id}: the mask has {private_mask.shape[0]} "
                         f"tokens, the prompt {offsets.shape[0]}")
    masked: dict[str, bool] = {}
    for slot, (start, end) in zip(request.template.slot_names, spans, strict=True):
        overlapping = (offsets[:, 1] > start) & (offsets[:, 0] < end)
        masked[slot] = bool(private_mask[overlapping].all())
    return masked
