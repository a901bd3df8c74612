"""Names of weekdays and months in many languages: words that date things, not people.

The gazetteer lists many of them as rare names ('Maret', 'Montag', 'Lundi') and some as popular
ones ('April', 'June', 'Thu', 'Jan'). The name detector reads a weekday or month name as no name
when it stands next to a number or another such name ('14 Maret 2027', 'Tue & Thu', 'Lundi 10
mars'), and a full one that is no popular given name ('Oktober', 'Montag') never as a name.
The names come from the Unicode CLDR through Babel, in the languages below.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

# Languages written with spaces between words, in Latin, Cyrillic or Greek letters: the scripts
# the name detector reads word by word.
LANGUAGES = (
    "en", "de", "fr", "es", "it", "pt", "nl", "pl", "sv", "da", "nb", "fi", "cs", "sk", "ro",
    "hu", "tr", "id", "ms", "vi", "fil", "sw", "ru", "uk", "el", "bg", "hr", "sl", "et", "lv",
    "lt", "ca", "eu", "gl", "af", "is", "sq", "sr",
    # and in other scripts, for spans that are only dates ('10 ธันวาคม 2568', 'الخميس 9')
    "ar", "fa", "he", "hi", "bn", "ta", "ur", "th",
)


@dataclass(frozen=True, slots=True)
class CalendarWords:
    full: frozenset[str]  # 'montag', 'maret', 'april' (casefolded)
    every: frozenset[str]  # the full names and their abbreviations ('mo', 'tue', 'déc')

    def only_dates(self, words: list[str]) -> bool:
        """Every word of `words` is a weekday or month name, and there is one."""
        return bool(words) and all(self.is_calendar(w.casefold()) for w in words)

    def is_calendar(self, key: str) -> bool:
        """`key` (casefolded) is a weekday or month name, or such names joined by hyphens
        ('mo-fr', 'mon-fri')."""
        return key in self.every or ("-" in key and all(
            part in self.every for part in key.split("-") if part))


@functools.lru_cache(maxsize=1)
def calendar_words() -> CalendarWords:
    from babel import Locale

    full: set[str] = set()
    every: set[str] = set()
    for language in LANGUAGES:
        locale = Locale.parse(language)
        for names in (locale.months, locale.days):
            for context in ("format", "stand-alone"):
                for width in ("wide", "abbreviated"):
                    words = {w.casefold().rstrip(".") for w in names[context][width].values()}
                    every |= words
                    if width == "wide":
                        full |= words
    single = {w for w in every if " " not in w and len(w) > 1}
    return CalendarWords(frozenset(w for w in full if w in single), frozenset(single))
