"""A vLLM prompt's token ids made into a request: decode the ids, detect, mask.

vLLM hands the connector token ids only. The detectors need text and each token's character
span, so the ids are decoded and re-encoded with cacheprune's tokenizer (the model's own
tokenizer.json); if re-encoding does not give back the same ids (a prompt tokenized some other
way), no character span can be trusted and the whole prompt counts as private (fail closed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cacheprune.detectors import DetectionPolicy
from cacheprune.models import ChatTokenizer
from cacheprune.serving import ServedRequest, mask_prompt
from cacheprune.serving.known_clean import KnownCleanText
from cacheprune.tokens import as_token_ids


def mask_token_ids(request_id: str, tenant: str, token_ids: Sequence[int],
                   tokenizer: ChatTokenizer, policy: DetectionPolicy,
                   public_ranges: Sequence[tuple[int, int]] = (),
                   known_clean: KnownCleanText | None = None) -> ServedRequest:
    """The request whose prompt vLLM tokenized as `token_ids`, masked as the own engine masks
    (`mask_prompt`); every token private (`failed_closed_reason` set) when the ids do not
    re-encode. `public_ranges`: [start, end) character offsets into the prompt's text (its
    ids decoded) that the operator declares public; a range outside the text raises a
    ValueError. `known_clean`: as `mask_prompt`'s."""
    ids = list(token_ids)
    text = tokenizer.decode(ids, skip_special_tokens=False)
    for start, end in public_ranges:
        if not 0 <= start <= end <= len(text):
            raise ValueError(f"public range ({start}, {end}) lies outside the prompt's "
                             f"{len(text)} characters")
    encoding = tokenizer.encode(text)
    if encoding.ids != ids:
        return ServedRequest(request_id, tenant, as_token_ids(ids),
                             np.ones(len(ids), dtype=np.bool_), "token ids do not re-encode",
                             np.zeros(len(ids), dtype=np.bool_))
    return mask_prompt(request_id, tenant, text, encoding, policy, public_ranges, known_clean)


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
