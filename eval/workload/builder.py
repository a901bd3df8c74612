"""Multi-tenant requests over shared documents, each carrying its tenant's private details."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from eval.data import Document
from eval.workload.document import WorkloadError, note_boundary, truncate_text
from eval.workload.prompt import (
    PROFILE_LINES,
    REQUIRED_SLOTS,
    ProfileLine,
    SlotSpec,
    build_template,
)
from eval.workload.synthetic import UniqueValues
from eval.workload.template import CharSpan, PromptTemplate, RenderedPrompt

# Slots whose values stay with a tenant across its requests (its profile); the others (the
# note's colleague and the reply address) are drawn anew for every request.
_NOTE_AND_QUESTION_SLOTS = ("colleague", "colleague_phone", "reply_email")


@dataclass(slots=True, frozen=True)
class WorkloadConfig:
    """How requests are drawn from documents. Same config and documents, same requests."""

    num_tenants: int = 4
    seed: int = 0
    # The document cut, at a word end, so the prompt fits a small model's context on a CPU.
    max_document_words: int | None = 1200
    max_document_chars: int | None = None
    queries_per_document: int | None = None  # None: every query of each document
    tenants_per_query: int = 1  # how many different tenants ask each query
    # Target share of private characters in the user message; each prompt takes the number of
    # optional profile lines that brings it closest (long documents may stay below it).
    private_fraction: float = 0.025
    documents_public: bool = False  # fill Request.public_char_ranges with the document text
    shuffle: bool = False  # seeded shuffle of all requests instead of document order

    def __post_init__(self) -> None:
        if self.num_tenants < 1:
            raise WorkloadError(f"num_tenants must be at least 1, got {self.num_tenants}")
        if not 1 <= self.tenants_per_query <= self.num_tenants:
            raise WorkloadError(
                f"tenants_per_query must lie in [1, num_tenants={self.num_tenants}], "
                f"got {self.tenants_per_query}"
            )
        if self.queries_per_document is not None and self.queries_per_document < 1:
            raise WorkloadError(
                f"queries_per_document must be at least 1 or None, got {self.queries_per_document}"
            )
        if not 0.0 <= self.private_fraction < 1.0:
            raise WorkloadError(f"private_fraction must lie in [0, 1), got {self.private_fraction}")


@dataclass(slots=True, frozen=True)
class Request:
    """One tenant's question about one document, with the ground truth of what is private.

    `private_char_spans`, `public_char_ranges` and `document_char_ranges` are (message index,
    start, end) into `messages`; `template` re-renders the prompt exactly from `slot_values`,
    with any guess swapped into a slot.
    """

    request_id: str
    tenant: str
    doc_id: str
    messages: list[dict[str, str]]
    private_values: list[str]
    private_char_spans: list[CharSpan]
    public_char_ranges: list[CharSpan]
    document_char_ranges: list[CharSpan]
    question: str
    answers: list[str]
    template: PromptTemplate
    slot_values: dict[str, str]

    @property
    def private_fraction(self) -> float:
        """Private characters ÷ characters of the user message."""
        user_chars = len(self.messages[1]["content"])
        return sum(end - start for _, start, end in self.private_char_spans) / user_chars


def build_requests(documents: Sequence[Document], config: WorkloadConfig) -> list[Request]:
    """Requests for every (document, query, asking tenant), seeded by `config.seed`."""
    if not documents:
        raise WorkloadError("no documents to build requests from")
    rng = random.Random(config.seed)
    values = UniqueValues(rng, [document.context for document in documents])
    tenants = [f"tenant-{index:02d}" for index in range(config.num_tenants)]
    profiles = {tenant: _draw_profile(values) for tenant in tenants}
    requests: list[Request] = []
    asker_turn = 0
    for document in documents:
        text = truncate_text(document.context, config.max_document_words, config.max_document_chars)
        queries = document.queries[: config.queries_per_document]
        for query_index, query in enumerate(queries):
            # Round-robin over tenants, continued across documents, so all tenants share them.
            for _ in range(config.tenants_per_query):
                tenant = tenants[asker_turn % len(tenants)]
                asker_turn += 1
                try:
                    boundary, separator = note_boundary(text, rng)
                except WorkloadError as error:
                    raise WorkloadError(f"document {document.doc_id!r}: {error}") from None
                slot_values = dict(profiles[tenant])
                slot_values.update(
                    {
                        spec.name: values.draw(spec.kind)
                        for spec in REQUIRED_SLOTS
                        if spec.name in _NOTE_AND_QUESTION_SLOTS
                    }
                )
                template, rendered = _closest_to_target(
                    text[:boundary],
                    text[boundary:],
                    separator,
                    query.question,
                    slot_values,
                    config.private_fraction,
                )
                requests.append(
                    _request(
                        f"{document.doc_id}/q{query_index}/{tenant}",
                        tenant,
                        document,
                        query_index,
                        template,
                        rendered,
                        slot_values,
                        config.documents_public,
                    )
                )
    if config.shuffle:
        rng.shuffle(requests)
    return requests


def _draw_profile(values: UniqueValues) -> dict[str, str]:
    specs: list[SlotSpec] = [REQUIRED_SLOTS[0]]
    for line in PROFILE_LINES:
        specs.extend(line.slots)
    return {spec.name: values.draw(spec.kind) for spec in specs}


def _closest_to_target(
    head: str,
    tail: str,
    separator: str,
    question: str,
    slot_values: dict[str, str],
    target: float,
) -> tuple[PromptTemplate, RenderedPrompt]:
    """The template with the prefix of PROFILE_LINES whose private share is nearest `target`."""
    best: tuple[float, PromptTemplate, RenderedPrompt] | None = None
    for num_lines in range(len(PROFILE_LINES) + 1):
        lines: tuple[ProfileLine, ...] = PROFILE_LINES[:num_lines]
        template = build_template(head, tail, separator, question, lines)
        rendered = template.render({name: slot_values[name] for name in template.slot_names})
        user_chars = len(rendered.messages[1]["content"])
        private_chars = sum(end - start for _, start, end in rendered.slot_spans.values())
        distance = abs(private_chars / user_chars - target)
        if best is None or distance < best[0]:
            best = (distance, template, rendered)
    assert best is not None
    return best[1], best[2]


def _request(
    request_id: str,
    tenant: str,
    document: Document,
    query_index: int,
    template: PromptTemplate,
    rendered: RenderedPrompt,
    all_values: dict[str, str],
    documents_public: bool,
) -> Request:
    used = {name: all_values[name] for name in template.slot_names}
    query = document.queries[query_index]
    return Request(
        request_id=request_id,
        tenant=tenant,
        doc_id=document.doc_id,
        messages=rendered.messages,
        private_values=[used[name] for name in template.slot_names],
        private_char_spans=[rendered.slot_spans[name] for name in template.slot_names],
        public_char_ranges=list(rendered.document_ranges) if documents_public else [],
        document_char_ranges=list(rendered.document_ranges),
        question=query.question,
        answers=list(query.answers),
        template=template,
        slot_values=used,
    )
