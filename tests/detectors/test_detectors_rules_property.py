"""The rule detector against naive reimplementations: deny-lists and validators."""

from __future__ import annotations

import datetime
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cacheprune.detectors import RuleDetector
from cacheprune.detectors.validators import (
    RECENT_YEARS,
    iban,
    ip_address,
    luhn,
    not_placeholder,
    payment_card,
    recent_date,
)

WORDS = ["ann", "Ann", "lee", "ANN-LEE", "bo", "annlee", "x1", "é"]
SEPARATORS = [" ", "  ", "\n", ", ", "-", ".", "_"]


def naive_deny_chars(text: str, phrases: list[str]) -> set[int]:
    """Characters of every case-insensitive, word-bounded occurrence, found position by position."""
    def is_word(ch: str) -> bool:
        return ch.isalnum() or ch == "_"

    chars: set[int] = set()
    folded = text.lower()
    for phrase in phrases:
        parts = phrase.lower().split()
        for start in range(len(text)):
            if start > 0 and is_word(text[start - 1]):
                continue
            at, ok = start, True
            for index, part in enumerate(parts):
                if index > 0:  # inner whitespace: one or more whitespace characters
                    run = at
                    while run < len(text) and text[run].isspace():
                        run += 1
                    if run == at:
                        ok = False
                        break
                    at = run
                if folded[at:at + len(part)] != part:
                    ok = False
                    break
                at += len(part)
            if ok and not (at < len(text) and is_word(text[at])):
                chars.update(range(start, at))
    return chars


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), max_size=25),
    st.lists(st.sampled_from(["ann", "lee", "ann lee", "ann-lee", "bo ann", "x1", "é"]),
             min_size=1, max_size=3, unique=True),
)
def test_deny_list_covers_exactly_what_a_naive_search_finds(pieces, phrases) -> None:
    text = "".join(word + sep for word, sep in pieces)
    detector = RuleDetector(spec={"default_threshold": 0.0, "rules": [
        {"name": "deny", "entity": "NAME", "deny_list": phrases}]})
    found = {i for s in detector.detect(text) for i in range(s.start, s.end)}
    assert found == naive_deny_chars(text, phrases)


def luhn_reference(digits: str) -> bool:
    """Luhn by its definition: double every second digit from the right, sum digit sums."""
    total = 0
    for position, ch in enumerate(reversed(digits)):
        doubled = int(ch) * (2 if position % 2 else 1)
        total += sum(int(d) for d in str(doubled))
    return total % 10 == 0


def test_luhn_and_iban_validators_against_their_definitions() -> None:
    rng = random.Random(5)
    for _ in range(500):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(12, 19)))
        assert luhn(digits) == luhn_reference(digits)
    for _ in range(300):
        country = rng.choice(["DE", "GB", "FR", "NL"])
        bban = "".join(rng.choice("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(18))
        check = f"{rng.randint(0, 99):02d}"
        candidate = country + check + bban
        # ISO 7064 mod 97-10, computed piecewise as a bank would, letters A=10 ... Z=35.
        remainder = 0
        for ch in candidate[4:] + candidate[:4]:
            for digit in str(int(ch, 36)):
                remainder = (remainder * 10 + int(digit)) % 97
        assert iban(candidate) == (remainder == 1)


def test_a_card_of_13_digits_is_visa_only_and_other_lengths_keep_the_luhn_check() -> None:
    rng = random.Random(7)
    for _ in range(500):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(12, 19)))
        expected = luhn_reference(digits) and (len(digits) != 13 or digits[0] == "4")
        assert payment_card(digits) == expected, digits
    # a millisecond timestamp that passes Luhn, and Visa's old 13-digit test number
    assert luhn("1741939200000") and not payment_card("1741939200000")
    assert payment_card("4222222222222") and payment_card("4111 1111 1111 1111")


@pytest.mark.parametrize(("address", "host"), [
    ("203.0.113.7", True), ("10.1.2.3", True), ("2001:db8::1", True),
    ("127.0.0.1", False), ("127.8.0.2", False), ("::1", False), ("0.0.0.0", False),
    ("::", False), ("999.1.1.1", False),
])
def test_ip_addresses_of_no_ones_host_are_not_private(address: str, host: bool) -> None:
    assert ip_address(address) is host


@pytest.mark.parametrize(("value", "secret"), [
    ("<your-token-here>", False), ("${DB_PASSWORD}", False), ("$EXAMPLE_API_KEY", False),
    ("{{ vault_password }}", False), ("%(password)s", False), ("%APPDATA%", False),
    ("********", False), ("xxxxxxxx", False),
    ("Tulip&Rain_88", True), ("<3Kittens!", True), ("$3cr3t-Pa55", True), ("x7$Gq", True),
    ("$unshine2024", True), ("<Tulip88>", True), ("%Secret1%", True),
])
def test_a_templates_placeholder_is_no_secret(value: str, secret: bool) -> None:
    assert not_placeholder(value) is secret


@given(st.integers(min_value=1900, max_value=2099))
def test_a_date_is_recent_from_the_years_just_past_on(year: int) -> None:
    this_year = datetime.date.today().year
    expected = year >= this_year - RECENT_YEARS
    for date in (f"14.03.{year}", f"{year}-03-14", f"14 March {year}", f"{year}年3月14日"):
        assert recent_date(date) is expected, date
    assert not recent_date("03/04/85")  # a two-digit year says nothing


def test_a_recent_date_needs_a_birth_word_an_older_one_does_not() -> None:
    this_year = datetime.date.today().year
    old, recent, ahead = this_year - 40, this_year - 1, this_year + 1
    detector = RuleDetector()

    def dates(text: str) -> list[str]:
        return sorted({text[s.start:s.end] for s in detector.detect(text) if s.entity == "DATE"})

    assert dates(f"Maria Lopez, 12/03/{old}") == [f"12/03/{old}"]
    assert dates(f"From 1 March {ahead} our saver rate changes.") == []
    assert dates(f"Invoice date: 14.03.{recent}") == []
    assert dates(f"Baby Nour, born 14.03.{recent}") == [f"14.03.{recent}"]
    assert dates(f"Date of birth: {recent}-01-02") == [f"{recent}-01-02"]


def test_a_doubtful_check_caps_a_rules_score_before_context() -> None:
    spec = {"rules": [{"name": "code", "entity": "CODE", "patterns": [
        {"regex": r"\b\d{4}-\d{2}-\d{2}\b", "score": 0.9}],
        "doubtful": "recent_date", "doubtful_score": 0.2, "context": ["code"]}]}
    detector = RuleDetector(spec=spec)
    this_year = datetime.date.today().year
    assert [s.score for s in detector.detect(f"1950-01-01 and {this_year}-01-01")] == [0.9]
    assert [round(s.score, 2) for s in detector.detect(f"code {this_year}-01-01")] == [0.55]
