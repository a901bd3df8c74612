"""Personal names from a gazetteer of many countries, capitalization and context.

What makes a run of words a name here:
- two or more capitalized words, at least two of them known names and one of those not an
  ordinary English word ('Grant Wilson', 'Tanaka Hiroshi', 'Nguyễn Thị Minh Khai');
- any capitalized words after a title ('Mr. Okonkwo') or a name cue ('I'm Priya', 'Dear Kwame',
  'my name is ...'), or on the line after a sign-off ('Regards,' / 'Thanks,');
- a lower-case pair of known names after a relation word or cue ('my boss sarah o'connor');
- Han script: a common family name and one or two characters, then a word that follows people.
Particles ('van der', 'de la', 'bin', 'Al-'), hyphens and apostrophes stay inside the name.
A lone ordinary word that is also a name ('May', 'Will', 'Grant') is masked only with a cue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import regex

from cacheprune.detectors.base import Detector, Span
from cacheprune.detectors.name_gazetteer import COMMON_RANK, MAX_RANK, load_gazetteer, table_name
from cacheprune.detectors.name_words import (
    DEFAULT_VOCABULARY_MODEL,
    NameWordsSpec,
    load_name_words,
    ordinary_words,
)

ENTITY = "PERSON"
_LETTERS = r"[^\W\d_\p{Han}\p{Hiragana}\p{Katakana}]"
WORD = regex.compile(rf"{_LETTERS}+(?:['’\-]{_LETTERS}+)*")
# Between two words of one name: spaces, or the period and space after an initial.
_GAP = regex.compile(r"[ \t\u00a0]{1,2}|\.[ \t]")
_SURNAME_PREFIX = regex.compile(r"^(?:o['’]|d['’]|mc|mac|fitz)(?=\p{L})", regex.IGNORECASE)
# A noun this popular as a name counts as a name (John, Wilson, Victoria); less popular nouns
# ('data', 'york') count as ordinary words.
NAME_NOUN_RANK = 100
# A lone capitalized word mid-sentence is a name without a cue when it is a given name this
# popular somewhere ('Yesterday Priya asked') and no English word at all.
_LONE_NAME_RANK = 300


@dataclass(slots=True)
class _Word:
    start: int
    end: int
    capitalized: bool
    lower: bool
    first: int | None
    last: int | None
    ordinary: bool
    noun: bool  # also an English noun ('Adam', 'Victoria'): a lone one needs a cue
    particle: bool

    @property
    def known(self) -> bool:
        return self.first is not None or self.last is not None

    @property
    def strong(self) -> bool:
        return self.known and not self.ordinary


class NameDetector(Detector):
    """Names in many scripts and orders; scores >= 0.6 for names, below 0.5 never reported."""

    path_options: ClassVar[tuple[str, ...]] = ("words_file",)

    def __init__(self, words_file: str | None = None,
                 vocabulary_model: str = DEFAULT_VOCABULARY_MODEL, name: str = "names") -> None:
        self.name = name
        self.words_file = words_file
        self.vocabulary_model = vocabulary_model
        self.words: NameWordsSpec = load_name_words(words_file)
        self._gazetteer = load_gazetteer()
        self._ordinary = ordinary_words(vocabulary_model)
        self._titles = frozenset(t.casefold().rstrip(".") for t in self.words.titles)
        self._particles = frozenset(p.casefold() for p in self.words.particles)
        self._relations = frozenset(w.casefold() for w in self.words.relation_words)
        self._cue_words = frozenset(c.casefold() for c in self.words.name_cues if " " not in c)
        self._cue = _phrase_pattern(self.words.name_cues, r"[ \t]*[,:]?[ \t]*$")
        self._sign_off = _phrase_pattern(self.words.sign_offs, r"[ \t]*[,.!]?[ \t]*$", start=True)
        self._han = _han_pattern(self.words)

    def describe(self) -> dict[str, Any]:
        return {"words": self.words.model_dump(mode="json"), "gazetteer": table_name(),
                "vocabulary_model": self.vocabulary_model}

    def detect(self, text: str) -> list[Span]:
        words = [self._word(text, m.start(), m.end()) for m in WORD.finditer(text)]
        spans: list[Span] = []
        index = 0
        while index < len(words):
            end = self._run_end(text, words, index)
            found = self._score_run(text, words[index:end])
            if found is not None:
                start, stop, score = found
                spans.append(Span(ENTITY, start, stop, score, self.name))
            index = end
        spans.extend(self._family_comma_given(text, words))
        spans.extend(Span(ENTITY, m.start("name"), m.end("name"), 0.7, self.name)
                     for m in self._han.finditer(text))
        return spans

    def _family_comma_given(self, text: str, words: list[_Word]) -> list[Span]:
        """'O'Neill, Patrick', 'Nakamura, Yuki': a family name, a comma, a given name."""
        found = []
        for family, given in zip(words, words[1:], strict=False):
            if (text[family.end:given.start] == ", " and family.capitalized and given.capitalized
                    and family.strong and given.strong and family.last is not None
                    and given.first is not None and given.first <= COMMON_RANK):
                found.append(Span(ENTITY, family.start, given.end, 0.7, self.name))
        return found

    def _word(self, text: str, start: int, end: int) -> _Word:
        token = text[start:end]
        key = token.casefold().replace("’", "'")
        if key.endswith("'s"):
            key = key[:-2]
        first, last = self._ranks(key)
        # O'Brien, McAllister, D'Angelo: surname-shaped, never an ordinary word
        surname_shaped = bool(_SURNAME_PREFIX.match(key)) and token[-1].islower()
        if first is None and last is None and surname_shaped:
            last = COMMON_RANK
        return _Word(
            start, end,
            capitalized=token[0].isupper() and not (len(token) > 1 and token.isupper())
            or not (token[0].isupper() or token[0].islower()),  # scripts without case
            lower=token.islower(),
            first=first, last=last,
            ordinary=not surname_shaped and self._is_ordinary(key, first, last),
            noun=self._ordinary.is_noun(key),
            particle=key in self._particles,
        )

    def _ranks(self, key: str) -> tuple[int | None, int | None]:
        ranks = self._gazetteer.get(key)
        if ranks is not None:
            return ranks.first, ranks.last
        parts = [p for p in regex.split(r"[-']", key) if len(p) > 1]
        if len(parts) < 2:
            return None, None
        found = [self._gazetteer[p] for p in parts if p in self._gazetteer]
        firsts = [r.first for r in found if r.first is not None]
        lasts = [r.last for r in found if r.last is not None]
        return min(firsts, default=None), min(lasts, default=None)

    def _is_ordinary(self, key: str, first: int | None, last: int | None) -> bool:
        parts = [p for p in regex.split(r"[-']", key) if p] or [key]
        popular = min(first or MAX_RANK + 1, last or MAX_RANK + 1) <= NAME_NOUN_RANK
        return all(self._ordinary.is_other(p) or (self._ordinary.is_noun(p) and not popular)
                   for p in parts)

    def _run_end(self, text: str, words: list[_Word], index: int) -> int:
        """Words joined by name gaps: capitalized words and particles, or lower-case names."""
        head = words[index]
        if not head.capitalized and not (head.lower and head.strong):
            return index + 1
        end = index + 1
        while end < len(words):
            previous, word = words[end - 1], words[end]
            gap = text[previous.end:word.start]
            if not _GAP.fullmatch(gap) or (gap.startswith(".") and previous.end - previous.start
                                          > 1):
                break
            if head.capitalized and not (word.capitalized or word.particle):
                break
            if not head.capitalized and not (word.lower and (word.strong or word.particle)):
                break
            end += 1
        return end

    def _score_run(self, text: str, run: list[_Word]) -> tuple[int, int, float] | None:
        while run and run[-1].particle and not (run[-1].capitalized and run[-1].strong):
            run = run[:-1]
        # A greeting, cue or sentence-initial ordinary word before the name is not part of it.
        while run and ((run[0].particle and not run[0].capitalized)
                       or self._is_cue_word(text, run[0])
                       or (run[0].ordinary and (run[0].first or MAX_RANK) > COMMON_RANK)):
            run = run[1:]
        if not run:
            return None
        names = [w for w in run if not w.particle or w.strong]
        if not names:
            return None
        start, end = run[0].start, run[-1].end
        before = text[max(0, start - 40):start]
        if run[0].capitalized:
            return self._score_capitalized(text, names, start, end, before)
        return self._score_lower(names, start, end, before)

    def _score_capitalized(self, text: str, names: list[_Word], start: int, end: int,
                           before: str) -> tuple[int, int, float] | None:
        num_known = sum(w.known for w in names)
        num_strong = sum(w.strong for w in names)
        after_title = self._after_title(before)
        cued = bool(self._cue.search(before)) or self._after_sign_off(text, start)
        if after_title:
            return start, end, 0.9
        if len(names) >= 2 and num_strong >= 1 and num_known >= 2:
            return start, end, 0.85
        if cued and (num_strong >= 1 or (num_known >= 1 and len(names) >= 2)):
            return start, end, 0.8
        if cued and num_known >= 1 and not _sentence_start(before):
            return start, end, 0.7  # 'ask Bill', 'I'm Will': a cue and a capital mid-sentence
        if len(names) >= 2 and num_strong >= 1 and all(w.strong or not w.ordinary
                                                     for w in names):
            return start, end, 0.6  # a known name with a capitalized unknown word
        lone = names[0]
        if (len(names) == 1 and lone.strong and not lone.noun and lone.first is not None
                and lone.first <= _LONE_NAME_RANK and not _sentence_start(before)):
            return start, end, 0.6  # a popular given name, capitalized mid-sentence
        return None

    def _score_lower(self, names: list[_Word], start: int, end: int,
                     before: str) -> tuple[int, int, float] | None:
        if not all(w.strong for w in names):
            return None
        if len(names) == 1:
            # 'hi, i'm marco', 'thanks john': a popular given name right after a cue.
            lone = names[0]
            popular = lone.first is not None and lone.first <= COMMON_RANK and not lone.noun
            return (start, end, 0.7) if popular and self._cue.search(before) else None
        if names[0].first is None or names[0].first > COMMON_RANK or names[-1].last is None:
            return None
        previous = before.split()[-1:] or [""]
        if previous[0].casefold().strip(",:") in self._relations or self._cue.search(before):
            return start, end, 0.7
        return None

    def _is_cue_word(self, text: str, word: _Word) -> bool:
        key = text[word.start:word.end].casefold().replace("’", "'")
        return key.rstrip(".") in self._titles or key in self._cue_words

    def _after_title(self, before: str) -> bool:
        match = regex.search(r"(\p{L}+(?:\.\p{L}+)?)\.?[ \t]$", before)
        return match is not None and match.group(1).casefold() in self._titles

    def _after_sign_off(self, text: str, start: int) -> bool:
        line_start = text.rfind("\n", 0, start) + 1
        if text[line_start:start].strip():
            return False
        previous_end = line_start - 1
        if previous_end < 0:
            return False
        previous_start = text.rfind("\n", 0, previous_end) + 1
        return bool(self._sign_off.search(text[previous_start:previous_end]))


def _sentence_start(before: str) -> bool:
    stripped = before.rstrip(" \t")
    return not stripped or stripped[-1] in ".!?\n:\"'“"


def _phrase_pattern(phrases: list[str], tail: str, start: bool = False) -> regex.Pattern[str]:
    escaped = sorted((r"[ \t]+".join(regex.escape(p) for p in phrase.split())
                      for phrase in phrases), key=len, reverse=True)
    head = r"^[ \t]*" if start else r"(?<!\w)"
    return regex.compile(rf"{head}(?:{'|'.join(escaped)}){tail}", regex.IGNORECASE)


def _han_pattern(words: NameWordsSpec) -> regex.Pattern[str]:
    if not words.han_family_names:
        return regex.compile(r"(?!)(?P<name>)")
    family = "|".join(regex.escape(f) for f in sorted(words.han_family_names, key=len,
                                                      reverse=True))
    follow = "|".join(regex.escape(f) for f in sorted(words.han_follow, key=len, reverse=True))
    cues = "|".join(regex.escape(c) for c in sorted(words.han_cues, key=len, reverse=True))
    boundary = rf"(?:(?<!\p{{Han}})|(?<={cues}))" if cues else r"(?<!\p{Han})"
    # Two given-name characters when the word after them fits, else one.
    return regex.compile(
        rf"{boundary}(?P<name>(?:{family})(?:\p{{Han}}{{2}}(?=(?:{follow}))|\p{{Han}}(?=(?:{follow}))))"
    )

