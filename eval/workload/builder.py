"""Multi-tenant requests over shared documents, each carrying its tenant's private details."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from eval.data import Document
from eval.workload.document import WorkloadError, note_boundary, truncate_text
from eval.workload.private_values import UniqueValues, ValueSource
from eval.workload.prompt import (
    CLOSINGS,
    GREETINGS,
    NOTES,
    PROFILE_TOPICS,
    Phrase,
    SlotSpec,
    build_template,
)
from eval.workload.template import CharSpan, PromptTemplate, RenderedPrompt

PLACEMENTS = ("before", "inside", "after")


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
class SlotInfo:
    """What fills a slot: the kind of value, its locale and where it sits in the prompt."""

    kind: str
    locale: str
    placement: str  # one of PLACEMENTS
    lower: bool = False  # the template writes this value in lower case


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
    slots: dict[str, SlotInfo]

    @property
    def private_fraction(self) -> float:
        """Private characters ÷ characters of the user message."""
        user_chars = len(self.messages[1]["content"])
        return sum(end - start for _, start, end in self.private_char_spans) / user_chars


@dataclass(slots=True, frozen=True)
class _Profile:
    """A tenant's own details: its locale, greeting and profile lines with their values."""

    locale: str
    greeting: Phrase
    lines: tuple[Phrase, ...]
    values: dict[str, str]


def build_requests(documents: Sequence[Document], config: WorkloadConfig) -> list[Request]:
    """Requests for every (document, query, asking tenant), seeded by `config.seed`."""
    if not documents:
        raise WorkloadError("no documents to build requests from")
    rng = random.Random(config.seed)
    source = ValueSource(config.seed)
    values = UniqueValues(source, [document.context for document in documents])
    tenants = [f"tenant-{index:02d}" for index in range(config.num_tenants)]
    profiles = {tenant: _draw_profile(rng, source, values) for tenant in tenants}
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
                profile = profiles[tenant]
                note, closing = rng.choice(NOTES), rng.choice(CLOSINGS)
                slot_values = dict(profile.values)
                slots = _profile_slots(profile)
                # The colleague in the note may come from anywhere; the rest is the tenant's.
                for phrase, placement, locale in ((note, "inside", source.pick_locale()),
                                                  (closing, "after", profile.locale)):
                    for spec in phrase.slots:
                        slot_values[spec.name] = values.draw(spec.kind, locale, spec.lower).text
                        slots[spec.name] = SlotInfo(spec.kind, locale, placement, spec.lower)
                template, rendered = _closest_to_target(
                    profile, text[:boundary], note, separator, text[boundary:], closing,
                    query.question, slot_values, config.private_fraction,
                )
                requests.append(_request(
                    f"{document.doc_id}/q{query_index}/{tenant}", tenant, document, query_index,
                    template, rendered, slot_values, slots, config.documents_public,
                ))
    if config.shuffle:
        rng.shuffle(requests)
    return requests


def _draw_profile(rng: random.Random, source: ValueSource, values: UniqueValues) -> _Profile:
    locale = source.pick_locale()
    greeting = rng.choice(GREETINGS)
    lines = tuple(rng.choice(topic) for topic in PROFILE_TOPICS)
    order = list(range(len(lines)))
    rng.shuffle(order)  # so that every topic is somebody's first line
    lines = tuple(lines[i] for i in order)
    specs: list[SlotSpec] = list(greeting.slots)
    for line in lines:
        specs.extend(line.slots)
    drawn = {spec.name: values.draw(spec.kind, locale, spec.lower).text for spec in specs}
    return _Profile(locale, greeting, lines, drawn)


def _profile_slots(profile: _Profile) -> dict[str, SlotInfo]:
    return {spec.name: SlotInfo(spec.kind, profile.locale, "before", spec.lower)
            for phrase in (profile.greeting, *profile.lines) for spec in phrase.slots}


def _closest_to_target(
    profile: _Profile,
    head: str,
    note: Phrase,
    separator: str,
    tail: str,
    closing: Phrase,
    question: str,
    slot_values: dict[str, str],
    target: float,
) -> tuple[PromptTemplate, RenderedPrompt]:
    """The template with the prefix of the profile's lines whose private share is nearest
    `target`."""
    best: tuple[float, PromptTemplate, RenderedPrompt] | None = None
    for num_lines in range(len(profile.lines) + 1):
        template = build_template(profile.greeting, profile.lines[:num_lines], head, note,
                                  separator, tail, closing, question)
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
    all_slots: dict[str, SlotInfo],
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
        slots={name: all_slots[name] for name in template.slot_names},
    )
