"""Realistic private values, made without looking at any detector.

Names, addresses, phone numbers, national ids, IBANs, passport numbers and e-mails come from
Faker in many locales; provider-style API keys, passwords and dates of birth in several
formats are drawn here. Nothing is picked or filtered by whether cacheprune's detectors find it:
a workload made to be detected would measure the detectors' own reflection (issue 17), so the
only filters are the ones that make leakage attributable: a value is new to the workload and
absent from every document (compared case-insensitively).

Everything is seeded: one seed gives the same values on every machine with the pinned Faker.
"""

from __future__ import annotations

import datetime
import random
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from faker import Faker

# Locales whose conventions (scripts, address and phone layouts, id formats) differ widely.
LOCALES = (
    "en_US", "en_GB", "de_DE", "fr_FR", "es_ES", "it_IT", "nl_NL", "ja_JP", "pt_BR", "pl_PL",
    "vi_VN", "tr_TR", "hi_IN",
)  # fmt: skip

# How a date of birth is written: ISO, European, US, dotted, two-digit years, month names.
DATE_FORMATS = ("%Y-%m-%d", "%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y", "%m/%d/%y", "%d.%m.%y",
                "%B %d, %Y", "%d %b %Y")

_BASE62 = string.ascii_letters + string.digits
# Provider-style secrets: a fixed, publicly documented prefix and a random body.
_KEY_SHAPES: tuple[tuple[str, str, int], ...] = (
    ("sk_live_", _BASE62, 24),
    ("sk-proj-", _BASE62 + "-_", 40),
    ("ghp_", _BASE62, 36),
    ("AKIA", string.ascii_uppercase + string.digits, 16),
    ("xoxb-", string.digits, 12),
    ("AIza", _BASE62 + "-_", 35),
    ("glpat-", _BASE62 + "-_", 20),
)


@dataclass(slots=True, frozen=True)
class PrivateValue:
    """One private value: its kind, its text as it appears in the prompt, and its locale."""

    kind: str
    text: str
    locale: str


class ValueSource:
    """Seeded draws of each kind of value in any of `LOCALES`.

    The attacker of the evaluation builds its dictionaries and token statistics from another
    `ValueSource` (another seed): it knows the formats, not the values.
    """

    def __init__(self, seed: int, locales: Iterable[str] = LOCALES) -> None:
        self.locales = tuple(locales)
        if not self.locales:
            raise ValueError("at least one locale is needed")
        unknown = sorted(set(self.locales) - set(LOCALES))
        if unknown:
            raise ValueError(f"unknown locales {unknown}; available: {list(LOCALES)}")
        self._rng = random.Random(seed)
        self._fakers: dict[str, Faker] = {}
        for index, locale in enumerate(self.locales):
            faker = Faker(locale)
            faker.seed_instance(seed * 1009 + index)
            self._fakers[locale] = faker

    def pick_locale(self) -> str:
        return self._rng.choice(self.locales)

    def draw(self, kind: str, locale: str, lower: bool = False) -> PrivateValue:
        """A value of `kind` in the conventions of `locale`, lower-cased if `lower`."""
        if kind not in _MAKERS:
            raise ValueError(f"unknown private value kind {kind!r}; kinds: {sorted(_MAKERS)}")
        if locale not in self._fakers:
            raise ValueError(f"locale {locale!r} is not one of this source's {self.locales}")
        text = " ".join(_MAKERS[kind](self._fakers[locale], self._rng).split())
        return PrivateValue(kind, text.lower() if lower else text, locale)


def _name(faker: Faker, rng: random.Random) -> str:
    return str(faker.name())


def _address(faker: Faker, rng: random.Random) -> str:
    return ", ".join(line.strip() for line in str(faker.address()).splitlines())


def _phone(faker: Faker, rng: random.Random) -> str:
    return str(faker.phone_number())


def _national_id(faker: Faker, rng: random.Random) -> str:
    return str(faker.ssn())


def _iban(faker: Faker, rng: random.Random) -> str:
    compact = str(faker.iban())
    if rng.random() < 0.5:  # printed in groups of four about as often as compact
        return " ".join(compact[i : i + 4] for i in range(0, len(compact), 4))
    return compact


def _passport(faker: Faker, rng: random.Random) -> str:
    return str(faker.passport_number())


def _email(faker: Faker, rng: random.Random) -> str:
    return str(faker.email())


def _api_key(faker: Faker, rng: random.Random) -> str:
    prefix, alphabet, length = rng.choice(_KEY_SHAPES)
    if prefix == "xoxb-":  # Slack bot tokens: two digit groups and a base62 body
        return (f"{prefix}{''.join(rng.choices(alphabet, k=length))}-"
                f"{''.join(rng.choices(alphabet, k=13))}-{''.join(rng.choices(_BASE62, k=24))}")
    return prefix + "".join(rng.choices(alphabet, k=length))


def _password(faker: Faker, rng: random.Random) -> str:
    return str(faker.password(length=rng.randint(10, 16)))


def _birth_date(faker: Faker, rng: random.Random) -> str:
    born: datetime.date = faker.date_of_birth(minimum_age=18, maximum_age=90)
    return born.strftime(rng.choice(DATE_FORMATS))


_MAKERS: dict[str, Callable[[Faker, random.Random], str]] = {
    "name": _name,
    "address": _address,
    "phone": _phone,
    "national_id": _national_id,
    "iban": _iban,
    "passport": _passport,
    "email": _email,
    "api_key": _api_key,
    "password": _password,
    "birth_date": _birth_date,
}
KINDS = tuple(_MAKERS)


class UniqueValues:
    """Draws values that are new to the whole workload and absent from every document.

    Unique values make leakage attributable: a recovered string points at one slot of one
    request, and cannot have come from the public document instead.
    """

    MAX_ATTEMPTS = 1000

    def __init__(self, source: ValueSource, public_texts: Iterable[str]) -> None:
        self._source = source
        self._public_texts = [text.casefold() for text in public_texts]
        self._used: set[str] = set()

    def draw(self, kind: str, locale: str, lower: bool = False) -> PrivateValue:
        for _ in range(self.MAX_ATTEMPTS):
            value = self._source.draw(kind, locale, lower)
            folded = value.text.casefold()
            if folded not in self._used and not any(folded in t for t in self._public_texts):
                self._used.add(folded)
                return value
        raise RuntimeError(
            f"no new {kind!r} value for locale {locale} after {self.MAX_ATTEMPTS} draws"
        )
