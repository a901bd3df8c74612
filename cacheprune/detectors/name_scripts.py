"""Names in scripts written without spaces: a family name from a list, then a given name, then
a word that follows people (an honorific, 'I am') or a cue before it.

Chinese ('王伟先生'), Korean ('김민준입니다') and Japanese ('佐々木 美咲です'); Thai names after a
title written against them ('นายสมศักดิ์ ศรีสุวรรณ'). The lists are in rules/names.yaml; a family
name alone is too common a syllable or character to go by.
"""

from __future__ import annotations

import regex

from cacheprune.detectors.name_words import NameWordsSpec


def _alternation(words: list[str]) -> str:
    return "|".join(regex.escape(w) for w in sorted(words, key=len, reverse=True))


def _pattern(family: list[str], follow: list[str], cues: list[str], given: str,
             before: str) -> str | None:
    if not family or not follow:
        return None
    boundary = rf"(?:(?<!{before})|(?<=(?:{_alternation(cues)})[ \t]?))" if cues else \
        rf"(?<!{before})"
    name = rf"(?P<name>(?:{_alternation(family)}){given})"
    return rf"{boundary}{name}(?=[ \t]?(?:{_alternation(follow)}))"


def script_name_pattern(words: NameWordsSpec) -> regex.Pattern[str]:
    """One pattern for the Chinese, Korean and Japanese names the word lists describe."""
    patterns = [
        # Two given-name characters when the word after them fits, else one.
        _pattern(words.han_family_names, words.han_follow, words.han_cues,
                 r"(?:\p{Han}{2}(?=(?:" + _alternation(words.han_follow or ["(?!)"]) +
                 r"))|\p{Han})", r"\p{Han}"),
        _pattern(words.hangul_family_names, words.hangul_follow, words.hangul_cues,
                 r"\p{Hangul}{1,2}", r"\p{Hangul}"),
        _pattern(words.japanese_family_names, words.japanese_follow, words.japanese_cues,
                 r"[ \t]?[\p{Han}\p{Hiragana}\p{Katakana}ー]{1,4}?", r"[\p{Han}\p{Hiragana}"
                 r"\p{Katakana}]"),
    ]
    kept = [f"(?:{p})" for p in patterns if p is not None]
    return regex.compile("|".join(kept) if kept else r"(?!)(?P<name>)")


# Particles and words that may follow a name where its script goes on ('김도윤이', '佐々木が').
_HANGUL_AFTER = r"(?:이|가|은|는|을|를|의|에게|께서|님|씨|과|와|랑|이랑|도)(?!\p{Hangul})"
_JAPANESE_AFTER = r"(?:は|が|の|を|に|と|も|へ|より|から)"
# Between the names listed after one label: '新郎父母：王建国 李秀兰', '박영철 · 김미숙'.
_LIST_GAP = r"[ \t\u3000]*(?:[、，,·・&/]|和|与|與|及|및)?[ \t\u3000]*"


class LabelledScriptNames:
    """Chinese, Korean and Japanese names right after a word that says "this person"
    (`han_labels`, `hangul_labels`, `japanese_labels` of rules/names.yaml), and the names
    listed after them: a family name from the lists, a given name, then the end of the
    script's run ('新郎 王浩然 &', '운전자 김도윤)', '故人 佐々木 清（')."""

    def __init__(self, words: NameWordsSpec) -> None:
        japanese = r"\p{Han}\p{Hiragana}\p{Katakana}ー"
        scripts = [
            (words.han_labels, words.han_family_names,
             r"\p{Han}{1,2}(?!\p{Han})"),
            (words.hangul_labels, words.hangul_family_names,
             rf"\p{{Hangul}}{{1,2}}(?=$|[^\p{{Hangul}}]|{_HANGUL_AFTER})"),
            # The given name after a space, or in kanji; a family name alone too ('院長 山本').
            (words.japanese_labels, words.japanese_family_names,
             rf"(?:[ \t\u3000][{japanese}]{{1,4}}|\p{{Han}}{{1,3}})?"
             rf"(?=$|[^{japanese}]|{_JAPANESE_AFTER}|"
             rf"{_alternation(words.japanese_follow or ['(?!)'])})"),
        ]
        self._finders = [
            (regex.compile(rf"(?:{_alternation(labels)})[ \t\u3000]*[:：(（]?[ \t\u3000]*"),
             regex.compile(rf"(?:{_alternation(family)}){given}"))
            for labels, family, given in scripts if labels and family
        ]
        self._gap = regex.compile(_LIST_GAP)

    def find(self, text: str) -> list[tuple[int, int]]:
        found: list[tuple[int, int]] = []
        for label, name in self._finders:
            for cue in label.finditer(text):
                at = cue.end()
                while (match := name.match(text, at)) is not None and match.end() > at:
                    found.append((match.start(), match.end()))
                    gap = self._gap.match(text, match.end())
                    assert gap is not None  # the gap may be empty
                    at = gap.end()
                    if label.match(text, at):
                        break  # the next label's name is found from there ('· 신부 이서연')
        return found


def thai_name_pattern(words: NameWordsSpec) -> regex.Pattern[str]:
    """A Thai title ('นาย', 'นางสาว', 'เด็กหญิง'), not the start of another word ('นายก...'),
    then the given name and, after a space, the family name, each ending at a space or a mark."""
    if not words.thai_titles:
        return regex.compile(r"(?!)(?P<name>)")
    not_titles = _alternation(words.thai_not_titles) if words.thai_not_titles else "(?!)"
    thai = r"[\u0e01-\u0e4e]"
    return regex.compile(
        rf"(?<!{thai})(?!{not_titles})(?:{_alternation(words.thai_titles)})"
        rf"(?P<name>{thai}{{2,20}}(?:[ \t]{thai}{{2,25}})?)(?=[\s,.;:)(\]]|$)"
    )
