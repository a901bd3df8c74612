"""Synthetic private details: names, e-mails, phones, IBAN account ids, addresses, birth dates.

Everything is generated from a seeded `random.Random`; nothing is a real person's data. The
formats are chosen so that cacheprune's shipped rule detectors can find them (names follow
'my name is' or a title, e-mails use the reserved example.* domains, phones use the 555
exchange, account ids are IBANs with a valid mod-97 checksum, addresses end in a street suffix
and a ZIP code), so that a run without Presidio still has every private value masked.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable

FIRST_NAMES = (
    "Avery", "Bianca", "Caspian", "Delphine", "Emeric", "Fenella", "Gideon", "Hollis",
    "Imogen", "Jasper", "Kestrel", "Linnea", "Marius", "Nerissa", "Orrin", "Petra",
    "Quillon", "Rosalind", "Silas", "Tamsin", "Ulric", "Verity", "Wendell", "Xanthe",
    "Yorick", "Zinnia", "Anselm", "Briony", "Cormac", "Damaris", "Evander", "Florian",
)  # fmt: skip
LAST_NAMES = (
    "Ashdown", "Birchall", "Calloway", "Dunmore", "Ellery", "Fairweather", "Greaves",
    "Halloran", "Ingleby", "Jessop", "Kettering", "Lockhart", "Merriman", "Northcott",
    "Oakes", "Pennington", "Quarrie", "Rutherford", "Standish", "Thackeray", "Underhill",
    "Vance", "Whitlock", "Yardley", "Abernethy", "Blackwood", "Coldwell", "Drummond",
)  # fmt: skip
STREET_WORDS = (
    "Maple Hollow", "Quarry", "Linden", "Old Mill", "Heron", "Juniper", "Foxglove",
    "Saltmarsh", "Copper Beech", "Wren", "Lantern", "Orchard View", "Thistle", "Harrow",
)  # fmt: skip
STREET_SUFFIXES = ("Street", "Avenue", "Road", "Lane", "Drive", "Court", "Way", "Terrace")
CITIES = (
    ("Eastbrook", "OR"), ("Millhaven", "VT"), ("Cedar Falls", "MN"), ("Port Aldric", "ME"),
    ("Ravensworth", "OH"), ("Glenmoor", "CO"), ("Westfield Springs", "NC"), ("Amberly", "WI"),
)  # fmt: skip
MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August",
    "September", "October", "November", "December",
)  # fmt: skip
# RFC 2606 reserves these for examples: no generated address can reach a real mailbox.
EMAIL_DOMAINS = ("example.com", "example.org", "example.net")


def person_name(rng: random.Random) -> str:
    return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"


def email(rng: random.Random) -> str:
    first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
    return f"{first.lower()}.{last.lower()}{rng.randint(10, 99)}@{rng.choice(EMAIL_DOMAINS)}"


def phone(rng: random.Random) -> str:
    # NOTE: 555 numbers are the exchange reserved for fiction; area codes never start 0/1.
    area = f"{rng.randint(2, 9)}{rng.randint(0, 8)}{rng.randint(0, 9)}"
    return f"({area}) 555-{rng.randint(0, 9999):04d}"


def iban(rng: random.Random) -> str:
    """A German-shaped IBAN (18-digit BBAN) whose check digits satisfy ISO 13616 mod 97."""
    bban = "".join(str(rng.randint(0, 9)) for _ in range(18))
    country = "DE"
    # Letters count as 10..35; the check digits make (BBAN + country + check) % 97 == 1.
    as_number = int(bban + "".join(str(int(ch, 36)) for ch in country) + "00")
    check = 98 - as_number % 97
    compact = f"{country}{check:02d}{bban}"
    return " ".join(compact[i : i + 4] for i in range(0, len(compact), 4))


def street_address(rng: random.Random) -> str:
    city, state = rng.choice(CITIES)
    street = f"{rng.choice(STREET_WORDS)} {rng.choice(STREET_SUFFIXES)}"
    return f"{rng.randint(12, 9899)} {street}, {city}, {state} {rng.randint(10000, 99899)}"


def birth_date(rng: random.Random) -> str:
    return f"{rng.choice(MONTHS)} {rng.randint(1, 28)}, {rng.randint(1950, 2004)}"


GENERATORS: dict[str, Callable[[random.Random], str]] = {
    "name": person_name,
    "email": email,
    "phone": phone,
    "account": iban,
    "address": street_address,
    "birth_date": birth_date,
}


class UniqueValues:
    """Draws values that are new to the whole workload and absent from every document.

    Unique values make leakage attributable: a recovered string points at one slot of one
    request, and cannot have come from the public document instead.
    """

    MAX_ATTEMPTS = 1000

    def __init__(self, rng: random.Random, public_texts: Iterable[str]) -> None:
        self._rng = rng
        self._public_texts = list(public_texts)
        self._used: set[str] = set()

    def draw(self, kind: str) -> str:
        if kind not in GENERATORS:
            raise ValueError(f"unknown private value kind {kind!r}; kinds: {sorted(GENERATORS)}")
        for _ in range(self.MAX_ATTEMPTS):
            value = GENERATORS[kind](self._rng)
            if value not in self._used and not any(value in t for t in self._public_texts):
                self._used.add(value)
                return value
        raise RuntimeError(
            f"no new {kind!r} value after {self.MAX_ATTEMPTS} draws; the workload is too large "
            "for the synthetic name lists"
        )
