"""Surface forms of values that Faker does not make: spelled and spoken numbers, dates of birth
as people write them in many languages, identifiers, logins and plates of random shape.

Every function takes the caller's `random.Random`, so a seed reproduces the values. The
third-round forms (`MORE_DOB_FORMS`, `shaped_*`, `spoken_digits`) are used by `compose.py` only;
the held-out split never asks for them.
"""

from __future__ import annotations

import datetime
import random
import string
from collections.abc import Callable

DIGIT_WORDS = ("oh", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_ONES = ("", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth")
_TEENS = ("tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth",
          "seventeenth", "eighteenth", "nineteenth")
_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_UNITS = ("", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_MONTHS_EN = ("January", "February", "March", "April", "May", "June", "July", "August",
              "September", "October", "November", "December")
_ROMAN = ("I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII")

# Month names in the genitive or after a day, as a date is written in each language.
_MONTHS: dict[str, tuple[str, ...]] = {
    "de": ("Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September",
           "Oktober", "November", "Dezember"),
    "fr": ("janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre",
           "octobre", "novembre", "décembre"),
    "es": ("enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto",
           "septiembre", "octubre", "noviembre", "diciembre"),
    "pt": ("janeiro", "fevereiro", "março", "abril", "maio", "junho", "julho", "agosto",
           "setembro", "outubro", "novembro", "dezembro"),
    "it": ("gennaio", "febbraio", "marzo", "aprile", "maggio", "giugno", "luglio", "agosto",
           "settembre", "ottobre", "novembre", "dicembre"),
    "nl": ("januari", "februari", "maart", "april", "mei", "juni", "juli", "augustus",
           "september", "oktober", "november", "december"),
    "pl": ("stycznia", "lutego", "marca", "kwietnia", "maja", "czerwca", "lipca", "sierpnia",
           "września", "października", "listopada", "grudnia"),
    "ru": ("января", "февраля", "марта", "апреля", "мая", "июня", "июля", "августа",
           "сентября", "октября", "ноября", "декабря"),
    "tr": ("Ocak", "Şubat", "Mart", "Nisan", "Mayıs", "Haziran", "Temmuz", "Ağustos", "Eylül",
           "Ekim", "Kasım", "Aralık"),
    "cs": ("ledna", "února", "března", "dubna", "května", "června", "července", "srpna",
           "září", "října", "listopadu", "prosince"),
    "el": ("Ιανουαρίου", "Φεβρουαρίου", "Μαρτίου", "Απριλίου", "Μαΐου", "Ιουνίου", "Ιουλίου",
           "Αυγούστου", "Σεπτεμβρίου", "Οκτωβρίου", "Νοεμβρίου", "Δεκεμβρίου"),
    "hi": ("जनवरी", "फरवरी", "मार्च", "अप्रैल", "मई", "जून", "जुलाई", "अगस्त", "सितम्बर",
           "अक्तूबर", "नवम्बर", "दिसम्बर"),
    "sv": ("januari", "februari", "mars", "april", "maj", "juni", "juli", "augusti",
           "september", "oktober", "november", "december"),
    "hu": ("január", "február", "március", "április", "május", "június", "július",
           "augusztus", "szeptember", "október", "november", "december"),
}
_NATIVE: dict[str, Callable[[datetime.date, tuple[str, ...]], str]] = {
    "de": lambda d, m: f"{d.day}. {m[d.month - 1]} {d.year}",
    "fr": lambda d, m: f"{d.day} {m[d.month - 1]} {d.year}",
    "es": lambda d, m: f"{d.day} de {m[d.month - 1]} de {d.year}",
    "pt": lambda d, m: f"{d.day} de {m[d.month - 1]} de {d.year}",
    "it": lambda d, m: f"{d.day} {m[d.month - 1]} {d.year}",
    "nl": lambda d, m: f"{d.day} {m[d.month - 1]} {d.year}",
    "pl": lambda d, m: f"{d.day} {m[d.month - 1]} {d.year} r.",
    "ru": lambda d, m: f"{d.day} {m[d.month - 1]} {d.year} г.",
    "tr": lambda d, m: f"{d.day} {m[d.month - 1]} {d.year}",
    "cs": lambda d, m: f"{d.day}. {m[d.month - 1]} {d.year}",
    "el": lambda d, m: f"{d.day} {m[d.month - 1]} {d.year}",
    "hi": lambda d, m: f"{d.day} {m[d.month - 1]} {d.year}",
    "sv": lambda d, m: f"{d.day} {m[d.month - 1]} {d.year}",
    "hu": lambda d, m: f"{d.year}. {m[d.month - 1]} {d.day}.",
}


def spelled_day(day: int) -> str:
    if day < 10:
        return _ONES[day]
    if day < 20:
        return _TEENS[day - 10]
    tens, unit = divmod(day, 10)
    if unit == 0:
        return _TENS[tens][:-1] + "ieth"
    return f"{_TENS[tens]}-{_ONES[unit]}"


def spelled_year(year: int) -> str:
    century, rest = divmod(year, 100)
    head = {19: "nineteen", 20: "twenty"}.get(century, str(century))
    if rest == 0:
        return f"{head} hundred"
    if rest < 10:
        return f"{head} oh {_UNITS[rest]}"
    if rest < 20:
        return f"{head} {('ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen')[rest - 10]}"  # noqa: E501
    tens, unit = divmod(rest, 10)
    return f"{head} {_TENS[tens]}" + (f"-{_UNITS[unit]}" if unit else "")


def _ordinal(day: int) -> str:
    suffix = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def spoken_digits(digits: list[str], rng: random.Random) -> str:
    """Digits read aloud: 'oh'/'zero', 'double five', 'triple two', groups split by commas."""
    words: list[str] = []
    index = 0
    while index < len(digits):
        digit = digits[index]
        run = 1
        while index + run < len(digits) and digits[index + run] == digit and run < 3:
            run += 1
        word = "zero" if digit == "0" and rng.random() < 0.4 else DIGIT_WORDS[int(digit)]
        if run > 1 and rng.random() < 0.7:
            words.append(("double " if run == 2 else "triple ") + word)
        else:
            run = 1
            words.append(word)
        index += run
        if rng.random() < 0.25 and index < len(digits):
            words[-1] += ","
    return " ".join(words)


MORE_DOB_FORMS: dict[str, Callable[[datetime.date, random.Random], str]] = {
    "ordinal": lambda d, rng: rng.choice((
        f"{_ordinal(d.day)} of {_MONTHS_EN[d.month - 1]} {d.year}",
        f"{_ordinal(d.day)} {_MONTHS_EN[d.month - 1]} {d.year}",
        f"{_MONTHS_EN[d.month - 1]} {_ordinal(d.day)}, {d.year}",
        f"the {_ordinal(d.day)} of {_MONTHS_EN[d.month - 1].lower()} {d.year}")),
    "short": lambda d, rng: rng.choice((
        f"{d.day} {_MONTHS_EN[d.month - 1][:3]} {d.year % 100:02d}",
        f"{_MONTHS_EN[d.month - 1][:3]} {d.day} '{d.year % 100:02d}",
        f"{d.day:02d}/{d.month:02d}/{d.year % 100:02d}",
        f"{d.month}/{d.day}/{d.year % 100:02d}",
        f"{d.day}.{d.month}.{d.year % 100:02d}",
        f"{_MONTHS_EN[d.month - 1][:3].upper()} {d.day:02d} {d.year}")),
    "numeric": lambda d, rng: rng.choice((
        f"{d.year}{d.month:02d}{d.day:02d}", f"{d.year}/{d.month:02d}/{d.day:02d}",
        f"{d.year}.{d.month:02d}.{d.day:02d}", f"{d.day:02d}.{_ROMAN[d.month - 1]}.{d.year}",
        f"{d.day}-{d.month}-{d.year}", f"{d.day:02d} {d.month:02d} {d.year}")),
    "native": lambda d, rng: (lambda lang: _NATIVE[lang](d, _MONTHS[lang]))(
        rng.choice(tuple(_NATIVE))),
    "cjk": lambda d, rng: rng.choice((f"{d.year}年{d.month}月{d.day}日",
                                      f"{d.year}년 {d.month}월 {d.day}일",
                                      f"ngày {d.day} tháng {d.month} năm {d.year}",
                                      f"{d.year}年{d.month:02d}月{d.day:02d}日生")),
    "words": lambda d, rng: rng.choice((
        f"the {spelled_day(d.day)} of {_MONTHS_EN[d.month - 1].lower()}, {spelled_year(d.year)}",
        f"{spelled_day(d.day)} {_MONTHS_EN[d.month - 1].lower()} {spelled_year(d.year)}",
        f"{_MONTHS_EN[d.month - 1].lower()} the {spelled_day(d.day)}, "
        f"{spelled_year(d.year).split(' ', 1)[-1]}",
        f"{_MONTHS_EN[d.month - 1].lower()} {d.day}, {spelled_year(d.year)}")),
}


def shaped_id(rng: random.Random) -> str:
    """A free-form identifier: optional letters, a separator, 5-12 digits, maybe grouped."""
    prefix = "".join(rng.choices(string.ascii_uppercase, k=rng.choice((0, 0, 1, 2, 2, 3, 4))))
    separator = rng.choice(("", "", "-", " ", "/", "#", ".")) if prefix else ""
    digits = "".join(rng.choices(string.digits, k=rng.randint(5, 12)))
    if rng.random() < 0.25:
        size = rng.choice((3, 4))
        digits = rng.choice((" ", "-")).join(digits[i:i + size]
                                             for i in range(0, len(digits), size))
    suffix = rng.choice(string.ascii_uppercase) if rng.random() < 0.15 else ""
    return prefix + separator + digits + suffix


def shaped_plate(rng: random.Random) -> str:
    letters, digits = string.ascii_uppercase, string.digits
    shape = rng.choice(("LLDD LLL", "L-LL DDDD", "DDD-LLL", "LLL DDDD", "LL-DDD-LL", "LL DDDDD",
                        "DLLL DDD", "LLL-DDD", "LL DD LL DDDD", "DD-LL-DD", "LDDD LLL"))
    return "".join(rng.choice(letters) if c == "L" else rng.choice(digits) if c == "D" else c
                   for c in shape)


def shaped_login(given: str, family: str, faker_login: str, rng: random.Random) -> str:
    """A login as companies and sites build them from a person's name, or Faker's."""
    given_ascii = "".join(c for c in given.lower() if c.isascii() and c.isalnum())
    family_ascii = "".join(c for c in family.lower() if c.isascii() and c.isalnum())
    number = str(rng.randint(1, 9999))
    if len(given_ascii) < 2 or len(family_ascii) < 2:  # a name in another script
        return faker_login + rng.choice(("", number[:2]))
    return rng.choice((
        f"{given_ascii[0]}{family_ascii}", f"{given_ascii}.{family_ascii}",
        f"{given_ascii}_{family_ascii}{number[:2]}", f"{family_ascii}{given_ascii[0]}",
        f"{given_ascii}{number}", f"{given_ascii}-{family_ascii}",
        f"{given_ascii[:3]}{family_ascii[:3]}",
        faker_login, f"{faker_login}{number[:2]}", f"x{given_ascii}{family_ascii[:1]}",
        f"{given_ascii}{family_ascii[:1]}", f"the_real_{given_ascii}",
        f"{family_ascii}.{given_ascii[0]}",
    ))
