"""Where a request's cache hits fell: on its document's non-private tokens or elsewhere."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from cacheprune.models import ChatTokenizer
from cacheprune.serving import RequestRecord, render_prompt
from eval.workload import Request


def document_token_mask(tokenizer: ChatTokenizer, request: Request) -> npt.NDArray[np.bool_]:
    """Per prompt token: True where the token lies wholly inside the document's text."""
    text, ranges = render_prompt(tokenizer, request.messages, request.document_char_ranges)
    offsets = np.asarray(tokenizer.encode(text).offsets, dtype=np.int64).reshape(-1, 2)
    mask = np.zeros(offsets.shape[0], dtype=np.bool_)
    for start, end in ranges:
        mask |= (offsets[:, 0] >= start) & (offsets[:, 1] <= end)
    return mask


def count_document_hits(tokenizer: ChatTokenizer, request: Request,
                  record: RequestRecord) -> tuple[int, int]:
    """(hit tokens, tokens) over the request's non-private document tokens."""
    document = document_token_mask(tokenizer, request)
    if document.shape != record.private_mask.shape:
        raise ValueError(f"request {request.request_id}: the record has "
                         f"{record.private_mask.shape[0]} tokens, the prompt {document.shape[0]}")
    shareable = document & ~record.private_mask
    hit = np.zeros_like(shareable)
    for start, end in record.hit_spans:
        hit[start:end] = True
    return int((hit & shareable).sum()), int(shareable.sum())
