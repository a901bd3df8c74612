"""Fitting a document into a small model's context and finding where a note can go inside it."""

from __future__ import annotations

import random
import re

_WORD = re.compile(r"\S+")
# A sentence ends with . ! or ? and the next one starts with a capital letter after one space.
_SENTENCE_END = re.compile(r"[.!?] (?=[A-Z])")


class WorkloadError(ValueError):
    """A document or a workload setting cannot make a valid request; the message says which."""


def truncate_text(text: str, max_words: int | None, max_chars: int | None) -> str:
    """`text` cut after at most `max_words` words and `max_chars` characters, whichever is
    shorter, always at the end of a word, with the original whitespace and line breaks kept.

    A single first word longer than `max_chars` is cut inside the word: there is no earlier
    word end to cut at.
    """
    if max_words is not None and max_words < 1:
        raise WorkloadError(f"max_document_words must be at least 1, got {max_words}")
    if max_chars is not None and max_chars < 1:
        raise WorkloadError(f"max_document_chars must be at least 1, got {max_chars}")
    end = len(text.rstrip())
    if max_words is not None:
        for index, word in enumerate(_WORD.finditer(text)):
            if index + 1 == max_words:
                end = min(end, word.end())
                break
    if max_chars is not None and end > max_chars:
        last_fitting_end = 0
        for word in _WORD.finditer(text):
            if word.end() > max_chars:
                break
            last_fitting_end = word.end()
        end = last_fitting_end if last_fitting_end else max_chars
    return text[:end]


def note_boundary(text: str, rng: random.Random) -> tuple[int, str]:
    """A place in the middle half of `text` to insert a note, and the separator after the note.

    Prefers the start of a line (separator '\\n', so the document around the note keeps its
    own line breaks); a text without line breaks there gets a sentence boundary (separator
    ' '). Removing the note and its separator gives back `text` exactly.
    """
    low, high = len(text) // 4, (3 * len(text)) // 4
    line_starts = [
        match.end()
        for match in re.finditer(r"\n+", text)
        if low <= match.end() <= high and match.end() < len(text)
    ]
    if line_starts:
        return rng.choice(line_starts), "\n"
    sentence_starts = [m.end() for m in _SENTENCE_END.finditer(text) if low <= m.end() <= high]
    if sentence_starts:
        return rng.choice(sentence_starts), " "
    raise WorkloadError(
        "no line or sentence boundary in the middle half of the document to insert the note"
    )
