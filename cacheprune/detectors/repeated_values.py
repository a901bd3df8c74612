"""A value found once is private wherever it recurs in the text.

A detector that finds 'Lukas' as a chat's speaker, or 'Anna' after 'Dear', may miss the same
word three lines down ('bring Lukas', 'Anna said'); a prober who sees which tokens were shared
reads it there. So every other occurrence of a found value's exact string, standing as a whole
word, gets the same span. Single words that are English verbs, adjectives or stop words ('May',
'Will', found after a cue) are not copied: elsewhere they are mostly those words.
"""

from __future__ import annotations

import regex

from cacheprune.detectors.base import Span
from cacheprune.detectors.name_words import ordinary_words

# Shorter values ('Li', 'Ed') are too often pieces of other words and codes.
MIN_CHARS = 3
_WORD_EDGE = regex.compile(r"[\w\p{M}]")
_LETTER_OR_DIGIT = regex.compile(r"[\p{L}\p{N}]")
# A letter of a script written without spaces between words (Chinese, Japanese, Thai...).
SPACELESS_LETTER = regex.compile(
    r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}]")


def repeated_values(text: str, spans: list[Span]) -> list[Span]:
    """`spans`, and a copy of each at every other whole-word occurrence of its text."""
    covered = {(s.start, s.end) for s in spans}
    copies: list[Span] = []
    seen: set[str] = set()
    for span in sorted(spans, key=lambda s: -s.score):
        value = text[span.start:span.end]
        if value in seen or not _worth_copying(value):
            continue
        seen.add(value)
        at = text.find(value)
        while at >= 0:
            end = at + len(value)
            if (at, end) not in covered and _whole_word(text, at, end, value):
                copies.append(Span(span.entity, at, end, span.score, span.detector))
                covered.add((at, end))
            at = text.find(value, at + 1)
    return spans + copies


def _worth_copying(value: str) -> bool:
    if len(value.strip()) < MIN_CHARS or not _LETTER_OR_DIGIT.search(value):
        return False
    if " " not in value and value.isalpha():
        return not ordinary_words().is_other(value.casefold())
    return True


def _whole_word(text: str, start: int, end: int, value: str) -> bool:
    """Not inside a longer word: no word character right before or after, where the value's
    own edge is one. Scripts written without spaces ('ゆうこ', 'สมชาย') have no such edges."""
    def joined(edge: str, neighbour: str) -> bool:
        return bool(_WORD_EDGE.match(edge) and _WORD_EDGE.match(neighbour)
                    and not SPACELESS_LETTER.match(edge))

    return not ((start > 0 and joined(value[0], text[start - 1]))
                or (end < len(text) and joined(value[-1], text[end])))
