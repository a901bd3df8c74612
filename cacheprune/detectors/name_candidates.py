"""What could be a person's name: sentences worth a costly NER model, and phrases it calls names.

spaCy's NER is nearly all of the default chain's cost and it reads every token. It finds a
person only where a capitalized word could be a name, so sentences whose capitalized words
are all ordinary English words ('The', 'Table', 'Section') or acronyms are skipped: the kept
sentences are joined into one text (blank lines between), and spans are mapped back.
"""

from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass

import regex

from cacheprune.detectors.base import cut_after
from cacheprune.detectors.name_gazetteer import COMMON_RANK, MAX_RANK, load_gazetteer
from cacheprune.detectors.name_streets import StreetWords
from cacheprune.detectors.name_tokens import NAME_NOUN_RANK, WORD, WordReader
from cacheprune.detectors.name_words import (
    DEFAULT_VOCABULARY_MODEL,
    load_name_words,
    ordinary_words,
)

# A sentence ends after . ! ? (and closing quotes) before whitespace, or at a line break; not
# after a title or abbreviation ('Mr. Saltram' stays one piece for the NER model).
_SENTENCE_END = regex.compile(
    r"(?<!\b(?:Mr|Mrs|Ms|Mx|Dr|Prof|St|Jr|Sr|Mme|Mlle|Sra|Sgt|Capt|Col|Gen|Rev|vs|etc|al|e\.g|"
    r"i\.e|cf|Fig|No)\.)(?<=[.!?][\"'”’)\]]?)\s+|\n"
)
_CAPITALIZED = regex.compile(r"(?<![\p{L}\p{M}'’-])\p{Lu}[\p{Ll}\p{M}]+(?:['’-]\p{L}+)*")
_LOWER_WORD = regex.compile(r"\p{L}+")
# Languages whose stop words (spaCy's lists) mark a sentence as not English.
_OTHER_LANGUAGES = ("de", "fr", "es", "it", "nl", "pt", "pl", "sv", "da", "nb", "fi", "cs", "ro",
                    "tr", "id", "hu", "ca", "hr", "sk", "sl")
_SEPARATOR = "\n\n"


@dataclass(slots=True, frozen=True)
class JoinedSegments:
    """The kept sentences joined by blank lines, and where each one came from."""

    text: str
    joined_starts: tuple[int, ...]
    original_starts: tuple[int, ...]
    lengths: tuple[int, ...]

    def original_span(self, start: int, end: int) -> tuple[int, int] | None:
        """[start, end) of the joined text in the original, clipped to its sentence."""
        index = bisect.bisect_right(self.joined_starts, start) - 1
        if index < 0:
            return None
        offset = start - self.joined_starts[index]
        if offset >= self.lengths[index]:
            return None  # inside a separator
        stop = min(end - self.joined_starts[index], self.lengths[index])
        base = self.original_starts[index]
        return base + offset, base + stop


class NameCandidates:
    """Selects the sentences with at least one capitalized word that may be a name."""

    def __init__(self, vocabulary_model: str = DEFAULT_VOCABULARY_MODEL) -> None:
        self._gazetteer = load_gazetteer()
        self._ordinary = ordinary_words(vocabulary_model)
        self._other_stop_words = other_stop_words()

    def join(self, text: str) -> JoinedSegments:
        pieces: list[str] = []
        joined_starts: list[int] = []
        original_starts: list[int] = []
        lengths: list[int] = []
        cursor = 0
        for start, end in cut_after(_SENTENCE_END, text):  # spaces go left
            if not self._may_hold_a_name(text[start:end]):
                continue
            if pieces and original_starts[-1] + lengths[-1] == start:
                lengths[-1] = end - original_starts[-1]  # adjacent: one longer segment
                pieces[-1] = text[original_starts[-1]:end]
                continue
            if pieces:
                cursor += len(pieces[-1]) + len(_SEPARATOR)
            pieces.append(text[start:end])
            joined_starts.append(cursor)
            original_starts.append(start)
            lengths.append(end - start)
        return JoinedSegments(_SEPARATOR.join(pieces), tuple(joined_starts),
                              tuple(original_starts), tuple(lengths))

    def _may_hold_a_name(self, sentence: str) -> bool:
        if self._is_other_language(sentence):
            return False
        for match in _CAPITALIZED.finditer(sentence):
            key = match.group().casefold()
            if not (self._ordinary.is_other(key) or self._ordinary.is_noun(key)):
                return True
            ranks = self._gazetteer.get(key)
            # An ordinary word this popular as a name still counts ('Will', 'John').
            if ranks is not None and min(ranks.first or MAX_RANK,
                                         ranks.last or MAX_RANK) <= NAME_NOUN_RANK:
                return True
        return False


    def _is_other_language(self, sentence: str) -> bool:
        """A sentence with two or more stop words of another language (that are no English stop
        words), more than it has English ones: the English NER reads its nouns as names ('Het
        Rijksmuseum', 'La Giralda', 'Ihre Nachricht'); the name detector and the learned model
        still read it.

        NOTE: fourth round; the texts of other languages in the hand-labelled corpus keep their
        names through the name detector's cues in those languages.
        """
        words = [w.casefold() for w in _LOWER_WORD.findall(sentence)]
        num_english = sum(w in self._ordinary.stop_words for w in words)
        num_other = sum(w in self._other_stop_words for w in words)
        return num_other >= 2 and num_other > num_english


@functools.lru_cache(maxsize=1)
def other_stop_words() -> frozenset[str]:
    """Stop words of `_OTHER_LANGUAGES` that are no English stop words (spaCy's lists)."""
    import importlib

    from spacy.lang.en.stop_words import STOP_WORDS as ENGLISH

    words: set[str] = set()
    for language in _OTHER_LANGUAGES:
        words |= importlib.import_module(f"spacy.lang.{language}.stop_words").STOP_WORDS
    return frozenset(w.casefold() for w in words if len(w) > 1) - {w.casefold() for w in ENGLISH}


class PlausibleName:
    """Whether a phrase another detector calls a person can be a name at all.

    No: when it holds digits or markup, starts lower-case, is all acronyms, ends in a place or
    organisation word ('Victoria Station', 'Customer Support') or holds an organisation word
    ('La Administración'), starts with an article or a pronoun of another language ('Ihre
    Nachricht'), has no word the gazetteer knows (an English model's guess in another language:
    'Onderwerp', 'Cordiali'), names a street ('Rue Victor Hugo') or is made only of ordinary
    English words ('Deep Learning', 'Related Works', a lone 'Mark' or 'Will'); nouns that are
    popular names ('John', 'Victoria') count as names.
    """

    def __init__(self, vocabulary_model: str = DEFAULT_VOCABULARY_MODEL) -> None:
        self._gazetteer = load_gazetteer()
        self._ordinary = ordinary_words(vocabulary_model)
        words = load_name_words()
        self._places = frozenset(w.casefold() for w in words.place_words + words.organisation_words)
        self._organisations = frozenset(w.casefold() for w in words.organisation_words)
        self._function_words = frozenset(w.casefold() for w in words.function_words)
        self.reader = WordReader(words, vocabulary_model)
        self._streets = StreetWords(self.reader)

    def __call__(self, phrase: str, require_known: bool = True) -> bool:
        """`require_known=False` where the context already says "a person" (a list of
        attendees): a name the gazetteer lacks ('Oyelowo') passes the other checks alone, and
        ordinary words led by a common given name ('Dawn Fisher') are a name."""
        if _NOT_A_NAME.search(phrase):
            return False
        words = WORD.findall(phrase)
        if not words or not words[0][0].isupper():
            return False
        if all(len(w) > 1 and w.isupper() for w in words) or words[-1].casefold() in self._places:
            return False
        if words[0].casefold() in self._function_words:  # 'Ihre Nachricht', 'Guten Tag'
            return False
        if any(w.casefold() in self._organisations for w in words):  # 'La Administración ...'
            return False
        read = self.reader.words(phrase)
        if require_known and not any(w.known for w in read):  # 'Onderwerp', 'Lundi de Pâques'
            return False
        if self._streets.names_street(phrase, read):  # 'Rue Victor Hugo'
            return False
        if not all(self._is_ordinary(w) for w in words):
            return True
        # Where the context says "person": 'Dawn Fisher', 'Will Baker' (a given name first).
        return (not require_known and len(read) > 1 and read[0].first is not None
                and read[0].first <= COMMON_RANK)

    def _is_ordinary(self, word: str) -> bool:
        """A verb, adjective, adverb or stop word ('Mark', 'Will'), or a noun that is not a
        popular name ('Learning'; but not 'John' or 'Victoria')."""
        key = word.casefold()
        if self._ordinary.is_other(key):
            return True
        if not self._ordinary.is_noun(key):
            return False
        ranks = self._gazetteer.get(key)
        return ranks is None or min(ranks.first or MAX_RANK, ranks.last or MAX_RANK) > \
            NAME_NOUN_RANK


_NOT_A_NAME = regex.compile(r"[\d$\\_{}^=<>|@#]")
