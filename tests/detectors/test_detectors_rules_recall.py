"""Recall of the shipped rules per entity type on generated PII, precision on PII-free prose."""

from __future__ import annotations

import numpy as np
import pytest
from detectors_pii_corpus import PROSE, corpus

from cacheprune.detectors import Span

# Entities the rules are meant to find on their own (names need Presidio or a deny-list).
RULE_ENTITIES = ["EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "US_SSN", "IBAN_CODE",
                 "IP_ADDRESS", "DATE", "STREET_ADDRESS"]


def covered(spans: list[Span], start: int, end: int) -> bool:
    """Every character of [start, end) lies in some span (checked one character at a time)."""
    return all(any(s.start <= i < s.end for s in spans) for i in range(start, end))


@pytest.fixture(scope="module")
def policy(rules_policy):
    return rules_policy  # the rules on their own: the default policy's tagger adds its spans


@pytest.mark.parametrize("entity", RULE_ENTITIES)
def test_rules_find_every_planted_value(policy, entity: str) -> None:
    samples = corpus(entity, 40)
    missed = []
    for sample in samples:
        spans = policy.chain.run(sample.text).spans
        for planted in sample.planted:
            if not covered(spans, planted.start, planted.end):
                missed.append(sample.text[planted.start:planted.end])
    recall = 1 - len(missed) / len(samples)
    assert recall >= 0.95, f"{entity}: recall {recall:.2f}; missed e.g. {missed[:5]}"


def test_rules_mask_little_of_pii_free_prose(policy) -> None:
    words = PROSE.split(" ")
    offsets, cursor = [], 0
    for word in words:  # whitespace-led word pieces stand in for tokens here
        offsets.append((cursor, cursor + len(word) + 1))
        cursor += len(word) + 1
    mask = policy.mask(PROSE, offsets).mask
    assert mask.mean() <= 0.02, [PROSE[s:e] for (s, e), m in zip(offsets, mask, strict=True) if m]


def test_invalid_checksums_are_not_reported(policy) -> None:
    # One digit off: the Luhn and mod-97 checks fail, so these are ordinary numbers.
    text = "order 4111 1111 1111 1112 and ref GB82 WEST 1234 5698 7654 33 and 000-12-3456"
    assert policy.chain.run(text).spans == []


def test_context_words_raise_ambiguous_numbers_over_the_threshold(policy) -> None:
    bare = "reference 123456789 attached"
    with_context = "my SSN is 123456789 attached"
    # a bare 9-digit run is an account-like number, but only the context word makes it an SSN
    assert "US_SSN" not in {s.entity for s in policy.chain.run(bare).spans}
    spans = policy.chain.run(with_context).spans
    assert ("US_SSN", "123456789") in {(s.entity, with_context[s.start:s.end]) for s in spans}


def test_account_numbers_need_context_unless_long(policy) -> None:
    def found(text: str) -> list[str]:
        return [text[s.start:s.end] for s in policy.chain.run(text).spans
                if s.entity == "ACCOUNT_NUMBER"]

    assert found("My account number is 48213907.") == ["48213907"]
    assert found("The corpus has 1200000 sentences in total.") == []
    assert found("Wire it to 004512339876 today.") == ["004512339876"]


def test_secret_rule_reports_only_the_value(policy) -> None:
    text = "config: password = 'correct-horse-9' done"
    spans = policy.chain.run(text).spans
    assert [text[s.start:s.end] for s in spans] == ["correct-horse-9"]


def test_mask_matches_a_character_level_reference_on_a_mixed_text(policy) -> None:
    samples = [s for entity in RULE_ENTITIES for s in corpus(entity, 3, seed=11)]
    text = " ".join(s.text for s in samples)
    spans = policy.chain.run(text).spans
    char_offsets = [(i, i + 1) for i in range(len(text))]
    mask = policy.mask(text, char_offsets).mask
    expected = np.array([any(s.start <= i < s.end for s in spans) for i in range(len(text))])
    assert np.array_equal(mask, expected)
