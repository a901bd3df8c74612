"""Checks of a regex match: those it must pass before it counts (checksums, ranges the regex
cannot express), and those that make it doubtful (a recent date: mostly an event's)."""

from __future__ import annotations

import datetime
import importlib
import ipaddress
from collections.abc import Callable

import regex


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


def luhn(text: str) -> bool:
    """Payment card check digit (ISO/IEC 7812)."""
    digits = _digits(text)
    if not 12 <= len(digits) <= 19:
        return False
    total = 0
    for position, ch in enumerate(reversed(digits)):
        value = int(ch)
        if position % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def payment_card(text: str) -> bool:
    """A card number: the Luhn check, and 13 digits only for Visa's old numbers (a 4 first):
    a millisecond timestamp ('1741939200000') passes Luhn one time in ten."""
    digits = _digits(text)
    return luhn(digits) and (len(digits) != 13 or digits.startswith("4"))


def iban(text: str) -> bool:
    """IBAN mod-97 check (ISO 13616): first four characters moved last, letters as 10..35."""
    compact = "".join(text.split()).upper()
    if not 15 <= len(compact) <= 34 or not compact.isalnum():
        return False
    rearranged = compact[4:] + compact[:4]
    as_number = "".join(str(int(ch, 36)) for ch in rearranged)
    return int(as_number) % 97 == 1


def us_ssn(text: str) -> bool:
    """Numbers the US never issues: area 000, 666 or 900+, group 00, serial 0000."""
    digits = _digits(text)
    if len(digits) != 9:
        return False
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def ip_address(text: str) -> bool:
    """A valid IPv4 or IPv6 address (octets in range, one '::' at most...) of a host."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    # this machine ('127.0.0.1', '::1') and 'any' ('0.0.0.0') name no one's host
    return not (address.is_loopback or address.is_unspecified)


# A template's stand-in for a secret: '<your-token-here>', '${DB_PASSWORD}', '$API_KEY',
# '{{ vault_password }}', '%(password)s', '%APPDATA%', or a redacted '********' / 'xxxxxx'.
# NOTE: a bare '$NAME' or '%NAME%' only in capitals and '<...>' only of letters and separators:
# a real password may start with '$' ('$unshine2024') or sit in brackets ('<Tulip88>').
_PLACEHOLDER = regex.compile(
    r"<[A-Za-z][A-Za-z _.-]*>|\$\{[^{}]+\}|\$[A-Z_][A-Z0-9_]*|\{\{[^{}]+\}\}|"
    r"%\([A-Za-z_]\w*\)[sd]|%[A-Z_][A-Z0-9_]*%|\*{3,}|[xX]{4,}"
)


def not_placeholder(text: str) -> bool:
    """A secret's value, not a template's placeholder for one."""
    return _PLACEHOLDER.fullmatch(text) is None


def phone(text: str) -> bool:
    """E.164 allows at most 15 digits; fewer than 7 is not a reachable number."""
    return 7 <= len(_digits(text)) <= 15


def cn_ric(text: str) -> bool:
    """China's resident identity number: 17 digits, a valid birth date, the ISO 7064 check.

    NOTE: python-stdnum also looks the first six digits up in its own table of districts, which
    lacks districts created or renumbered since (Shanghai Pudong's 310115): real numbers fail.
    """
    from stdnum.cn import ric

    compact = "".join(text.split()).upper()
    if len(compact) != 18 or not compact[:17].isdigit():
        return False
    try:
        ric.get_birth_date(compact)
    except ValueError:
        return False
    return compact[-1] == ric.calc_check_digit(compact)


def sg_nric(text: str) -> bool:
    """Singapore NRIC/FIN: a prefix letter, seven digits and a check letter."""
    compact = text.strip().upper()
    if len(compact) != 9 or compact[0] not in "STFGM" or not compact[1:8].isdigit():
        return False
    weights = (2, 7, 6, 5, 4, 3, 2)
    total = sum(int(d) * w for d, w in zip(compact[1:8], weights, strict=True))
    total += {"T": 4, "G": 4, "M": 3}.get(compact[0], 0)
    letters = "JZIHGFEDCBA" if compact[0] in "ST" else "XWUTRQPNMLK" if compact[0] in "FG" \
        else "KLJNPQRTUWX"
    return compact[-1] == letters[total % 11]


def pl_id_card(text: str) -> bool:
    """Polish identity card: three letters and six digits, the first digit a check digit."""
    compact = "".join(text.split()).upper()
    if len(compact) != 9 or not compact[:3].isalpha() or not compact[3:].isdigit():
        return False
    values = [ord(ch) - 55 for ch in compact[:3]] + [int(d) for d in compact[4:]]
    total = sum(v * w for v, w in zip(values, (7, 3, 1, 7, 3, 1, 7, 3), strict=True))
    return total % 10 == int(compact[3])


def hk_id(text: str) -> bool:
    """Hong Kong identity card: one or two letters, six digits, a check digit or A."""
    compact = "".join(ch for ch in text.upper() if ch.isalnum())
    if not 8 <= len(compact) <= 9 or not compact[-7:-1].isdigit():
        return False
    letters = compact[:-7]
    if not letters.isalpha():
        return False
    values = [36] * (2 - len(letters)) + [ord(ch) - 55 for ch in letters]
    values += [int(d) for d in compact[-7:-1]]
    total = sum(v * w for v, w in zip(values, range(9, 1, -1), strict=True))
    check = (11 - total % 11) % 11
    return compact[-1] == ("A" if check == 10 else str(check))


def tw_id(text: str) -> bool:
    """Taiwan national identification number: a letter (the issuing area), sex, eight digits."""
    compact = text.strip().upper()
    area = "ABCDEFGHJKLMNPQRSTUVXYWZIO"
    if len(compact) != 10 or compact[0] not in area or compact[1] not in "12" or not \
            compact[1:].isdigit():
        return False
    code = area.index(compact[0]) + 10
    digits = [code // 10, code % 10] + [int(d) for d in compact[1:]]
    weights = (1, 9, 8, 7, 6, 5, 4, 3, 2, 1, 1)
    return sum(d * w for d, w in zip(digits, weights, strict=True)) % 10 == 0


# NOTE: a birth date without a word that says so is a grown person's or a child's, years back;
# the dates of letters, invoices, notices and deadlines are of the last few years or ahead.
RECENT_YEARS = 5
_FOUR_DIGIT_YEAR = regex.compile(r"(?<!\d)(?:19|20)\d{2}(?!\d)")


def recent_date(text: str) -> bool:
    """A date of this year, the RECENT_YEARS before it, or the future: '1 March 2027',
    '14.03.2025' (in 2026); not '12/03/1985'. A date without a four-digit year is not recent."""
    years = [int(y) for y in _FOUR_DIGIT_YEAR.findall(text)]
    return bool(years) and max(years) >= datetime.date.today().year - RECENT_YEARS


# Engineers' shorthand the lemma tables lack: 'TODO(perf)', 'FIXME(i18n)', 'owner: infra'.
_SHORTHAND = frozenset("""
    perf i18n l10n a11y k8s infra deps dep config cfg impl misc compat wip tmp temp docs doc
    auth authn authz async sync api apis ui ux db ci cd qa sre ops devops sec secops dev prod
    stg staging refactor cleanup nit nits regex backend frontend mgmt
""".split())


def not_english_word(text: str) -> bool:
    """A handle, not an English word: 'jmcallister' passes, 'someone' or 'experts' does not
    (spaCy's English lemma tables, any inflected form; the model the name detector reads), nor
    engineers' shorthand ('perf', 'i18n', 'infra')."""
    from cacheprune.detectors.name_words import ordinary_words

    words = ordinary_words()

    def english(word: str) -> bool:
        # Forms the lemma tables miss: plurals of derived nouns ('embeddings'), adverbs ('-ly').
        return any(words.is_noun(form) or words.is_other(form) for form in
                   (word, word.removesuffix("s"), word.removesuffix("ly")) if form)

    key = text.lstrip("@").casefold()
    if key in _SHORTHAND:
        return False
    # 'high-order', 'pair-wise': every part an English word
    return not (english(key) or all(english(part) for part in key.split("-") if part))


# National identity and tax numbers checked by python-stdnum (check digits, date and region
# fields). Its modules accept the usual separators.
_STDNUM_MODULES = {
    "es_dni_nie": ("stdnum.es.dni", "stdnum.es.nie"),
    "it_codice_fiscale": ("stdnum.it.codicefiscale",),
    "nl_bsn": ("stdnum.nl.bsn",),
    "fr_nir": ("stdnum.fr.nir",),
    "de_idnr": ("stdnum.de.idnr",),
    "gb_nhs": ("stdnum.gb.nhs",),
    "in_aadhaar": ("stdnum.in_.aadhaar",),
    "in_pan": ("stdnum.in_.pan",),
    "br_cpf": ("stdnum.br.cpf",),
    "ca_sin": ("stdnum.ca.sin",),
    "se_personnummer": ("stdnum.se.personnummer",),
    "nordic_personal_number": ("stdnum.se.personnummer", "stdnum.dk.cpr", "stdnum.fi.hetu",
                               "stdnum.no.fodselsnummer"),
    "kr_rrn": ("stdnum.kr.rrn",),
    "ie_pps": ("stdnum.ie.pps",),
    "jp_individual_number": ("stdnum.jp.in_",),
    "cz_birth_number": ("stdnum.cz.rc", "stdnum.sk.rc"),
    "ro_cnp": ("stdnum.ro.cnp",),
    "pl_pesel": ("stdnum.pl.pesel",),
    "mx_curp": ("stdnum.mx.curp",),
}


def _stdnum_validator(module_names: tuple[str, ...]) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        return any(importlib.import_module(name).is_valid(text) for name in module_names)

    check.__doc__ = f"Valid per python-stdnum's {', '.join(module_names)}."
    return check


VALIDATORS: dict[str, Callable[[str], bool]] = {
    "luhn": luhn,
    "payment_card": payment_card,
    "not_placeholder": not_placeholder,
    "iban": iban,
    "us_ssn": us_ssn,
    "ip_address": ip_address,
    "phone": phone,
    "cn_ric": cn_ric,
    "sg_nric": sg_nric,
    "pl_id_card": pl_id_card,
    "hk_id": hk_id,
    "tw_id": tw_id,
    "not_english_word": not_english_word,
    "recent_date": recent_date,
    **{name: _stdnum_validator(modules) for name, modules in _STDNUM_MODULES.items()},
}
