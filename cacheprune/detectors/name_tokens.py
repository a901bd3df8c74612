"""Words as the name detector sees them: where they are, their case, their popularity as first
and last names (the gazetteer) and whether they are ordinary English words."""

from __future__ import annotations

from dataclasses import dataclass

import regex

from cacheprune.detectors.calendar_words import calendar_words
from cacheprune.detectors.name_gazetteer import COMMON_RANK, MAX_RANK, load_gazetteer
from cacheprune.detectors.name_words import NameWordsSpec, caseless_stop_words, ordinary_words

_LETTERS = r"[^\W\d_\p{Han}\p{Hiragana}\p{Katakana}]"
WORD = regex.compile(rf"{_LETTERS}+(?:['’\-]{_LETTERS}+)*")
_SURNAME_PREFIX = regex.compile(r"^(?:o['’]|d['’]|mc|mac|fitz)(?=\p{L})", regex.IGNORECASE)
# A noun this popular as a name counts as a name (John, Wilson, Victoria); less popular nouns
# ('data', 'york') count as ordinary words.
NAME_NOUN_RANK = 100
# A word's ranks, whether it is ordinary, a noun, a particle (WordReader._read_key).
_KeyFacts = tuple[int | None, int | None, bool, bool, bool]
_PART_SEPARATOR = regex.compile(r"[-']")
# A weekday or month name next to a number or to another one dates something: '14 Maret 2027',
# 'Lundi 10 mars', 'Tue & Thu', 'Mon, Tue, Thu'.
_NUMBER_BEFORE = regex.compile(r"\d[.,]?[ \t\u00a0]{0,2}$")
_NUMBER_AFTER = regex.compile(r"\.?,?[ \t\u00a0]{0,2}\d")
_CALENDAR_GAP = regex.compile(r"[ \t\u00a0]*(?:[,&/+–-]|and|und|et|y|e|i|og|och|en)?[ \t\u00a0]*")


@dataclass(slots=True)
class NameWord:
    start: int
    end: int
    capitalized: bool
    lower: bool
    upper: bool  # all capitals, two letters or more ('MOREAU')
    first: int | None
    last: int | None
    ordinary: bool
    noun: bool  # also an English noun ('Adam', 'Victoria'): a lone one needs a cue
    particle: bool
    caseless: bool = False  # a script without letter case (Arabic, Hebrew, Hangul, Devanagari)

    @property
    def known(self) -> bool:
        return self.first is not None or self.last is not None

    @property
    def strong(self) -> bool:
        return self.known and not self.ordinary


class WordReader:
    """Reads the words of a text with what the gazetteer and the English word lists say."""

    def __init__(self, words: NameWordsSpec, vocabulary_model: str) -> None:
        self._gazetteer = load_gazetteer()
        self._ordinary = ordinary_words(vocabulary_model)
        self._particles = frozenset(p.casefold() for p in words.particles)
        self._function_words = (frozenset(w.casefold() for w in words.function_words)
                                | caseless_stop_words())
        self._calendar = calendar_words()

    def words(self, text: str) -> list[NameWord]:
        # A document repeats its words: each is looked up once per text. NOTE: never across
        # texts, so that one tenant's words cannot make another's detection faster.
        facts: dict[tuple[str, bool], _KeyFacts] = {}
        found = [self.word(text, m.start(), m.end(), facts) for m in WORD.finditer(text)]
        self._unname_dates(text, found)
        return found

    def _unname_dates(self, text: str, words: list[NameWord]) -> None:
        """Weekday and month names next to a number or to each other are no names."""
        calendar = [self._calendar.is_calendar(text[w.start:w.end].casefold()) for w in words]

        def joined(left: int, right: int) -> bool:
            """Words `left` and `right` (adjacent) are both calendar words, a short gap apart."""
            return (0 <= left and right < len(words) and calendar[left] and calendar[right]
                    and bool(_CALENDAR_GAP.fullmatch(text, words[left].end, words[right].start)))

        for index, word in enumerate(words):
            if calendar[index] and (
                    _NUMBER_BEFORE.search(text, max(0, word.start - 4), word.start)
                    or _NUMBER_AFTER.match(text, word.end)
                    or joined(index - 1, index) or joined(index, index + 1)):
                word.first = word.last = None
                word.ordinary = True

    def word(self, text: str, start: int, end: int,
             facts_seen: dict[tuple[str, bool], _KeyFacts] | None = None) -> NameWord:
        token = text[start:end]
        key = token.casefold().replace("’", "'")
        if key.endswith("'s"):
            key = key[:-2]
        # O'Brien, McAllister, D'Angelo: surname-shaped, never an ordinary word
        surname_shaped = bool(_SURNAME_PREFIX.match(key)) and token[-1].islower()
        facts = None if facts_seen is None else facts_seen.get((key, surname_shaped))
        if facts is None:
            facts = self._read_key(key, surname_shaped)
            if facts_seen is not None:
                facts_seen[(key, surname_shaped)] = facts
        first, last, ordinary, noun, particle = facts
        caseless = not (token[0].isupper() or token[0].islower())
        return NameWord(
            start, end,
            capitalized=token[0].isupper() and not (len(token) > 1 and token.isupper())
            or caseless,
            lower=token.islower(),
            upper=len(token) > 1 and token.isupper(),
            first=first, last=last, ordinary=ordinary, noun=noun, particle=particle,
            caseless=caseless,
        )

    def _read_key(self, key: str, surname_shaped: bool) -> _KeyFacts:
        """What the word lists say of a casefolded word: its ranks as a first and a last name,
        whether it is an ordinary word, an English noun, a particle."""
        # Articles, pronouns and prepositions of other languages are in the gazetteer as rare
        # names ('een', 'Ihre'); in a text they are those words.
        is_function_word = key in self._function_words
        first, last = (None, None) if is_function_word else self._ranks(key)
        if key in self._calendar.full and (first is None or first > COMMON_RANK):
            # 'Oktober', 'Montag': a month or a weekday, no popular given name ('April', 'June')
            is_function_word, first, last = True, None, None
        if first is None and last is None and surname_shaped:
            last = COMMON_RANK
        ordinary = is_function_word or not surname_shaped and self._is_ordinary(key, first, last)
        return first, last, ordinary, self._ordinary.is_noun(key), key in self._particles

    def _ranks(self, key: str) -> tuple[int | None, int | None]:
        ranks = self._gazetteer.get(key)
        if ranks is not None:
            return ranks.first, ranks.last
        parts = [p for p in _PART_SEPARATOR.split(key) if len(p) > 1]
        if len(parts) < 2:
            return None, None
        found = [self._gazetteer[p] for p in parts if p in self._gazetteer]
        firsts = [r.first for r in found if r.first is not None]
        lasts = [r.last for r in found if r.last is not None]
        return min(firsts, default=None), min(lasts, default=None)

    def _is_ordinary(self, key: str, first: int | None, last: int | None) -> bool:
        parts = [p for p in _PART_SEPARATOR.split(key) if p] or [key]
        popular = min(first or MAX_RANK + 1, last or MAX_RANK + 1) <= NAME_NOUN_RANK
        return all(self._ordinary.is_other(p) or (self._ordinary.is_noun(p) and not popular)
                   for p in parts)
