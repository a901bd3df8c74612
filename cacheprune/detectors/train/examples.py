"""Labelled examples: templates rendered into text with character-offset labels, and JSONL.

A template is text with fields: `{KIND}` or `{KIND:variant}` is a private value of that label
(see `values.LABELS`), `{_name}` is PII-free filler (a public UUID, an ISO date in docs, a
company, a product, a number; versions, standards and measures of `public_text`; `{_public}` a
whole PII-free text). Labels are character offsets into the rendered text.
"""

from __future__ import annotations

import json
import random
import re
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from cacheprune.detectors.train.public_text import PUBLIC_FILLERS, PUBLIC_NEGATIVES
from cacheprune.detectors.train.values import LABELS, ValueMaker

_FIELD = re.compile(r"\{([A-Z_]+|_[a-z]+)(?::([a-z_0-9]+))?\}")


@dataclass(slots=True)
class Example:
    """One rendered text; `spans` are (start, end, label) character offsets into `text`."""

    text: str
    spans: list[tuple[int, int, str]]
    genre: str
    locale: str
    split: str
    values: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps({"text": self.text, "spans": self.spans, "genre": self.genre,
                           "locale": self.locale, "split": self.split}, ensure_ascii=False)

    @staticmethod
    def from_json(line: str) -> Example:
        data = json.loads(line)
        return Example(data["text"], [tuple(s) for s in data["spans"]], data["genre"],
                       data["locale"], data["split"])


def _filler(name: str, maker: ValueMaker) -> str:
    rng, english = maker.rng, maker.english
    fillers = {
        "uuid": lambda: str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "isodate": lambda: f"20{rng.randint(10, 29)}-{rng.randint(1, 12):02d}-"
        f"{rng.randint(1, 28):02d}",
        "time": lambda: f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}",
        "org": lambda: english.company(),
        "product": lambda: rng.choice(("Postgres 16", "the billing API", "Kubernetes", "Excel",
                                       "the iOS app", "our VPN", "Outlook", "the router")),
        "num": lambda: str(rng.randint(2, 9999)),
        "version": lambda: f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}",
        "hex": lambda: f"{rng.getrandbits(28):07x}",
        "city": lambda: maker.faker.city(),
        "word": lambda: english.word(),
        "sentence": lambda: english.sentence(),
        "localtext": lambda: maker.faker.text(max_nb_chars=rng.randint(60, 200)),
        "public": lambda: _public_text(maker),
    }
    if name in PUBLIC_FILLERS:
        return PUBLIC_FILLERS[name](rng)
    return fillers[name]()


def _public_text(maker: ValueMaker) -> str:
    """A whole PII-free text of `public_text.PUBLIC_NEGATIVES`, its fields filled."""
    genre = pick(maker.rng, tuple(PUBLIC_NEGATIVES))
    return render(pick(maker.rng, PUBLIC_NEGATIVES[genre]), maker, genre, "").text


def render(template: str, maker: ValueMaker, genre: str, split: str) -> Example:
    """The template with every field filled; labelled spans where the field is a private kind."""
    pieces: list[str] = []
    spans: list[tuple[int, int, str]] = []
    length = cursor = 0
    for match in _FIELD.finditer(template):
        literal = template[cursor:match.start()]
        pieces.append(literal)
        length += len(literal)
        kind, variant = match.group(1), match.group(2) or ""
        if kind.startswith("_"):
            value = _filler(kind[1:], maker)
        else:
            if kind not in LABELS:
                raise ValueError(f"template field {{{kind}}} is not a label: {template[:60]!r}")
            value = maker.make(kind, variant).strip()
            spans.append((length, length + len(value), kind))
        pieces.append(value)
        length += len(value)
        cursor = match.end()
    pieces.append(template[cursor:])
    return Example("".join(pieces), spans, genre, maker.locale, split)


def lowercased(example: Example) -> Example:
    """The same example in lower case (chats, SMS), where lower-casing keeps every offset."""
    lower = example.text.lower()
    if len(lower) != len(example.text):
        return example
    return Example(lower, example.spans, example.genre, example.locale, example.split)


def write_jsonl(examples: Iterable[Example], path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for example in examples:
            out.write(example.to_json() + "\n")
            count += 1
    return count


def read_jsonl(path: Path) -> Iterator[Example]:
    with path.open(encoding="utf-8") as rows:
        for line in rows:
            if line.strip():
                yield Example.from_json(line)


def pick(rng: random.Random, items: tuple[str, ...]) -> str:
    return items[rng.randrange(len(items))]
