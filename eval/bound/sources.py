"""Where each prompt token's text comes from, and which tokens no earlier request could have
published: the must-compute set of the oracle bound.

A public token is identified by its id and the public text it covers:
- document text by (document, character offsets in the document): the same words of the same
  document, wherever the tenant's note split it;
- any other public text (system prompt, chat markup, the template's literal words) by the text
  from the start of its stretch up to the token's end, a stretch running from the last private
  value, document or question (or the prompt's start): the same template words after the same
  kind of boundary.
Private values and the question have no identity: they are always computed. A public token can
be reused when an earlier request of the run carried a public token of the same identity (one
its detectors did not flag); where its KV sits in that request does not matter, since the KV
is moved to its new position.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cacheprune.models import ChatTokenizer
from cacheprune.serving import render
from cacheprune.tokens import TokenIds, as_token_ids
from eval.workload import USER_MESSAGE_INDEX, Request

# A part of one token: ("d", doc_id, start, end) for document text, ("t", left context) for
# other public text.
TokenPart = tuple[str, ...] | tuple[str, str, int, int]
TokenKey = tuple[int, tuple[TokenPart, ...]]

_TEMPLATE, _DOCUMENT, _PRIVATE, _QUESTION = 0, 1, 2, 3


@dataclass(slots=True)
class PromptSources:
    """A request's prompt as the engine renders and tokenizes it, with each token's identity
    (None for a token that is always computed: private or part of the question)."""

    text: str
    token_ids: TokenIds
    keys: list[TokenKey | None]

    @property
    def num_tokens(self) -> int:
        return int(self.token_ids.shape[0])

    def must_compute(self, available: dict[TokenKey, int] | set[TokenKey],
                     private_mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
        """True for tokens the cheapest prefill must compute: private (by the ground truth or
        by the detectors' `private_mask`), the question, tokens of no identity in `available`
        (the public tokens of earlier requests), and the last token."""
        compute = np.array([key is None or key not in available for key in self.keys],
                           dtype=np.bool_)
        compute |= private_mask
        compute[-1] = True
        return compute

    def public_keys(self, private_mask: npt.NDArray[np.bool_]) -> list[tuple[int, TokenKey]]:
        """(position, identity) of the tokens this request could publish: public by the ground
        truth and not flagged by the detectors."""
        return [(position, key) for position, key in enumerate(self.keys)
                if key is not None and not private_mask[position]]


def prompt_sources(tokenizer: ChatTokenizer, request: Request) -> PromptSources:
    """Render and tokenize `request` as the engine does, and identify each token's text."""
    user = request.messages[USER_MESSAGE_INDEX]["content"]
    question_start = user.rfind(request.question)
    if not request.question or question_start < 0:
        raise ValueError(f"request {request.request_id}: its question is not in its prompt")
    question = (USER_MESSAGE_INDEX, question_start, question_start + len(request.question))
    spans = [*request.private_char_spans, *request.document_char_ranges, question]
    rendered = render(tokenizer, request.messages, spans)
    text, ranges = rendered.text, rendered.public
    num_private = len(request.private_char_spans)
    num_document = len(request.document_char_ranges)

    kind = np.full(len(text), _TEMPLATE, dtype=np.int8)
    document_offset = np.zeros(len(text), dtype=np.int64)
    offset = 0
    for start, end in ranges[num_private:num_private + num_document]:
        kind[start:end] = _DOCUMENT
        document_offset[start:end] = np.arange(offset, offset + end - start)
        offset += end - start
    for start, end in ranges[:num_private]:
        kind[start:end] = _PRIVATE
    question_range = ranges[-1]
    kind[question_range[0]:question_range[1]] = _QUESTION
    stretch_start = _stretch_starts(kind)

    encoding = tokenizer.encode_prompt(text, rendered.untrusted)  # as the engine tokenizes
    keys: list[TokenKey | None] = []
    for token_id, (start, end) in zip(encoding.ids, encoding.offsets, strict=True):
        token_kinds = kind[start:end]
        if (token_kinds >= _PRIVATE).any():
            keys.append(None)
            continue
        parts: list[TokenPart] = []
        position = start
        while position < end:
            run_end = position + 1
            while run_end < end and kind[run_end] == kind[position]:
                run_end += 1
            if kind[position] == _DOCUMENT:
                parts.append(("d", request.doc_id, int(document_offset[position]),
                              int(document_offset[run_end - 1]) + 1))
            else:
                parts.append(("t", text[int(stretch_start[position]):run_end]))
            position = run_end
        keys.append((int(token_id), tuple(parts)))
    return PromptSources(text, as_token_ids(encoding.ids), keys)


def _stretch_starts(kind: npt.NDArray[np.int8]) -> npt.NDArray[np.int64]:
    """For each character, where its run of template text began (the character after the last
    non-template character before it, or 0)."""
    index = np.arange(kind.shape[0], dtype=np.int64)
    boundary = np.where(kind != _TEMPLATE, index + 1, 0)
    return np.maximum.accumulate(boundary)
