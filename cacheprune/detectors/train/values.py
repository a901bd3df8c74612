"""Private values for generated training text: Faker's locales plus the project's own pools.

`ValueMaker(locale, rng, pools).make(kind, variant)` returns one value's text. Kinds are the
learned detector's labels (`LABELS`); a variant picks a surface form (airline order, lower case,
spoken digits...). Every random choice comes from `rng`, so a seed reproduces the values.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import dataclass

from faker import Faker

from cacheprune.detectors.train.value_shapes import (
    DIGIT_WORDS,
    MORE_DOB_FORMS,
    shaped_id,
    shaped_login,
    shaped_plate,
    spelled_day,
    spelled_year,
    spoken_digits,
)

LABELS = (
    "PERSON", "EMAIL", "PHONE", "ADDRESS", "GOV_ID", "FINANCIAL", "SECRET", "DATE_OF_BIRTH",
    "IP_ADDRESS", "USERNAME", "MEDICAL_ID", "LICENSE_PLATE", "PERSONAL_ID",
)
_MONTHS_EN = ("January", "February", "March", "April", "May", "June", "July", "August",
              "September", "October", "November", "December")


@dataclass(frozen=True, slots=True)
class ValuePools:
    """Hand-made pools that Faker lacks; the held-out split is given different ones."""

    nicknames: tuple[str, ...]
    particles: tuple[str, ...]      # family-name particles: 'ap', 'van der', 'de la'...
    mail_domains: tuple[str, ...]
    handle_suffixes: tuple[str, ...]
    medical_prefixes: tuple[str, ...]
    staff_prefixes: tuple[str, ...]
    sectors: tuple[str, ...]        # Indian sector-style address parts
    months_local: tuple[tuple[str, ...], ...]  # month names of other languages


def _luhn_complete(digits: str) -> str:
    total = 0
    for index, char in enumerate(reversed(digits + "0")):
        value = int(char)
        if index % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return digits + str((10 - total % 10) % 10)


class ValueMaker:
    """Makes values of one locale; `make(kind, variant)` is the only entry point."""

    def __init__(self, locale: str, rng: random.Random, pools: ValuePools) -> None:
        self.locale = locale
        self.rng = rng
        self.pools = pools
        self.faker = Faker(locale)
        self.faker.seed_instance(rng.randrange(2**31))
        self.english = Faker("en_US")
        self.english.seed_instance(rng.randrange(2**31))

    def make(self, kind: str, variant: str = "") -> str:
        maker: Callable[[str], str] = getattr(self, f"_{kind.lower()}")
        return maker(variant)

    # -- people
    def _given(self) -> str:
        return self.faker.first_name()

    def _family(self) -> str:
        return self.faker.last_name()

    def _person(self, variant: str) -> str:
        rng, given, family = self.rng, self._given(), self._family()
        forms: dict[str, Callable[[], str]] = {
            "full": lambda: self.faker.name(),
            "given": lambda: given,
            "family": lambda: family,
            "upper": lambda: f"{given} {family}".upper(),
            "airline": lambda: f"{family.upper()}/{given.upper()}",
            "comma": lambda: f"{family}, {given}",
            "initials": lambda: f"{given[0]}. {rng.choice(string.ascii_uppercase)}. {family}",
            "initial": lambda: f"{given[0]}. {family}",
            "nick": lambda: f'{given} "{rng.choice(self.pools.nicknames)}" {family}',
            "particle": lambda: f"{given} {rng.choice(self.pools.particles)} {family}",
            "lower": lambda: f"{given} {family}".lower(),
            "given_lower": lambda: given.lower(),
            "title": lambda: f"{rng.choice(('Mr', 'Ms', 'Dr.', 'Mrs.', 'Prof.'))} {family}",
            # Third round: more surface forms, used by `compose.py` only.
            "family_first": lambda: f"{family.upper()} {given}",
            "given_initial": lambda: f"{given} {family[0]}.",
            "title_full": lambda: f"{rng.choice(('Mr.', 'Ms', 'Dr', 'Mrs', 'Prof.', 'Herr', 'Frau', 'Mme', 'Sr.', 'Sra.', 'Pan', 'Pani'))} {given} {family}",  # noqa: E501
            "any": lambda: forms[rng.choice(("full", "full", "given", "family", "upper",
                                             "comma", "initial", "lower", "given_lower",
                                             "airline", "particle", "nick", "initials",
                                             "family_first", "given_initial"))](),
        }
        if not variant:
            variant = rng.choice(("full", "full", "full", "given", "upper", "comma", "initial",
                                  "lower", "particle"))
        return forms[variant]()

    # -- contact
    def _email(self, variant: str) -> str:
        user = self.english.user_name()
        if variant == "spoken2":
            spoken = user.replace(".", " dot ").replace("_", " underscore ").replace("-", " dash ")
            domain = self.rng.choice(("gmail", "outlook", "hotmail", "yahoo", "proton", "aol"))
            return f"{spoken} at {domain} dot {self.rng.choice(('com', 'co dot uk', 'de', 'net'))}"
        if variant == "spoken":
            return f"{user.replace('.', ' dot ')} at {self.rng.choice(self.pools.mail_domains).replace('.', ' dot ')}"  # noqa: E501
        if self.rng.random() < 0.5:
            return f"{user}@{self.rng.choice(self.pools.mail_domains)}"
        return self.faker.email()

    def _phone(self, variant: str) -> str:
        number = self.faker.phone_number()
        if variant == "spoken":
            digits = [c for c in number if c.isdigit()][-10:]
            words = [DIGIT_WORDS[int(d)] for d in digits]
            return " ".join(words[:3]) + ", " + " ".join(words[3:6]) + ", " + " ".join(words[6:])
        if variant == "spoken2":
            return spoken_digits([c for c in number if c.isdigit()][-11:], self.rng)
        return number

    def _address(self, variant: str) -> str:
        faker, rng = self.faker, self.rng
        if variant == "street":
            return faker.street_address()
        if variant == "city":
            return faker.city()
        if variant == "postcode":
            return faker.postcode()
        if variant == "sector":
            return (f"House {rng.randint(1, 999)}, {rng.choice(self.pools.sectors)} "
                    f"{rng.randint(1, 80)}, {faker.city()} {rng.randint(110001, 855999)}")
        if variant == "lines":
            return faker.address()
        if variant == "spoken":
            words = faker.street_address().split()
            return " ".join(spoken_digits(list(w), rng) if w.isdigit() else w for w in words)
        full = faker.address().replace("\n", ", ")
        if variant == "upper":
            return full.upper()
        if variant == "flat":
            return full.replace(",", "")
        return full.lower() if variant == "lower" else full

    # -- identifiers
    def _gov_id(self, variant: str) -> str:
        rng = self.rng
        if variant == "passport":
            return rng.choice(string.ascii_uppercase) + "".join(rng.choices(string.digits, k=8))
        try:
            return str(self.faker.ssn())
        except AttributeError:
            return "".join(rng.choices(string.digits, k=rng.choice((9, 10, 11, 12))))

    def _financial(self, variant: str) -> str:
        rng, digits = self.rng, string.digits
        forms: dict[str, Callable[[], str]] = {
            "iban": lambda: self.english.iban(),
            "account": lambda: "".join(rng.choices(digits, k=rng.randint(8, 12))),
            "sort_code": lambda: "-".join("".join(rng.choices(digits, k=2)) for _ in range(3)),
            "ifsc": lambda: "".join(rng.choices(string.ascii_uppercase, k=4)) + "0" +
            "".join(rng.choices(string.ascii_uppercase + digits, k=6)),
            "bsb": lambda: "".join(rng.choices(digits, k=3)) + "-" +
            "".join(rng.choices(digits, k=3)),
            "routing": lambda: self.english.aba(),
            "card": lambda: self.english.credit_card_number(),
        }
        if variant == "spoken":
            return spoken_digits(list(forms["account"]()), rng)
        if variant == "grouped":
            account = forms["account"]()
            return " ".join(account[i:i + 4] for i in range(0, len(account), 4))
        return forms[variant or rng.choice(tuple(forms))]()

    def _secret(self, variant: str) -> str:
        rng = self.rng
        alphabet = string.ascii_letters + string.digits
        if variant == "password":
            return self.english.password(length=rng.randint(8, 16))
        prefix = rng.choice(("sk_live_", "ghp_", "xoxb-", "AKIA", "pk_test_", "glpat-", ""))
        return prefix + "".join(rng.choices(alphabet, k=rng.randint(20, 36)))

    def _date_of_birth(self, variant: str) -> str:
        rng = self.rng
        born = self.english.date_of_birth(minimum_age=18, maximum_age=90)
        month_en = _MONTHS_EN[born.month - 1]
        forms: dict[str, Callable[[], str]] = {
            "iso": lambda: born.isoformat(),
            "dmy": lambda: f"{born.day:02d}/{born.month:02d}/{born.year}",
            "mdy": lambda: f"{born.month}/{born.day}/{born.year}",
            "abbrev": lambda: f"{born.day:02d}-{month_en[:3]}-{born.year}",
            "two_digit": lambda: f"{born.day} {month_en} {born.year % 100:02d}",
            "long": lambda: f"{month_en} {born.day}, {born.year}",
            "spelled": lambda: f"{month_en.lower()} {spelled_day(born.day)} "
            f"{spelled_year(born.year)}",
            "local": lambda: f"{born.day} {rng.choice(self.pools.months_local)[born.month - 1]} "
            f"{born.year}",
            "dots": lambda: f"{born.day:02d}.{born.month:02d}.{born.year}",
        }
        if variant in MORE_DOB_FORMS:
            return MORE_DOB_FORMS[variant](born, rng)
        if variant == "many":
            return MORE_DOB_FORMS[rng.choice(tuple(MORE_DOB_FORMS))](born, rng)
        return forms[variant or rng.choice(tuple(forms))]()

    def _ip_address(self, variant: str) -> str:
        return self.english.ipv6() if variant == "v6" else self.english.ipv4_public()

    def _username(self, variant: str) -> str:
        rng = self.rng
        base = self.english.user_name()
        if variant == "handle":
            return "@" + base
        if variant == "discord":
            return f"{base}#{rng.randint(1000, 9999)}"
        if variant == "shaped":
            return shaped_login(self.faker.first_name(), self.faker.last_name(),
                                 self.english.user_name(), rng)
        return base + (rng.choice(self.pools.handle_suffixes) if rng.random() < 0.3 else "")

    def _medical_id(self, variant: str) -> str:
        rng = self.rng
        if variant == "spoken":  # fourth round, `compose_voices.py` only
            return spoken_digits(list("".join(rng.choices(string.digits, k=rng.randint(7, 10)))),
                                 rng)
        if variant == "shaped":
            return shaped_id(rng)
        prefix = rng.choice(self.pools.medical_prefixes)
        return prefix + "".join(rng.choices(string.digits, k=rng.randint(6, 10)))

    def _license_plate(self, variant: str) -> str:
        if variant == "spoken":  # fourth round: 'l k one nine, x w p'
            plate = shaped_plate(self.rng)
            return " ".join(spoken_digits([c], self.rng) if c.isdigit() else c.lower()
                            for c in plate if c.isalnum())
        if variant == "shaped":
            return shaped_plate(self.rng)
        return str(self.faker.license_plate())

    def _personal_id(self, variant: str) -> str:
        rng = self.rng
        if variant == "vin":
            return str(self.english.vin())
        if variant == "imei":
            return _luhn_complete("".join(rng.choices(string.digits, k=14)))
        if variant == "shaped":
            return shaped_id(rng)
        if variant == "spoken":
            return spoken_digits(list("".join(rng.choices(string.digits, k=rng.randint(6, 9)))),
                                 rng)
        return rng.choice(self.pools.staff_prefixes) + "".join(
            rng.choices(string.digits, k=rng.randint(5, 8)))
