"""Fitting documents into the model's context: a document whose longest prompt (with the
tenant's details, the note and the question around it) would not fit is cut, at a word end,
just short enough that it does."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from eval.data import Document
from eval.workload.builder import Request, WorkloadConfig, build_requests
from eval.workload.document import WorkloadError, truncate_text

# A cut is estimated from the tokens per word of the whole prompt, then checked by rendering
# and counting again; a few rounds always suffice (each round only ever shortens documents).
_MAX_ROUNDS = 12


@dataclass(slots=True, frozen=True)
class DocumentCut:
    """A document cut to fit: its words before the cut and the words kept."""

    doc_id: str
    num_words: int
    num_words_kept: int


def fit_to_context(
    documents: Sequence[Document],
    config: WorkloadConfig,
    count_prompt_tokens: Callable[[Request], int],
    max_prompt_tokens: int,
) -> tuple[list[Request], list[DocumentCut]]:
    """The requests of `build_requests(documents, config)`, with each document cut (beyond
    `config`'s own limits) only as far as needed for every prompt about it to take at most
    `max_prompt_tokens`; and the cuts made. Same inputs, same requests."""
    if max_prompt_tokens < 1:
        raise WorkloadError(f"max_prompt_tokens must be at least 1, got {max_prompt_tokens}")
    texts = {
        d.doc_id: truncate_text(d.context, config.max_document_words, config.max_document_chars)
        for d in documents
    }
    words_before = {doc_id: len(text.split()) for doc_id, text in texts.items()}
    first_texts = dict(texts)
    whole = dataclasses.replace(config, max_document_words=None, max_document_chars=None)
    for _ in range(_MAX_ROUNDS):
        cut_documents = [dataclasses.replace(d, context=texts[d.doc_id]) for d in documents]
        try:
            requests = build_requests(cut_documents, whole)
        except WorkloadError as error:
            if texts == first_texts:
                raise
            raise WorkloadError(
                f"documents cut to fit {max_prompt_tokens} prompt tokens became too short for "
                f"the workload ({error}); the model's context is too short for this workload"
            ) from None
        longest: dict[str, int] = {}
        for request in requests:
            longest[request.doc_id] = max(longest.get(request.doc_id, 0),
                                          count_prompt_tokens(request))
        over = {doc_id: n for doc_id, n in longest.items() if n > max_prompt_tokens}
        if not over:
            cuts = [DocumentCut(doc_id, words_before[doc_id], len(texts[doc_id].split()))
                    for doc_id in texts if len(texts[doc_id].split()) < words_before[doc_id]]
            return requests, cuts
        for doc_id, num_tokens in over.items():
            num_words = len(texts[doc_id].split())
            # NOTE: the excess is spread over the whole prompt's tokens per word, which
            # undercuts a little (the template's tokens count too); the next round finishes.
            drop = math.ceil((num_tokens - max_prompt_tokens) * num_words / num_tokens) + 1
            if drop >= num_words:
                raise WorkloadError(
                    f"document {doc_id!r}: its prompt has {num_tokens} tokens, more than "
                    f"{max_prompt_tokens} even without most of the document; the model's "
                    "context is too short for this workload"
                )
            texts[doc_id] = truncate_text(texts[doc_id], num_words - drop, None)
    raise WorkloadError(
        f"documents still do not fit {max_prompt_tokens} prompt tokens after {_MAX_ROUNDS} cuts"
    )


def describe_cuts(cuts: Sequence[DocumentCut], num_documents: int, max_prompt_tokens: int,
                  context_tokens: int) -> str:
    """One sentence for the report: how many documents were cut to fit, and to what length."""
    if not cuts:
        return (f"No document was cut to fit the model's context ({context_tokens:,} tokens, "
                f"prompts of at most {max_prompt_tokens:,}).")
    each = "; ".join(f"{cut.doc_id} to {cut.num_words_kept:,} of {cut.num_words:,} words"
                     for cut in cuts)
    return (f"{len(cuts)} of {num_documents} documents were cut to fit the model's context "
            f"({context_tokens:,} tokens, prompts of at most {max_prompt_tokens:,} so the answer "
            f"fits too): {each}.")
