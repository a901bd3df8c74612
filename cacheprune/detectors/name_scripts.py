"""Names in scripts written without spaces: a family name from a list, then a given name, then
a word that follows people (an honorific, 'I am') or a cue before it.

Chinese ('王伟先生'), Korean ('김민준입니다') and Japanese ('佐々木 美咲です'). The lists are in
rules/names.yaml; a family name alone is too common a syllable or character to go by.
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
