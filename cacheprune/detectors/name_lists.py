"""Names listed after a label that lists people: minutes' attendees, mail headers, rosters.

'Present: R. Akande (chair), P. Oyelowo, Bunny Harcourt', 'Entschuldigt: Fuchs',
'出席者：山口（会長）、中村、渡辺 恵美', '참조: 오세준 팀장님; 남궁 윤서', 'CC：チョウ ミン; 金子'.
Other detectors find a name by its own look or by the words before it; in such a list only the
first item has those words, and short names in scripts without case ('中村', '金子') have
nothing else that marks them.

A line counts when it starts with one of the labels of rules/names.yaml (`list_labels`) and a
colon. Its items (split at commas, semicolons and '、') are names when, without a role in
brackets ('(chair)', '（会長）'), a title before it ('Mrs.', 'Dr'), an honorific ('팀장님',
'さん') or an address in angle brackets:
- in Han, kana or Hangul, they are one to eight letters with at most one space, and do not end
  in a word for a group ('마케팅팀', '総務部', '各位');
- otherwise they have at most five words, each capitalized or a particle, and no sentence's
  end (a transcript's 'Chair: Any concerns?' is a speaker's line), and pass `PlausibleName`
  without needing a word the gazetteer knows (the label says "person"): no digits, not all
  ordinary words ('Marketing', 'All staff'), no place or organisation word.
"""

from __future__ import annotations

from typing import Any

import regex

from cacheprune.detectors.base import Detector, Span
from cacheprune.detectors.name_candidates import PlausibleName
from cacheprune.detectors.name_words import DEFAULT_VOCABULARY_MODEL, load_name_words

ENTITY = "PERSON"
_UNSPACED_NAME = regex.compile(
    r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}ー・．\p{Lu}]{1,8}"
    r"(?:[ \t\u3000][\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}ー・．]{1,8})?")
_UNSPACED = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]")
_ITEM = regex.compile(r"[^,;、，；]+")
_MAX_NAME_WORDS = 5
# '?', '!', or a full stop after a word of two letters or more ('R.J.M.' and 'Jr.' are no end).
_SENTENCE_END = regex.compile(r"[?!？！]|(?<=\p{Ll}{2})\.(?![\p{L}])")
# What follows a name in an item: a role in brackets, an address in angle brackets, a full stop
# of a script without spaces.
_TRAILER = regex.compile(
    r"(?:[ \t\u3000]*(?:[(（][^()（）\n]{0,24}[)）]|<[^<>\n]{0,80}>|[。！？]))+$")


class NameListDetector(Detector):
    """Names in the items of a line led by a label that lists people."""

    def __init__(self, vocabulary_model: str = DEFAULT_VOCABULARY_MODEL,
                 name: str = "name_lists") -> None:
        self.name = name
        self.vocabulary_model = vocabulary_model
        words = load_name_words()
        labels = sorted(words.list_labels, key=len, reverse=True)
        self._line = regex.compile(
            r"(?m:^[ \t]*(?:[-*•][ \t]*)?(?i:" + "|".join(regex.escape(w) for w in labels)
            + r")[ \t]*[:：][ \t]*(?P<items>[^\n]+))")
        honorifics = sorted({*words.hangul_follow, *words.japanese_follow, *words.list_honorifics},
                            key=len, reverse=True)
        self._honorific = regex.compile(
            r"(?:[ \t]*(?:" + "|".join(regex.escape(w) for w in honorifics) + r"))+$")
        self._title = regex.compile(
            r"^(?:(?i:" + "|".join(regex.escape(w) for w in sorted(words.titles, key=len,
                                                                   reverse=True))
            + r")\.?[ \t]+)+(?=\p{Lu})")
        self._groups = tuple(words.list_group_suffixes)
        self._plausible = PlausibleName(vocabulary_model)
        self._reader = self._plausible.reader

    def describe(self) -> dict[str, Any]:
        return {"vocabulary_model": self.vocabulary_model}

    def detect(self, text: str) -> list[Span]:
        spans = []
        for line in self._line.finditer(text):
            offset = line.start("items")
            names = [(offset + item.start() + found[0], offset + item.start() + found[1], alone)
                     for item in _ITEM.finditer(line.group("items"))
                     if (found := self._name_in(item.group())) is not None
                     for alone in [found[2]]]
            # A lone word that is also a noun ('Sales' in 'Cc: Legal, Finance, Sales') is a
            # name only beside a name of the same list that is surely one.
            sure = any(not alone for _, _, alone in names)
            spans += [Span(ENTITY, start, end, 0.75, self.name)
                      for start, end, alone in names if sure or not alone]
        return spans

    def _name_in(self, item: str) -> tuple[int, int, bool] | None:
        """Where the name lies in a list item, and whether it is a lone word that is also an
        English noun; None when the item is no name."""
        end = len(item)
        trailer = _TRAILER.search(item)
        if trailer is not None:
            end = trailer.start()
        honorific = self._honorific.search(item, 0, end)
        if honorific is not None and honorific.start() > 0:
            end = honorific.start()
        stripped = item[:end].strip()
        if not stripped:
            return None
        start = item.index(stripped)
        end = start + len(stripped)
        title = self._title.match(stripped)
        if title is not None:  # 'Mrs. Jane Doe': the full stop ends a title, not a sentence
            start += title.end()
            stripped = stripped[title.end():]
        if _UNSPACED.search(stripped):
            if _UNSPACED_NAME.fullmatch(stripped) and not stripped.endswith(self._groups):
                return start, end, False
            return None
        words = self._reader.words(stripped)
        # A speaker's line ('Chair: Any concerns?', 'Chair: Then the river design it is.') is
        # no list: a name has at most five words and no sentence's end.
        if len(words) > _MAX_NAME_WORDS or _SENTENCE_END.search(stripped):
            return None
        if not all(w.capitalized or w.upper or w.particle or w.caseless for w in words):
            return None  # 'So the proposal is cork'
        if not self._plausible(stripped, require_known=False):
            return None
        return start, end, len(words) == 1 and (words[0].noun or words[0].ordinary)
