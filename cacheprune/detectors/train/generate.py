"""Generate a split of labelled examples from a seed: genres x locales x value forms.

`generate_split("train" | "heldout", count, seed)` is deterministic for a given seed and
installed Faker release. The training split mixes positive genres, forms in 18 languages and
PII-free negatives of the same genres; the held-out split uses only `heldout.py`'s templates,
locales and pools.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from cacheprune.detectors.train.examples import Example, lowercased, pick, render
from cacheprune.detectors.train.genres import (
    FORM_LABELS,
    NEGATIVE_TEMPLATES,
    TRAIN_GENRES,
    TRAIN_LOCALES,
    TRAIN_POOLS,
    Genre,
    form_templates,
)
from cacheprune.detectors.train.heldout import (
    HELDOUT_GENRES,
    HELDOUT_LOCALES,
    HELDOUT_NEGATIVES,
    HELDOUT_POOLS,
)
from cacheprune.detectors.train.mixing import field_record, with_context
from cacheprune.detectors.train.public_text import PUBLIC_NEGATIVES
from cacheprune.detectors.train.values import ValueMaker, ValuePools

SPLITS = ("train", "heldout")


@dataclass(frozen=True, slots=True)
class _SplitSpec:
    genres: dict[str, Genre]
    negatives: dict[str, tuple[str, ...]]
    locales: tuple[str, ...]
    pools: ValuePools
    form_share: float
    negative_share: float
    field_share: float      # key/value records in many layouts (training only)
    context_share: float    # positives set inside unrelated text (training only)


_SPECS = {
    # NOTE: 30% negatives (25% in the first round, which masked 13.6% of the tokens of PII-free
    # messages): numbers, versions and names of public things, papers, stories, other languages.
    "train": _SplitSpec(TRAIN_GENRES, {**NEGATIVE_TEMPLATES, **PUBLIC_NEGATIVES}, TRAIN_LOCALES,
                        TRAIN_POOLS, 0.1, 0.3, 0.25, 0.4),
    "heldout": _SplitSpec(HELDOUT_GENRES, HELDOUT_NEGATIVES, HELDOUT_LOCALES, HELDOUT_POOLS,
                          0.0, 0.25, 0.0, 0.0),
}


def generate_split(split: str, count: int, seed: int) -> list[Example]:
    if split not in _SPECS:
        raise ValueError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    if count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    spec = _SPECS[split]
    rng = random.Random(f"{split}:{seed}")
    makers: dict[str, ValueMaker] = {}
    examples = []
    for _ in range(count):
        locale = pick(rng, spec.locales)
        if locale not in makers:
            makers[locale] = ValueMaker(locale, random.Random(rng.random()), spec.pools)
        maker = makers[locale]
        roll = rng.random()
        if roll < spec.negative_share:
            genre = pick(rng, tuple(spec.negatives))
            example = render(pick(rng, spec.negatives[genre]), maker, f"negative-{genre}", split)
        elif roll < spec.negative_share + spec.field_share:
            example = field_record(maker, rng)
        elif roll < spec.negative_share + spec.field_share + spec.form_share:
            language = locale[:2] if locale[:2] in FORM_LABELS else "en"
            example = render(pick(rng, form_templates(language)), maker, "form", split)
        else:
            genre = pick(rng, tuple(spec.genres))
            example = render(pick(rng, spec.genres[genre].templates), maker, genre, split)
            if rng.random() < spec.genres[genre].lowercase_share:
                example = lowercased(example)
        if example.spans and rng.random() < spec.context_share:
            example = with_context(example, maker, rng)
        examples.append(example)
    return examples
