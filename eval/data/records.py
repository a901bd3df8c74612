"""The one record every dataset loader returns: a document and the questions asked about it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True, frozen=True)
class Query:
    """One question about a document and the reference answers it is scored against."""

    question: str
    answers: list[str]
    # QMSum's query type ('general' / 'specific'); None where the source has no such field.
    kind: str | None = None


@dataclass(slots=True, frozen=True)
class Document:
    """A context that many requests share, with every question the source asks about it."""

    doc_id: str
    dataset: str
    context: str
    queries: list[Query] = field(default_factory=list)
    # Where the document came from, as '<file name>:<first line>', for error messages and reports.
    source: str = ""

    @property
    def num_words(self) -> int:
        return len(self.context.split())
