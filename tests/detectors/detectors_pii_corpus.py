"""A synthetic PII corpus with known character spans, and PII-free prose, for recall/precision.

Values are generated (valid checksums where real systems check them), so the ground truth is
the generator's own record of where it put each value, independent of any detector.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

FIRST = ["Jane", "Michael", "Priya", "Carlos", "Aisha", "Tomasz", "Emily", "Kenji", "Fatima",
         "Oliver", "Sofia", "Daniel", "Maria", "James", "Linda", "Robert"]
LAST = ["Doe", "Smith", "Patel", "Garcia", "Khan", "Nowak", "Johnson", "Tanaka", "Brown",
        "Williams", "Rossi", "Miller", "Anderson", "Taylor", "Moore", "Clark"]
STREETS = ["Maple", "Oak", "Cedar Hill", "Pine", "Elm", "Washington", "Lakeview", "Sunset"]
SUFFIXES = ["Street", "Avenue", "Road", "Lane", "Drive", "Boulevard", "Court", "Way"]
CITIES = [("Springfield", "IL"), ("Portland", "OR"), ("Austin", "TX"), ("Denver", "CO")]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]


@dataclass(frozen=True)
class Planted:
    entity: str
    start: int
    end: int


@dataclass(frozen=True)
class Sample:
    text: str
    planted: list[Planted]


def _luhn_complete(partial: str) -> str:
    total = 0
    for position, ch in enumerate(reversed(partial)):
        value = int(ch)
        if position % 2 == 0:  # these positions are doubled once the check digit is appended
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return partial + str((10 - total % 10) % 10)


def card(rng: random.Random) -> str:
    prefix, length = rng.choice([("4", 16), ("51", 16), ("55", 16), ("37", 15), ("6011", 16)])
    body = prefix + "".join(rng.choice("0123456789") for _ in range(length - len(prefix) - 1))
    digits = _luhn_complete(body)
    style = rng.choice(["plain", "spaces", "dashes"])
    if style == "plain" or length == 15:
        return digits
    sep = " " if style == "spaces" else "-"
    return sep.join(digits[i:i + 4] for i in range(0, 16, 4))


def iban(rng: random.Random) -> str:
    country, bban = rng.choice([
        ("DE", "".join(rng.choice("0123456789") for _ in range(18))),
        ("GB", "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(4))
         + "".join(rng.choice("0123456789") for _ in range(14))),
        ("FR", "".join(rng.choice("0123456789") for _ in range(23))),
    ])
    numeric = "".join(str(int(ch, 36)) for ch in bban + country + "00")
    check = 98 - int(numeric) % 97
    compact = f"{country}{check:02d}{bban}"
    if rng.random() < 0.5:
        return compact
    return " ".join(compact[i:i + 4] for i in range(0, len(compact), 4))


def ssn(rng: random.Random) -> str:
    area = rng.choice([a for a in range(1, 900) if a != 666])
    return f"{area:03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}"


def phone(rng: random.Random) -> str:
    a, b, c = rng.randint(201, 989), rng.randint(200, 999), rng.randint(0, 9999)
    return rng.choice([
        f"({a}) {b}-{c:04d}", f"{a}-{b}-{c:04d}", f"{a}.{b}.{c:04d}", f"+1 {a} {b} {c:04d}",
        f"+44 20 {rng.randint(7000, 8999)} {rng.randint(0, 9999):04d}",
        f"+49 30 {rng.randint(100000, 999999)}", f"+33 1 {b % 100:02d} {a % 100:02d} "
        f"{c % 100:02d} {(c // 100):02d}",
    ])


def ip(rng: random.Random) -> str:
    if rng.random() < 0.7:
        return ".".join(str(rng.randint(1, 254)) for _ in range(4))
    return "2001:db8:" + ":".join(f"{rng.randint(0, 65535):x}" for _ in range(3)) + "::" + \
        f"{rng.randint(1, 65535):x}"


def date(rng: random.Random) -> str:
    y, m, d = rng.randint(1940, 2005), rng.randint(1, 12), rng.randint(1, 28)
    return rng.choice([f"{m:02d}/{d:02d}/{y}", f"{y}-{m:02d}-{d:02d}", f"{MONTHS[m - 1]} {d}, {y}",
                       f"{d} {MONTHS[m - 1]} {y}"])


def address(rng: random.Random) -> str:
    city, state = rng.choice(CITIES)
    return (f"{rng.randint(1, 9999)} {rng.choice(STREETS)} {rng.choice(SUFFIXES)}, {city}, "
            f"{state} {rng.randint(10000, 99999)}")


def email(rng: random.Random) -> str:
    first, last = rng.choice(FIRST).lower(), rng.choice(LAST).lower()
    return f"{first}{rng.choice(['.', '_', ''])}{last}{rng.randint(1, 99)}@" + \
        rng.choice(["example.com", "mail.example.org", "corp.example.co.uk"])


def name(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


GENERATORS = {
    "PERSON": (name, ["Please forward this to {} before the meeting.",
                      "Yesterday {} asked about the refund.", "The form was signed by {}."]),
    "EMAIL_ADDRESS": (email, ["You can write to {} for details.", "My e-mail is {}."]),
    "PHONE_NUMBER": (phone, ["Call me on {} after six.", "My phone number is {}."]),
    "CREDIT_CARD": (card, ["Charge it to card {} please.", "The card number is {}."]),
    "US_SSN": (ssn, ["My social security number is {}.", "SSN: {}"]),
    "IBAN_CODE": (iban, ["Transfer it to {} by Monday.", "IBAN {} belongs to me."]),
    "IP_ADDRESS": (ip, ["The server at {} went down.", "Login came from {} again."]),
    "DATE": (date, ["I was born on {}.", "Date of birth: {}"]),
    "STREET_ADDRESS": (address, ["Send the parcel to {}.", "I moved to {} last year."]),
}


def corpus(entity: str, count: int, seed: int = 7) -> list[Sample]:
    rng = random.Random(f"{entity}-{seed}")
    make, templates = GENERATORS[entity]
    samples = []
    for _ in range(count):
        template = rng.choice(templates)
        value = make(rng)
        prefix = template[:template.index("{}")]
        samples.append(Sample(template.format(value),
                              [Planted(entity, len(prefix), len(prefix) + len(value))]))
    return samples


# Written for these tests: technical prose with numbers, versions, years, percentages and
# section references (what a shared document looks like) and no personal data at all.
PROSE = """\
Section 3.2 describes the training setup. We fine-tune the model for 3 epochs with a learning \
rate of 2e-5 and a batch size of 32, following the schedule of Table 4. Accuracy rose from 71.4% \
to 78.9% on the development split, while the test split (n = 1,204) improved by 6.1 points.
In 2019 the benchmark was extended to 12 languages; version 2.1.0 of the toolkit adds 4,096-token \
contexts. Figure 7 plots perplexity against the number of layers (6, 12, 24 and 48) and shows \
diminishing returns beyond 24 layers. The ablation in Appendix B removes one component at a time.
The committee met on Tuesday to review the budget for the next quarter. Costs fell by 12 percent \
after the migration, and the team expects another 5 to 8 percent once the old cluster is retired.
Attention heads in the middle layers attend mostly to the previous token, whereas heads in the \
last layers spread their weight over the whole sequence. We release code and data under an open \
license; see the repository for instructions. Results are averaged over 5 seeds (standard \
deviation below 0.3).
The river rises in the northern hills and flows for about 240 kilometres before it reaches the \
sea. Farmers along its banks grow wheat, barley and sunflowers, and the harvest usually starts in \
late July. A new bridge, 1.2 km long, opened in 2021 and cut travel times by a third.
The function returns a list of pairs; each pair holds the start and end offset of a match. If \
the input is empty, the list is empty. Complexity is O(n log n) in the length of the input, and \
memory grows linearly. Version 3.11 of the language made the interpreter about 25% faster.
The story follows a young sailor who leaves his village to find work in the harbour city. After \
a storm wrecks his ship he spends two winters on an island, learns to fish, and finally returns \
home, where nobody recognises him at first.
Throughput reached 340,000 characters per second on one core; the median latency was 12.5 ms \
and the 99th percentile 41 ms. Table 2 lists results for inputs of 1k, 4k and 16k tokens, and \
ratios of 1.8x to 4.5x over the baseline.
"""
