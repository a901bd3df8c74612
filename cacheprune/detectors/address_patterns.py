"""The word lists of the address detector and the patterns compiled from them.

Cores (where an address starts), parts (what it grows over) and the look-back, for addresses in
capitals and in lower case; see addresses.py for how they are used.
"""

from __future__ import annotations

import functools

import regex
from pydantic import BaseModel, ConfigDict, Field

from cacheprune.detectors.yaml_io import load_spec


class AddressWordsSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = 1
    types_after_name: list[str] = Field(min_length=1)
    types_after_name_only: list[str] = Field(default_factory=list)
    types_before_number: list[str] = Field(min_length=1)
    types_before_name: list[str] = Field(min_length=1)
    types_after_number: list[str] = Field(min_length=1)
    number_marks: list[str] = Field(min_length=1)
    compound_suffixes: list[str] = Field(min_length=1)
    weak_compound_suffixes: list[str] = Field(default_factory=list)
    hyphen_suffixes: list[str] = Field(default_factory=list)
    unit_words: list[str] = Field(min_length=1)
    side_words: list[str] = Field(default_factory=list)
    po_box_words: list[str] = Field(min_length=1)
    house_words: list[str] = Field(default_factory=list)
    postcodes: list[str] = Field(min_length=1)
    not_before_number: list[str] = Field(default_factory=list)
    division_words: list[str] = Field(default_factory=list)


@functools.lru_cache(maxsize=4)
def load_address_words(path: str | None = None) -> AddressWordsSpec:
    return load_spec(AddressWordsSpec, path, "address_words.yaml")


def _words(words: list[str], capital: bool = False) -> str:
    """An alternation of words in any case, longest first; a trailing period is required.

    With `capital`, a word without a period must be written with a capital first letter.
    """
    alternatives = []
    for word in sorted(set(words), key=len, reverse=True):
        escaped = regex.escape(word)
        if word.endswith((".", "/", ":")):
            alternatives.append(f"(?i:{escaped})")
        else:
            head = r"(?=\p{Lu})" if capital else ""
            alternatives.append(rf"{head}(?i:{escaped})(?![\p{{L}}\p{{M}}\d])")
    return "(?:" + "|".join(alternatives) + ")"


# A capitalized word of any script ('Hawthorne', 'Jean-Jaurès', 'Профсоюзная', 'Co.').
# A period ends only a short word ('St.', 'Co.', 'Bât.'): after a longer one it ends the sentence.
_WORD = r"(?:\p{Lu}[\p{L}\p{M}'’\-]{0,3}\.|\p{Lu}(?:[\p{L}\p{M}'’.\-]*[\p{L}\p{M}])?)"
_ORDINAL = r"\d{1,3}(?:st|nd|rd|th)"
_PARTICLE = (r"(?:de|del|dels|de la|della|dei|delle|di|da|do|dos|das|du|des|van|von|der|den|"
             r"la|las|los|le|les|el|al|bin|y|e|am|an|auf|zum|zur|im|ob|sur|sous|upon|on|of|"
             r"the|aan|op|te|et|d'|l'|[Dd]e'|[Dd]e’|[Dd]a'|[Dd]a’)")
_NAME = rf"(?:{_WORD}|{_ORDINAL})(?:[ \t]+(?:{_PARTICLE}[ \t]+)*(?:{_WORD}|{_ORDINAL})){{0,4}}"
_NUMBER = r"\d{1,6}[A-Za-z]?(?:[-/](?:\d{1,5}[A-Za-z]?|[A-Za-z](?![\p{L}\d]))){0,3}"
_NUMBER_END = r"(?![\p{L}\p{M}\d%]|[.,]\d)"
_DIRECTION = r"(?:[ \t]+(?:NW|NE|SW|SE|N|S|E|W)\b\.?)?"
_ANY_WORD = r"\p{L}[\p{L}\p{M}'’\-]*"
# Words that lead up to an address and are no part of it ('moved to', 'at').
_LEAD_WORD = r"(?i:to|at|in|on|from|of|the|and|a|an|my|our|is|near)[ \t]"
# Not a word that goes on the sentence after a lower-case address ('..., 35010 and then').
_GOES_ON_SENTENCE = (r"(?!(?:and|or|but|the|last|next|since|for|in|on|at|to|is|was|from|with|"
                     r"y|e|et|und|en|o|ou|che|que|i)(?![\p{L}\d]))")
# A word of an address part or an ordinal ('Vila Independencia 3ª Seção'); never a word that
# leads up to an address ('moved to').
_PART_WORD = rf"(?!{_LEAD_WORD})(?:{_ANY_WORD}|\d{{1,3}}[ºª°])"
# A town: one word in any case, then more capitalized ones ('Saint Éléonore-sur-Mer', 'Bad
# Homburg'); a lower-case word after it goes on the sentence.
_TOWN = rf"{_ANY_WORD}(?:[ \t]+{_WORD}){{0,2}}"
# A postcode of four or five digits (two letters may follow) and a town.
_POSTCODE_TOWN = rf"\d{{4,5}}(?:[ \t]?[A-Za-z]{{2}})?,?[ \t]+{_TOWN}"
_LOWER_STREET = (rf"(?:{_PARTICLE}[ \t]+)*{_ANY_WORD}(?:[ \t]+{_ANY_WORD}){{0,3}}?,?[ \t]+"
                 rf"{_POSTCODE_TOWN}")


class StreetCore:
    """One way a street is written, tried where its first word may start it.

    `first_words` (casefolded) are the words a match may begin with; `word_endings` the endings
    of the word it begins with. Given either, the pattern is tried only at the words that
    qualify: a word list in front of a pattern costs a trial per word at every word of the
    text, a set lookup per word costs next to nothing. Neither given: tried everywhere.
    """

    def __init__(self, pattern: str, first_words: frozenset[str] = frozenset(),
                 word_endings: tuple[str, ...] = ()) -> None:
        self.pattern = regex.compile(pattern)
        self.first_words = first_words
        self.word_endings = word_endings

    @property
    def everywhere(self) -> bool:
        # a word that does not start with a letter is found by no run of letters
        return not (self.first_words or self.word_endings) or "" in self.first_words

    def starts_on(self, word: str) -> bool:
        """Whether a match may start on `word`: a run of letters and hyphens, casefolded."""
        return (word.split("-", 1)[0] in self.first_words
                or (bool(self.word_endings) and word.endswith(self.word_endings)))


def _first_words(words: list[str]) -> frozenset[str]:
    """The first run of letters of each word, casefolded ('C. de' -> 'c')."""
    return frozenset(regex.match(r"[\p{L}\p{M}]*", word).group().casefold() for word in words)


class Patterns:
    """The compiled cores, parts and look-back of one word list."""

    def __init__(self, words: AddressWordsSpec) -> None:
        marks = rf"(?:{_words(words.number_marks)}\.?:?[ \t]*)?"
        postcode = "|".join(words.postcodes)
        not_before = "|".join(regex.escape(w) for w in words.not_before_number) or "(?!)"
        guard = rf"(?<![\w/.\-])(?<!(?i:{not_before})\.?[ \t])"
        # Lower-case addresses: postcodes in any case, found within the next two parts.
        postcode_any = f"(?i:{postcode})"
        postcode_ahead = (rf"(?=,?[ \t]+(?:{_ANY_WORD}(?:[ \t]+(?:{_ANY_WORD}|\d{{1,5}})){{0,2}},"
                          rf"[ \t]*){{0,2}}"
                          rf"(?:\p{{L}}{{2,3}}[ \t]+)?(?:{postcode_any})(?![\p{{L}}\d\-]))")
        long_types_before_name = [w for w in words.types_before_name if len(w) > 1]
        name_only = (_words(words.types_after_name_only, capital=True)
                     if words.types_after_name_only else "(?!)")
        suffix = _words(words.compound_suffixes)
        hyphen = "|".join(regex.escape(s) for s in words.hyphen_suffixes) or "(?!)"
        before_name = _first_words(words.types_before_name)
        long_before_name = _first_words(long_types_before_name)
        suffix_endings = tuple(sorted({w.rstrip(".").casefold()
                                       for w in words.compound_suffixes}))
        # In the order a match at one position is chosen: the first core that matches there.
        self.streets = [
            # '42 Wattle Street', '1203-88 Harbour Street', 'Plot 27, Adeola Odeku Street'
            StreetCore(
                rf"{guard}{_NUMBER}(?:[ \t]?(?:bis|ter|[A-D])\b)?,?[ \t]+(?:{_NAME}[ \t]+)?"
                rf"{_words(words.types_after_name, capital=True)}\.?{_DIRECTION}"
                r"(?:[ \t]+\d{1,4}(?![\p{L}\d]))?"),
            # '2839 Nicolas Via', '952 Taylor Junctions': a type that is also an English word
            StreetCore(
                rf"{guard}{_NUMBER},?[ \t]+{_NAME}[ \t]+{name_only}\.?{_DIRECTION}"),
            # '418 Teheran-ro'
            StreetCore(
                rf"{guard}{_NUMBER},?[ \t]+{_WORD}-(?i:{hyphen})\b"),
            # 'Mariahilfer Straße 88/2/14', 'Thorvald Meyers gate 58', 'Bağdat Cad. No: 214'
            StreetCore(
                rf"(?<![\w\-]){_NAME}[ \t]+{_words(words.types_before_number)}\.?,?[ \t]+{marks}"
                rf"{_NUMBER}{_NUMBER_END}"),
            # 'Kastanienallee 12a', 'Hans-Günter-Ring 5'
            StreetCore(
                rf"(?<![\w\-])\p{{Lu}}[\p{{L}}\p{{M}}\-]*"
                rf"(?:{suffix}|-{_words(words.types_before_number)})"
                rf"\.?,?[ \t]+{marks}{_NUMBER}{_NUMBER_END}"),
            # the same in lower case ('ortmannstr. 67/97, 73529 neubrandenburg'), then a
            # postcode within the next two parts
            StreetCore(
                rf"(?<![\w\-])\p{{Ll}}[\p{{L}}\p{{M}}\-]*{suffix}\.?,?[ \t]+{marks}{_NUMBER}"
                rf"{_NUMBER_END}{postcode_ahead}", word_endings=suffix_endings),
            # 'Calle Zacatecas 118', 'ul. Długa 8/3', 'Rua Oscar Freire, 1287', 'ул. X, д. 43'
            StreetCore(
                rf"(?<![\w/\-])(?<!\bet[ \t])"
                rf"{_words(words.types_before_name, capital=True)}[ \t]*"
                rf"(?:{_PARTICLE}[ \t]+)*{_NAME},?[ \t]+{marks}{_NUMBER}{_NUMBER_END}",
                first_words=before_name),
            # '27, avenue Jean-Jaurès', '4520, rue Saint-Denis'
            StreetCore(
                rf"(?<![\w/.\-]){_NUMBER}(?:[ \t]?(?:bis|ter|quater|[A-D])\b)?,?[ \t]+"
                rf"{_words(words.types_after_number)}[ \t]+(?:{_PARTICLE}[ \t]*)*{_NAME}"),
            # Lower case ('29, rue de la paix, 75002 paris', 'calle mayor 5, 28013 madrid'):
            # any words may name the street, so a postcode and a town must follow it
            StreetCore(
                rf"(?<![\w/.\-]){_NUMBER}(?:[ \t]?(?:bis|ter|quater)\b)?,?[ \t]+"
                rf"{_words(words.types_after_number)}[ \t]+{_LOWER_STREET}"),
            # ('callejón marcial guerra 812, ávila, 35010', 'al. bolesława chrobrego 68,
            # 87-181 kalisz'): a postcode within the next two parts
            StreetCore(
                rf"(?<![\w/\-])(?<!\bet[ \t]){_words(words.types_before_name)}[ \t]*"
                rf"(?:{_PARTICLE}[ \t]+)*{_ANY_WORD}(?:[ \t]+{_ANY_WORD}){{0,3}}?,?[ \t]+{marks}"
                rf"{_NUMBER}{_NUMBER_END}{postcode_ahead}", first_words=before_name),
            # '34675 akçay island, akarland, nj 04618'
            StreetCore(
                rf"{guard}{_NUMBER},?[ \t]+(?:{_ANY_WORD}[ \t]+){{1,3}}"
                rf"{_words(words.types_after_name + words.types_after_name_only)}\.?"
                rf"{postcode_ahead}"),
            # A street without a house number, then a postcode and a town ('rue Vincent, 95206
            # CousinVille', 'plac Zbawiciela, 00-573 Warszawa')
            StreetCore(
                rf"(?<![\w/\-])(?<!\bet[ \t]){_words(long_types_before_name)}[ \t]*"
                rf"(?:{_PARTICLE}[ \t]+)*{_ANY_WORD}(?:[ \t]+{_ANY_WORD}){{0,3}}?,[ \t]+"
                rf"(?:{postcode_any}),?[ \t]+{_TOWN}", first_words=long_before_name),
            # 'Unter den Linden 77, 10117 Berlin', 'Damrak 1, 1012 LG Amsterdam': no street
            # type, but a postcode and a town right after the house number
            StreetCore(
                rf"(?<![\w\-]){_NAME}[ \t]+{_NUMBER}"
                rf"(?=,[ \t]+(?:{postcode}),?[ \t]+\p{{Lu}})"),
            # '07986 Afife Rue, New Misra, ME 72222': a street type no list holds, but a town,
            # a state and a ZIP code after it
            StreetCore(
                rf"{guard}{_NUMBER}[ \t]+{_WORD}[ \t]+{_NAME}"
                rf"(?=,[ \t]+{_NAME},[ \t]+"
                r"\p{Lu}{2}[ \t]+\d{5}(?:-\d{4})?(?!\d))"),
        ]
        # A Brazilian postcode, its town and state ('15209-239 Moraes / ES') or US military
        # mail ('FPO AP 96349') ends an address whose parts before it, after a comma each, are
        # any words ('Sítio Sousa, Bandeirantes, '; 'USS Kidd, '): found from the tail, then
        # `parts_before` looks back (matching from every word would cost more).
        self.postcode_tail = regex.compile(
            rf"(?<![\p{{L}}\d])(?:\d{{5}}-?\d{{3}}[ \t]+{_ANY_WORD}(?:[ \t]+{_ANY_WORD}){{0,3}}"
            rf"[ \t]*/[ \t]*\p{{L}}{{2}}|(?i:[AFD]PO[ \t]+A[AEP][ \t]+\d{{5}}))(?![\p{{L}}\d])"
        )
        self.parts_before = regex.compile(
            rf"(?<![\p{{L}}\d])(?!{_LEAD_WORD})"
            rf"(?:(?:{_PART_WORD}(?:[ \t]+{_PART_WORD}){{0,3}}|\d{{1,6}}),[ \t]*){{1,3}}$"
        )
        self.street_word = regex.compile(
            "|".join([_words(words.types_after_name, capital=True),
                      _words(words.types_before_number), _words(words.types_before_name,
                                                                capital=True)])
        )
        unit = _words(words.unit_words)
        unit_id = r"(?:No\.?[ \t]*)?(?=[\w/\-]*\d|\p{Lu}(?![\p{L}\d]))[\w/\-]{1,16}"
        # Short unit words ('ap', 'et') only go on an address, they start none.
        self.unit_core = regex.compile(
            rf"(?<![\w.\-]){_words([w for w in words.unit_words if len(w) > 2])}\.?:?[ \t]*#?"
            rf"[ \t]*{unit_id}"
        )
        weak = _words(words.weak_compound_suffixes) if words.weak_compound_suffixes else "(?!)"
        # 'Mannerheimintie 48': an ending that also ends English words, so a postcode must follow
        self.weak_street = regex.compile(
            rf"(?<![\w\-])\p{{Lu}}[\p{{L}}\p{{M}}]{{3,}}{weak}\.?,?[ \t]+{marks}{_NUMBER}"
            rf"{_NUMBER_END}"
        )
        self.po_box = regex.compile(
            rf"(?<![\w.]){_words(words.po_box_words)}\.?[ \t]*(?:No\.?[ \t]*)?"
            r"\d{1,6}(?:[ \-]\d{2,5}){0,3}(?![\w])"
        )
        self.postcode = regex.compile(rf"(?:{postcode})(?![\p{{L}}\d\-])")
        self.divided = _divided_address(words.division_words)
        self.pin_address = regex.compile(_PIN_ADDRESS)
        atom = "|".join([
            # a short word, its period and a hyphen join a town's name ('St.-Annaparochie'),
            # before a unit or side word takes the short word alone
            r"\p{Lu}[\p{L}\p{M}]{0,3}\.-\p{Lu}[\p{L}\p{M}'’\-]*[\p{L}\p{M}]",
            rf"{unit}\.?:?[ \t]*#?[ \t]*{unit_id}",
            rf"(?:{postcode})(?![\p{{L}}\d\-])",
            r"\d{1,2}\.?[ \t]?[ºª°oa]\.?(?:[ \t\-]?\p{Lu})?(?![\p{L}\d])",
            rf"(?:\d{{1,2}}\.[ \t]?)?{_words(words.side_words)}\.?" if words.side_words
            else "(?!)",
            r"#[ \t]?\d[\w\-]*",
            r"\p{Lu}{1,3}-\d{1,4}(?:/\d{1,3})?(?![\p{L}\d])",
            _ORDINAL,
            rf"{_NUMBER}(?![\p{{L}}\d])",
            r"\(\p{Lu}[\p{L}\p{M} .\-]{0,30}\)",
            # a town whose accent is written as an apostrophe ("Muggio'", "Cantu'")
            r"\p{Lu}[\p{L}\p{M}]*['’](?![\p{L}\p{M}\d])",
            _WORD,
        ])
        joint = r"(?:[ \t]*/[ \t]*|[ \t]+-[ \t]+|[ \t]+)"
        self.part = regex.compile(
            rf"(?:(?:{atom})(?:{joint}(?:{_PARTICLE}[ \t]+)*(?:{atom})){{0,7}})"
        )
        # A lower-case address grows over lower-case words too, a few per part, never over a
        # word that goes on the sentence ('..., 35010 and then').
        lower_word = rf"{_GOES_ON_SENTENCE}\p{{Ll}}[\p{{L}}\p{{M}}'’\-]*"
        # a province in brackets, in lower case too ('(rc)')
        lower_atom = (f"{atom}|(?i:{postcode})(?![\\p{{L}}\\d\\-])|\\(\\p{{Ll}}{{2,3}}\\)|"
                      f"{lower_word}")
        self.lower_part = regex.compile(
            rf"(?:(?:{lower_atom})(?:{joint}(?:{lower_atom})){{0,3}})"
        )
        # After a space (no comma), only a flat, a postcode or a street goes on the address.
        self.opens_part = regex.compile(
            rf"(?:{unit}\.?:?[ \t]*#?[ \t]*{unit_id}|#[ \t]?\d|"
            r"\p{Lu}[ \t]?\d{1,4}(?![\p{L}\d])|"  # a staircase and flat: '48 B 17'
            rf"(?:{postcode})(?![\p{{L}}\d\-])|"
            rf"{_words(words.types_before_name, capital=True)})"
        )
        house = _words(words.house_words, capital=True) if words.house_words else "(?!)"
        self.before = regex.compile(
            rf"(?<![\p{{L}}\d])(?:(?:{unit}\.?[ \t]*#?[ \t]*{unit_id}|(?:{_WORD}[ \t]+){{1,3}}"
            rf"{house}\.?)(?:,[ \t]*|[ \t]*/[ \t]*|[ \t]+)|{unit}\.?[ \t]+|"
            # a street type the core left out ('plac ' of 'plac Fredry 661, 71-690 Bydgoszcz')
            rf"{_words(long_types_before_name)}[ \t]+)$"
        )


def _divided_address(division_words: list[str]) -> regex.Pattern[str]:
    """A house number, its street in any case, then at least one named division ('95 Khu 17
    đường Hùng Vương, phường Đông Hòa, Thành phố Hải Phòng', 'Số 3/76 Xô Viết Nghệ Tĩnh Phường
    An Nhơn'): where no postcode is written, the ward, district and province words of the
    country say it is an address."""
    if not division_words:
        return regex.compile("(?!)")
    division = _words(division_words)
    # NOTE: every word is one run of letters and a single separator, so the bounded repeats
    # backtrack over at most a few words per house number.
    street = r"(?:[\p{L}\p{M}]+|\d{1,5}(?:/\d{1,5}){0,3})"
    # A division's name stops before the next division word ('Phường An Nhơn Thành phố ...');
    # in an address written in lower case its words are too ('phường bình minh tỉnh bắc ninh').
    name_word = rf"(?!{division}){_GOES_ON_SENTENCE}(?:[\p{{L}}\p{{M}}]+|\d{{1,6}})"
    name = rf"{name_word}(?:[ \t]+{name_word}){{0,5}}"
    return regex.compile(
        rf"(?<![\w/.\-])(?:(?i:số)\.?[ \t]*)?\d{{1,5}}[A-Za-z]?(?:/\d{{1,5}}[A-Za-z]?){{0,3}}"
        rf"(?:,?[ \t]+{street}){{1,8}}?(?:,?[ \t]+{division}[ \t]+{name}){{1,4}}"
    )


# A word that starts with a capital or is of a script without capitals ('Gandhi', 'लखनऊ').
_UNCASED_OR_CAPITAL = r"(?!\p{Ll})[\p{L}\p{M}]+(?:[.'’\-][\p{L}\p{M}]+)*"
# An Indian address in a script without capitals: a house number and its street, then after
# a comma or on the next line a town and a six-digit PIN ('27 राजेश शर्मा\nलखनऊ-226001').
# NOTE: the street must be in such a script; in Latin letters a street type or locality word
# ('Marg', 'Nagar') starts the address, and 'Table 3 Results\nTotal 100000' stays public.
_UNCASED_WORD = r"\p{Lo}[\p{L}\p{M}]*"
_PIN_ADDRESS = (
    rf"(?<![\w/.\-])\d{{1,5}}[A-Za-z]?(?:[-/]\d{{1,5}}){{0,3}},?[ \t]+{_UNCASED_WORD}"
    rf"(?:[ \t]+{_UNCASED_WORD}){{0,4}}(?:,[ \t]*|[ \t]*\r?\n[ \t]*){_UNCASED_OR_CAPITAL}"
    rf"(?:[ \t]+{_UNCASED_OR_CAPITAL}){{0,2}}(?:[ \t]*-[ \t]*|,?[ \t]+)\d{{3}} ?\d{{3}}"
    r"(?![\p{L}\d])"
)


@functools.lru_cache(maxsize=4)
def compiled_patterns(words_file: str | None) -> Patterns:
    return Patterns(load_address_words(words_file))
