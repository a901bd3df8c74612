"""Streets and squares named after people are places: 'Rue Victor Hugo', 'Avenida Rio Branco',
'Praça Marquês de Pombal', 'Konrad-Adenauer-Platz', 'Goethestraße', 'Nelson Mandela Drive'.

The street type words are the address detector's (rules/address_words.yaml): a run led by a
type written before the street's name, ending in one written after it, or ending in a word
built on a street suffix, is no person. Types that are also popular given names ('Calle',
'Via', 'Tariq') are left out.
"""

from __future__ import annotations

from cacheprune.detectors.address_patterns import load_address_words
from cacheprune.detectors.name_gazetteer import COMMON_RANK
from cacheprune.detectors.name_tokens import NameWord, WordReader

# Suffixes that end no family name ('Goethestraße', 'Wilhelmsplatz', 'Prinsengracht'); any
# street suffix after a hyphen ends a street too ('Konrad-Adenauer-Platz').
_CLOSED_SUFFIXES = ("straße", "strasse", "gasse", "platz", "allee", "chaussee", "gracht",
                    "straat", "plein", "gatan", "vägen", "utca", "ulice", "stræde")

# Street types written after the name that end no person's name: 'Martin Luther King Jr.
# Boulevard', 'Nelson Mandela Drive'. Not 'Lane', 'Hill', 'Wood', 'Close' or 'Mill', which
# end family names too ('Glenn Close', 'John Stuart Mill').
_ENDS_NO_NAME = frozenset({
    "street", "streets", "avenue", "boulevard", "blvd", "drive", "road", "highway", "hwy",
    "parkway", "pkwy", "expressway", "freeway", "motorway", "turnpike", "terrace", "crescent",
    "esplanade", "promenade", "causeway", "square", "plaza", "broadway", "marg", "salai", "nagar",
    "vihar", "chowk", "sarani", "colony", "enclave", "puram"})


class StreetWords:
    def __init__(self, reader: WordReader) -> None:
        words = load_address_words()
        leading = {t for t in words.types_before_name
                   if " " not in t and "/" not in t and not t.endswith(".") and len(t) > 1}
        self._leading = frozenset(t.casefold() for t in leading
                                  if not self._given_name(reader, t.casefold()))
        self._suffixes = tuple(s.casefold().rstrip(".") for s in words.compound_suffixes)
        self._trailing = frozenset(t.casefold() for t in words.types_after_name
                                   if t.casefold() in _ENDS_NO_NAME)

    @staticmethod
    def _given_name(reader: WordReader, key: str) -> bool:
        first = reader.word(key, 0, len(key)).first
        return first is not None and first <= COMMON_RANK


    def names_street(self, text: str, run: list[NameWord]) -> bool:
        """The run is led by a street type or ends in a street's compound word."""
        first = text[run[0].start:run[0].end].casefold()
        if first in self._leading and len(run) > 1:
            return True
        last = text[run[-1].start:run[-1].end].casefold()
        if last in self._trailing and len(run) > 1:
            return True
        head, hyphen, tail = last.rpartition("-")
        if hyphen and head and tail in self._suffixes:
            return True
        return any(last.endswith(s) and len(last) > len(s) + 2 for s in _CLOSED_SUFFIXES)
