"""Personal names from a gazetteer of many countries, capitalization and context.

What makes a run of words a name here:
- two or more capitalized words, at least two of them known names and one of those not an
  ordinary English word ('Grant Wilson', 'Tanaka Hiroshi', 'Nguyễn Thị Minh Khai');
- any capitalized words after a title ('Mr. Okonkwo') or a name cue ('I'm Priya', 'Dear Kwame',
  'my name is ...'), or on the line after a sign-off ('Regards,' / 'Thanks,');
- a lower-case pair of known names after a relation word or cue ('my boss sarah o'connor');
- names in capitals ('JEAN-BAPTISTE MOREAU', 'SAMUEL J OKAFOR'), or a family name in capitals
  before the given name ('ZHANG Wei', 'LI Jianhua');
- a line of capitalized words or initials under a sign-off ('Mit freundlichen Grüßen\nJ. Weiß');
- known names joined by 'and' or a comma to a name found ('Will Grant and Summer Rose');
- Chinese, Korean and Japanese: a common family name and a given name, then a word that follows
  people (name_scripts.py).
Particles ('van der', 'de la', 'bin', 'Al-'), hyphens and apostrophes stay inside the name.
A lone ordinary word that is also a name ('May', 'Will', 'Grant') is masked only with a cue, and
a run ending in a place word ('Victoria Station', 'Lincoln Park') is no person.
"""

from __future__ import annotations

import itertools
from typing import Any, ClassVar

import regex

from cacheprune.detectors.base import Detector, Span
from cacheprune.detectors.name_candidates import other_stop_words
from cacheprune.detectors.name_gazetteer import COMMON_RANK, MAX_RANK, table_name
from cacheprune.detectors.name_islands import NameIslands
from cacheprune.detectors.name_said import names_before_said
from cacheprune.detectors.name_scripts import (
    LabelledScriptNames,
    script_name_pattern,
    thai_name_pattern,
)
from cacheprune.detectors.name_streets import StreetWords
from cacheprune.detectors.name_tokens import NameWord, WordReader
from cacheprune.detectors.name_words import (
    DEFAULT_VOCABULARY_MODEL,
    NameWordsSpec,
    load_name_words,
    ordinary_words,
)

ENTITY = "PERSON"
# Between two words of one name: spaces, or the period and space after an initial.
_GAP = regex.compile(r"[ \t\u00a0]{1,2}|\.[ \t]|\.-")
# Words joined to a name found ('Will Grant and Summer Rose', 'Raj, Mei-Ling and Jack Rose').
_COORDINATION = regex.compile(r",?[ \t]+(?:and|&|or|y|et|und|e|en|og|och|i|ve|и)[ \t]+|,[ \t]*")
# Where an item of a list or a record starts: a line, a cell, a quote, a header's colon.
_ITEM_START = regex.compile(r"(?:^|[;:\"(<\[|\t]|>,)[ \t]*$", regex.MULTILINE)
# Articles and prepositions between a cue and a name in chats ('frag mal den ole').
_CUE_ARTICLES = r"der|dem|den|die|la|el|al|a|à|au|o|pro|pra|ao|a la|à la"
# A lone capitalized word mid-sentence is a name without a cue when it is a given name this
# popular somewhere ('Yesterday Priya asked') and no English word at all.
_LONE_NAME_RANK = 300
# Longer runs of words without letter case are sentences ('يرجى الاتصال بمركز خدمة العملاء').
_MAX_CASELESS_WORDS = 4
_CASELESS_AFTER_TITLE = 3


class NameDetector(Detector):
    """Names in many scripts and orders; scores >= 0.6 for names, below 0.5 never reported."""

    path_options: ClassVar[tuple[str, ...]] = ("words_file",)

    def __init__(self, words_file: str | None = None,
                 vocabulary_model: str = DEFAULT_VOCABULARY_MODEL, name: str = "names") -> None:
        self.name = name
        self.words_file = words_file
        self.vocabulary_model = vocabulary_model
        self.words: NameWordsSpec = load_name_words(words_file)
        self._reader = WordReader(self.words, vocabulary_model)
        self._titles = frozenset(t.casefold().rstrip(".") for t in self.words.titles)
        self._relations = frozenset(w.casefold() for w in self.words.relation_words)
        self._cue_words = frozenset(c.casefold() for c in self.words.name_cues if " " not in c)
        # A cue, an article of a chat's spoken language maybe ('sag mal der annika', 'dile a
        # la rosi', 'fala pro joão'), then the name.
        self._cue = _phrase_pattern(self.words.name_cues,
                                    rf"(?:[ \t]+(?:{_CUE_ARTICLES}))?[ \t]*[,:]?[ \t]*$")
        self._after_cue = _phrase_pattern(self.words.after_cues, r"(?!\w)", start=True) \
            if self.words.after_cues else None
        # A degree between a name and the word that says it spoke ('diane geisler b.a. says').
        self._degree = _phrase_pattern([d.rstrip(".") for d in self.words.post_nominals],
                                       r"\.?[ \t]+", start=True) \
            if self.words.post_nominals else None
        self._sign_off = _phrase_pattern(self.words.sign_offs, r"[ \t]*[,.!]?[ \t]*$", start=True)
        self._abbreviations = frozenset(a.casefold() for a in self.words.name_abbreviations)
        self._organisations = frozenset(w.casefold() for w in self.words.organisation_words)
        self._places = frozenset(w.casefold() for w in self.words.place_words) | self._organisations
        self._streets = StreetWords(self._reader)
        self._scripts = script_name_pattern(self.words)
        self._labelled = LabelledScriptNames(self.words)
        self._thai = thai_name_pattern(self.words)
        self._stop_words = ordinary_words(vocabulary_model).stop_words
        self._other_stop_words = other_stop_words()
        self._islands = NameIslands(self.words)

    def describe(self) -> dict[str, Any]:
        return {"words": self.words.model_dump(mode="json"), "gazetteer": table_name(),
                "vocabulary_model": self.vocabulary_model}

    def detect(self, text: str) -> list[Span]:
        words = self._reader.words(text)
        spans: list[Span] = []
        left_out: list[list[NameWord]] = []  # runs of known names not found on their own
        index = 0
        while index < len(words):
            end = self._run_end(text, words, index)
            found = self._score_run(text, words[index:end])
            if found is not None:
                start, stop, score = found
                spans.append(Span(ENTITY, start, stop, score, self.name))
            elif self._could_be_coordinated(words[index:end]):
                left_out.append(words[index:end])
            index = end
        spans.extend(self._family_comma_given(text, words))
        spans.extend(self._cued_lower_given(text, words))
        spans.extend(self._given_unlisted_family(text, words))
        if self._after_cue is not None:
            spans.extend(Span(ENTITY, start, end, 0.7, self.name) for start, end in
                         names_before_said(text, words, lambda at: self._says_at(text, at),
                                           self._stop_words.__contains__,
                                           lambda key: key.rstrip(".") in self._titles))
        spans.extend(self._coordinated(text, spans, left_out))
        spans.extend(Span(ENTITY, m.start("name"), m.end("name"), 0.7, self.name)
                     for m in self._scripts.finditer(text))
        spans.extend(Span(ENTITY, start, end, 0.7, self.name)
                     for start, end in self._labelled.find(text))
        spans.extend(Span(ENTITY, m.start("name"), m.end("name"), 0.7, self.name)
                     for m in self._thai.finditer(text))
        spans.extend(Span(ENTITY, start, end, 0.65, self.name)
                     for start, end in self._islands.find(text))
        return list(dict.fromkeys(spans))

    def _says_at(self, text: str, at: int) -> bool:
        """A word that says a person spoke starts at `at`, or a degree and then such a word."""
        assert self._after_cue is not None
        if self._after_cue.match(text[at:at + 20]):
            return True
        degree = self._degree.match(text[at:at + 20]) if self._degree is not None else None
        if degree is None:
            return False
        cue = at + degree.end()
        return bool(self._after_cue.match(text[cue:cue + 20]))

    @staticmethod
    def _could_be_coordinated(run: list[NameWord]) -> bool:
        """Common names of two letters or more; a lone one popular as a given name."""
        if not (run[0].capitalized or run[0].upper) or any(w.end - w.start < 2 for w in run):
            return False
        if not all(w.particle or min(w.first or MAX_RANK, w.last or MAX_RANK) <= COMMON_RANK
                   for w in run):
            return False
        return len(run) > 1 or run[0].strong or (run[0].first or MAX_RANK) <= COMMON_RANK

    def _coordinated(self, text: str, spans: list[Span], runs: list[list[NameWord]]) -> list[Span]:
        """Runs of known names next to a name found, joined by 'and' or a comma."""
        found: list[Span] = []
        edges = {(s.start, s.end) for s in spans}
        changed = True
        while changed and runs:
            changed = False
            for run in list(runs):
                start, end = run[0].start, run[-1].end
                if self._is_place(text, run[-1]):
                    runs.remove(run)
                    continue
                if any(_COORDINATION.fullmatch(text[a_end:start]) or
                       _COORDINATION.fullmatch(text[end:a_start]) for a_start, a_end in edges):
                    found.append(Span(ENTITY, start, end, 0.7, self.name))
                    edges.add((start, end))
                    runs.remove(run)
                    changed = True
        return found

    def _family_comma_given(self, text: str, words: list[NameWord]) -> list[Span]:
        """'O'Neill, Patrick', 'Nakamura, Yuki': a family name, a comma, a given name; a family
        name that is also a word where the pair is an item of its own, at a line's or a list's
        start ('Cc: Winter, Ingrid', '"NGUYEN, BAO"', 'WINTER, Eleanor Mary (née Hope)')."""
        found = []
        for family, given in zip(words, words[1:], strict=False):
            if text[family.end:given.start] != ", " or family.last is None or \
                    given.first is None or given.first > COMMON_RANK:
                continue
            if (family.capitalized and given.capitalized and family.strong and given.strong) or (
                    (family.capitalized or family.upper) and (given.capitalized or given.upper)
                    and _ITEM_START.search(text, max(0, family.start - 12), family.start)):
                found.append(Span(ENTITY, family.start, given.end, 0.7, self.name))
        return found

    def _cued_lower_given(self, text: str, words: list[NameWord]) -> list[Span]:
        """'tell kemi i said hi', 'dile a guille que...', 'frag mal den ole': a popular given
        name in lower case right after a cue, which no word list of any language knows as
        another word ('que', 'mal' and 'oye' are names in the gazetteer too)."""
        found = []
        for word in words:
            if not (word.lower and word.first is not None and word.first <= COMMON_RANK
                    and not word.noun and not word.ordinary and not word.particle
                    and word.end - word.start >= 3):
                continue
            if text[word.start:word.end].casefold() in self._other_stop_words:
                continue
            if self._cue.search(text, max(0, word.start - 40), word.start):
                found.append(Span(ENTITY, word.start, word.end, 0.7, self.name))
        return found

    def _given_unlisted_family(self, text: str, words: list[NameWord]) -> list[Span]:
        """'francesca zanforlin says': a popular given name, a lower-case word in no list (no
        English word either), then a word that follows people."""
        if self._after_cue is None:
            return []
        found = []
        for given, family in zip(words, words[1:], strict=False):
            if (given.lower and given.strong and given.first is not None
                    and given.first <= COMMON_RANK and not given.noun and family.lower
                    and not family.known and not family.ordinary and not family.noun
                    and family.end - family.start >= 3 and text[given.end:family.start] == " "
                    and self._after_cue.match(text[family.end:family.end + 20])):
                found.append(Span(ENTITY, given.start, family.end, 0.7, self.name))
        return found

    def _run_end(self, text: str, words: list[NameWord], index: int) -> int:
        """Words joined by name gaps: capitalized words and particles, or lower-case names."""
        head = words[index]
        if not (head.capitalized or head.upper) and not (head.lower and head.strong):
            return index + 1
        end = index + 1
        while end < len(words):
            previous, word = words[end - 1], words[end]
            gap = text[previous.end:word.start]
            if not _GAP.fullmatch(gap) or (gap.startswith(".") and previous.end - previous.start
                                          > 1 and text[previous.start:previous.end].casefold()
                                          not in self._abbreviations):
                break
            initial = word.end - word.start == 1
            if head.upper and not (word.upper or word.capitalized or word.particle):
                break
            if head.capitalized and not (word.capitalized or word.particle):
                break
            if head.caseless and word.caseless and \
                    text[word.start:word.end].casefold() in self._titles:
                break  # 'श्रीमती सविता एवं | श्री राजेंद्र ...': a title starts another name
            after_initial = previous.end - previous.start == 1 and word.known
            # 'jan de gruijter-elbertse': a family name after a particle may be in no list
            after_particle = previous.particle and not word.ordinary and not word.particle
            if head.lower and not (word.lower and (word.strong or word.particle or initial
                                                   or after_initial or after_particle)):
                break
            end += 1
        return end

    def _score_run(self, text: str, run: list[NameWord]) -> tuple[int, int, float] | None:
        while run and run[-1].particle and not (run[-1].capitalized and run[-1].strong):
            run = run[:-1]
        street = bool(run) and self._streets.names_street(text, run)  # before a type is trimmed
        # A greeting, cue or sentence-initial ordinary word before the name is not part of it.
        while run and ((run[0].particle and not run[0].capitalized)
                       or self._is_cue_word(text, run[0])
                       or (run[0].ordinary and (run[0].first or MAX_RANK) > COMMON_RANK
                           and not _is_initial(text, run[0]))):
            run = run[1:]
        if not run:
            return None
        names = [w for w in run if not w.particle or w.strong]
        if not names:
            return None
        start, end = run[0].start, run[-1].end
        before = text[max(0, start - 40):start]
        if any(text[w.start:w.end].casefold() in self._organisations for w in run):
            return None  # 'Brightline Customer Support', 'Amtsgericht Ulm'
        if (self._is_place(text, run[-1]) or street) and not (
                self._after_title(before) or self._after_sign_off(text, start)):
            return None
        if run[0].upper:
            return self._score_upper(text, names, start, end, before)
        if all(w.caseless for w in names):
            return self._score_caseless(text, names, start, end, before)
        if run[0].capitalized:
            return self._score_capitalized(text, names, start, end, before)
        if any(text[w.start:w.end].casefold() in self._other_stop_words for w in run):
            return None  # 'dile que venga': "que" is a name in the gazetteer too
        return self._score_lower(run, start, end, before, text[end:end + 20])

    def _is_place(self, text: str, word: NameWord) -> bool:
        return text[word.start:word.end].casefold() in self._places

    def _score_upper(self, text: str, names: list[NameWord], start: int, end: int,
                     before: str) -> tuple[int, int, float] | None:
        """'JEAN-BAPTISTE MOREAU', 'SAMUEL J OKAFOR' (never one word: acronyms), 'ZHANG Wei'."""
        letters = [w for w in names if w.end - w.start > 1]
        if any(self._is_place(text, w) for w in letters):
            return None
        num_strong = sum(w.strong for w in letters)
        cued = bool(self._cue.search(before)) or self._after_title(before)
        # Capitals are also headings and shouting: every word must be a name, none ordinary.
        if len(letters) >= 2 and not any(w.ordinary for w in letters) and (
                num_strong >= 2 or cued and num_strong >= 1):
            return start, end, 0.8
        given = [w for w in letters[1:] if not w.upper]
        if (names[0].last or MAX_RANK) <= COMMON_RANK and 1 <= len(given) <= 2 and all(
                w.strong for w in given):
            return start, end, 0.75  # family name in capitals first
        return None

    def _score_caseless(self, text: str, names: list[NameWord], start: int, end: int,
                        before: str) -> tuple[int, int, float] | None:
        """Words of a script without case all read as capitalized, so a whole sentence is one
        run: a name there needs a title, a cue or a sign-off, or two names the gazetteer knows,
        and is at most `_MAX_CASELESS_WORDS` words ('محمد بن عبد الله', not a sentence)."""
        titled = [i for i, w in enumerate(names[:-1])
                  if text[w.start:w.end].casefold() in self._titles]
        if self._after_title(before) or titled:
            # 'श्री राजेश कुमार शर्मा ने फॉर्म भरा': the words after the title, not the sentence
            given = names[titled[0] + 1:] if titled else names
            # Three words, and a fourth the gazetteer knows ('خالد عبد الرحمن الزعبي'), up to a
            # function word ('الأستاذة نورة الشهري في': "in" ends the name).
            given = given[:_CASELESS_AFTER_TITLE] + list(itertools.takewhile(
                lambda w: w.known, given[_CASELESS_AFTER_TITLE:_CASELESS_AFTER_TITLE + 1]))
            given = list(itertools.takewhile(lambda w: not w.ordinary, given))
            return (given[0].start, given[-1].end, 0.8) if given else None
        if len(names) > _MAX_CASELESS_WORDS:
            return None
        if self._after_sign_off(text, start):
            return start, end, 0.8
        if self._cue.search(before) and sum(w.known for w in names) >= 1:
            return start, end, 0.7
        if sum(w.strong for w in names) >= 2:
            return start, end, 0.85
        return None

    def _score_capitalized(self, text: str, names: list[NameWord], start: int, end: int,
                           before: str) -> tuple[int, int, float] | None:
        num_known = sum(w.known for w in names)
        num_strong = sum(w.strong for w in names)
        after_title = self._after_title(before)
        signed = self._after_sign_off(text, start)
        cued = bool(self._cue.search(before)) or signed
        if after_title and not (_after_initial_title(before) and all(w.ordinary for w in names)):
            return start, end, 0.9  # not 'Size M. The shirt': a letter is a title before a name
        if signed and len(names) <= 4 and _ends_line(text, end):
            return start, end, 0.8  # the whole line under 'Regards,': the writer's name
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

    def _score_lower(self, run: list[NameWord], start: int, end: int, before: str,
                     after: str) -> tuple[int, int, float] | None:
        if self._after_cue is not None and self._after_cue.match(after) and _lower_pair(run):
            return start, end, 0.7  # 'anna kowalski says', 'jan de vries here'
        names = [w for w in run if (not w.particle or w.strong) and w.end - w.start > 1]
        if not (names and names[0].strong and all(w.known for w in names)):
            return None
        if self._after_title(before) and names[-1].last is not None:
            return start, end, 0.75  # 'herr müller', 'pani anna nowak'
        if len(names) == 1:
            # 'hi, i'm marco', 'thanks john': a popular given name right after a cue.
            lone = names[0]
            popular = lone.first is not None and lone.first <= COMMON_RANK and not lone.noun
            return (lone.start, lone.end, 0.7) if popular and self._cue.search(before) else None
        if names[0].first is None or names[0].first > COMMON_RANK or names[-1].last is None \
                or any(w.ordinary for w in names):  # 'kemi i said': "said" is a verb too
            return None
        previous = before.split()[-1:] or [""]
        if previous[0].casefold().strip(",:") in self._relations or self._cue.search(before):
            return start, end, 0.7
        return None

    def _is_cue_word(self, text: str, word: NameWord) -> bool:
        key = text[word.start:word.end].casefold().replace("’", "'")
        return key.rstrip(".") in self._titles or key in self._cue_words

    def _after_title(self, before: str) -> bool:
        # Marks too: Devanagari titles are letters with vowel signs ('श्री').
        match = regex.search(r"([\p{L}\p{M}]+(?:\.\p{L}+)?)\.?[ \t]$", before)
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


def _lower_pair(run: list[NameWord]) -> bool:
    """A known given name, then a known family name or particles and a word in no list."""
    given, rest = run[0], run[1:]
    if not (given.strong and given.first is not None and rest):
        return False
    family = rest[-1]
    if family.particle or family.ordinary or family.end - family.start < 2:
        return False
    return family.last is not None or (len(rest) >= 2 and rest[-2].particle)


def _is_initial(text: str, word: NameWord) -> bool:
    """'J.' in 'J. Weißmüller', 'A.-S.': one letter and a period."""
    return word.end - word.start == 1 and text[word.end:word.end + 1] == "."


def _ends_line(text: str, end: int) -> bool:
    rest = text[end:text.find("\n", end) if "\n" in text[end:] else len(text)]
    return not rest.strip(" \t.,;!")


def _sentence_start(before: str) -> bool:
    stripped = before.rstrip(" \t")
    return not stripped or stripped[-1] in ".!?\n:\"'“"


def _after_initial_title(before: str) -> bool:
    """The title right before is a single letter ('M. Rousseau', French for Monsieur)."""
    return regex.search(r"(?<![\p{L}\p{M}.])\p{L}\.[ \t]$", before) is not None


def _phrase_pattern(phrases: list[str], tail: str, start: bool = False) -> regex.Pattern[str]:
    escaped = sorted((r"[ \t]+".join(regex.escape(p) for p in phrase.split())
                      for phrase in phrases), key=len, reverse=True)
    head = r"^[ \t]*" if start else r"(?<!\w)"
    return regex.compile(rf"{head}(?:{'|'.join(escaped)}){tail}", regex.IGNORECASE)
