"""Names in another script set inside Latin-script text: 'ask 鈴木 香織 about it', '[note: 林 晃
says', 'Reminder: अवन्ती चोधरी (id ...)', 'ask محمد العلي'.

In an English message, a short run of words in a script without capital letters, with Latin
words on both sides, is nearly always a name (the gazetteer holds names in Latin, Cyrillic and
Greek letters, so it cannot vouch for these). Chinese, Japanese and Korean runs must also start
with a common family name from rules/names.yaml, since a quoted term is common there too; other
runs must hold no stop word of their language ('رقم التحقق غير صحيح' says "not": a phrase).
"""

from __future__ import annotations

import regex

from cacheprune.detectors.name_words import NameWordsSpec, caseless_stop_words

# Scripts written without letter case whose names the gazetteer does not hold.
_CASELESS = (r"[\p{Devanagari}\p{Bengali}\p{Gurmukhi}\p{Gujarati}\p{Oriya}\p{Tamil}\p{Telugu}"
             r"\p{Kannada}\p{Malayalam}\p{Sinhala}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}\p{Arabic}"
             r"\p{Hebrew}\p{Ethiopic}\p{Georgian}\p{Armenian}\p{M}]")
_CJK = r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}ー々]"
# What may stand between the island and the Latin word next to it: spaces, punctuation, an
# opening bracket or a number ('Dr. 林 晃', '(id 123) ', ': ').
_BETWEEN = r"[\s\p{P}\p{S}\d]{0,12}"


def _latin_on_both_sides(text: str, start: int, end: int) -> bool:
    before = regex.search(rf"(\p{{L}}){_BETWEEN}$", text[max(0, start - 13):start])
    after = regex.match(rf"{_BETWEEN}(\p{{L}})", text[end:end + 13])
    before_ok = before is not None and regex.match(r"\p{Latin}", before.group(1)) is not None \
        or not text[:start].strip()
    after_ok = after is not None and regex.match(r"\p{Latin}", after.group(1)) is not None \
        or not text[end:].strip(" \t.,;:!?)]}\n")
    return before_ok and after_ok


class NameIslands:
    """Finds the islands; `find(text)` gives [start, end) of each name."""

    def __init__(self, words: NameWordsSpec) -> None:
        families = sorted({*words.han_family_names, *words.japanese_family_names,
                           *words.hangul_family_names}, key=len, reverse=True)
        family = "|".join(regex.escape(f) for f in families) or "(?!)"
        self._caseless = regex.compile(
            rf"(?<!{_CASELESS}[ \t]?){_CASELESS}+(?:[ \t]{_CASELESS}+){{1,3}}(?![ \t]?{_CASELESS})")
        self._stop_words = caseless_stop_words()
        self._cjk = regex.compile(
            rf"(?<!{_CJK}[ \t]?)(?:{family})[ \t]?{_CJK}{{1,3}}(?![ \t]?{_CJK})")

    def find(self, text: str) -> list[tuple[int, int]]:
        found = [(m.start(), m.end()) for m in self._caseless.finditer(text)
                 if not any(w in self._stop_words for w in m.group().split())]
        found += [(m.start(), m.end()) for m in self._cjk.finditer(text)]
        return [(start, end) for start, end in found if _latin_on_both_sides(text, start, end)]
