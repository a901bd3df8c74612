"""The learned detector's training data: the held-out split stays apart from training, composed
texts leave no placeholder behind, and labels cover the values they name."""

from __future__ import annotations

import random
import re

import pytest

from cacheprune.detectors.train.generate import generate_split
from cacheprune.detectors.train.genres import TRAIN_LOCALES
from cacheprune.detectors.train.heldout import HELDOUT_GENRES, HELDOUT_LOCALES
from cacheprune.detectors.train.value_shapes import spoken_digits
from cacheprune.detectors.train.values import LABELS

_WORD_DIGITS = {"oh": "0", "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4",
                "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9"}


@pytest.fixture(scope="module")
def train_examples():
    return generate_split("train", 3000, seed=11)


def test_heldout_locales_are_not_trained_on() -> None:
    assert not set(HELDOUT_LOCALES) & set(TRAIN_LOCALES)


def test_no_heldout_wording_reaches_training(train_examples) -> None:
    # Literal stretches of the held-out templates (fields removed), searched naively.
    pieces = {piece.strip() for genre in HELDOUT_GENRES.values() for template in genre.templates
              for piece in re.split(r"\{[^}]*\}", template) if len(piece.strip()) >= 24}
    assert pieces
    leaked = {piece for piece in pieces for example in train_examples if piece in example.text}
    assert not leaked


def test_composed_examples_leave_no_placeholder(train_examples) -> None:
    leftovers = re.compile(r"\{(?:" + "|".join(LABELS) + r")(?::[a-z_0-9]*)?\}|\{_[a-z]+\}"
                           r"|%[NADSELV]%")
    bad = [e.text for e in train_examples if leftovers.search(e.text)
           and "SECRET" not in {label for *_, label in e.spans}]
    assert not bad


def test_spans_are_whole_trimmed_values_of_every_label(train_examples) -> None:
    seen = set()
    for example in train_examples:
        for start, end, label in example.spans:
            value = example.text[start:end]
            assert value and value == value.strip(), (label, value)
            seen.add(label)
    assert seen == set(LABELS)
    genres = {example.genre for example in train_examples}
    assert {"names", "dob", "ids", "negative-code", "negative-prose"} <= genres


@pytest.mark.parametrize("digits", ["07700913482", "5550001", "1112223334", "90210"])
def test_spoken_digits_read_back_to_the_digits(digits: str) -> None:
    for seed in range(20):
        spoken = spoken_digits(list(digits), random.Random(seed))
        out, repeat = "", 1
        for word in spoken.replace(",", "").split():
            if word in ("double", "triple"):
                repeat = 2 if word == "double" else 3
                continue
            out += _WORD_DIGITS[word] * repeat
            repeat = 1
        assert out == digits, spoken


@pytest.mark.parametrize(("text", "tokens"), [
    # Han, kana and Hangul characters are tokens of their own (a reference: the characters).
    ("我叫王伟", list("我叫王伟")),
    ("김민준입니다", list("김민준입니다")),
    ("佐々木です", list("佐々木です")),
    # Field separators between two characters split them; a separator before a space does not.
    ("STN-0042,Harbour;x|y", ["STN-0042", ",", "Harbour", ";", "x", "|", "y"]),
    ("mint=1736344800000", ["mint", "=", "1736344800000"]),
    ("red, green", ["red", ",", "green"]),
])
def test_training_tokenizer_splits_cjk_characters_and_fields(text: str, tokens: list[str]) -> None:
    pytest.importorskip("spacy")
    from cacheprune.detectors.train.fit import blank_pipeline

    assert [token.text for token in blank_pipeline()(text)] == tokens
