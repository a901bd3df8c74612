"""The default policy on the project's labelled corpus and on real PII-free prose.

Token level, with the default model's tokenizer and the real mask path: a value counts only
when every token that overlaps it is private. Floors sit below the measured figures
(benchmarks/detectors_quality.py prints them, and the blind part's missed values) so that a
regression fails.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from detector_corpora import (
    AUTHOR_PARTS,
    BLIND_PART,
    PARTS,
    fully_masked,
    prose_documents,
    read_part,
    score_corpus,
    score_pii_free,
)

DATA_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
KIND_FLOOR = 0.95
OVERALL_FLOOR = 0.98
PROSE_CAP = 0.03
# The blind part (written without reading the detectors): per kind, the share reached after the
# gaps it showed were closed, less one more miss. Before any fix it measured 73.5% overall.
BLIND_FLOORS = {
    "ACCOUNT": 0.85, "ADDRESS": 0.98, "CARD": 0.92, "DOB": 0.96, "EMAIL": 0.95, "IBAN": 0.95,
    "ID": 0.98, "IP": 0.9, "MAC": 0.8, "MEDICAL": 0.94, "NAME": 0.94, "PHONE": 0.98,
    "PLATE": 0.88, "SECRET": 0.95, "USERNAME": 0.86,
}
BLIND_OVERALL_FLOOR = 0.97
# Tokens masked in the blind part's PII-free messages (ordinary words that are names, citations,
# versions, hashes of public commits): by the rules alone measured 2.8% (11.5% before the
# fixes); the default policy's token tagger adds its own (8.0% with the seventh-round weights:
# prices and times in Romance languages, a Spanish date, a greeting).
BLIND_PII_FREE_CAP = {"rules": 0.05, "default": 0.09}


def _masker(policy, tokenizer):
    def run(text: str):
        offsets = [(int(s), int(e)) for s, e in tokenizer.encode(text).offsets]
        result = policy.mask(text, offsets)
        assert not result.detection.failed_closed, result.detection.reason
        return offsets, list(result.mask)

    return run


@pytest.fixture(scope="module")
def mask(default_policy, default_tokenizer):
    return _masker(default_policy, default_tokenizer)


def test_corpus_reader_recovers_each_marked_value() -> None:
    # The reader's offsets against a naive search for each value in the marked line.
    for part in PARTS:
        for message in read_part(part):
            for value in message.values:
                assert message.text[value.start:value.end] in message.text
                assert "[[" not in message.text and "]]" not in message.text


def test_fully_masked_needs_every_overlapping_token() -> None:
    from detector_corpora import Value

    offsets = [(0, 3), (3, 7), (7, 10)]
    value = Value("NAME", 2, 8)  # overlaps all three tokens
    assert fully_masked(value, offsets, [True, True, True])
    assert not fully_masked(value, offsets, [True, True, False])
    assert fully_masked(Value("NAME", 3, 7), offsets, [False, True, False])


@pytest.mark.parametrize("part", AUTHOR_PARTS)
def test_every_kind_is_masked_on_the_corpus(mask, part: str) -> None:
    outcomes = score_corpus(mask, [part])
    by_kind: dict[str, list[bool]] = defaultdict(list)
    for outcome in outcomes:
        by_kind[outcome.kind].append(outcome.masked)
    missed = [(o.kind, o.value) for o in outcomes if not o.masked]
    overall = sum(o.masked for o in outcomes) / len(outcomes)
    assert overall >= OVERALL_FLOOR, f"{part}: {overall:.1%} fully masked; missed {missed}"
    for kind, flags in by_kind.items():
        share = sum(flags) / len(flags)
        assert share >= KIND_FLOOR, f"{part} {kind}: {share:.1%}; missed {missed}"


def test_the_blind_part_stays_above_its_floors(mask) -> None:
    outcomes = score_corpus(mask, [BLIND_PART])
    by_kind: dict[str, list[bool]] = defaultdict(list)
    for outcome in outcomes:
        by_kind[outcome.kind].append(outcome.masked)
    assert set(by_kind) == set(BLIND_FLOORS)
    overall = sum(o.masked for o in outcomes) / len(outcomes)
    assert overall >= BLIND_OVERALL_FLOOR, f"blind: {overall:.1%} fully masked"
    for kind, flags in by_kind.items():
        share = sum(flags) / len(flags)
        assert share >= BLIND_FLOORS[kind], f"blind {kind}: {share:.1%} fully masked"


@pytest.mark.parametrize("policy_name", list(BLIND_PII_FREE_CAP))
def test_the_blind_parts_pii_free_messages_stay_mostly_public(
        policy_name, default_policy, rules_policy, default_tokenizer) -> None:
    policy = default_policy if policy_name == "default" else rules_policy
    results = score_pii_free(_masker(policy, default_tokenizer), [BLIND_PART])
    assert len(results) >= 30
    masked = sum(r.num_masked for r in results)
    total = sum(r.num_tokens for r in results)
    assert masked / total <= BLIND_PII_FREE_CAP[policy_name], f"{masked}/{total} tokens masked"


def test_little_of_real_pii_free_prose_is_masked(default_policy, default_tokenizer) -> None:
    if not DATA_DIR.is_dir():
        pytest.skip(f"PII-free prose needs the shared data sets at {DATA_DIR} "
                    "(QASPER and NarrativeQA, as CI has them at ../shared/datasets)")
    documents = prose_documents(DATA_DIR, num_papers=4, num_stories=1, chars_per_doc=8000)
    total = private = 0
    for label, text in documents:
        offsets = [(int(s), int(e)) for s, e in default_tokenizer.encode(text).offsets]
        result = default_policy.mask(text, offsets)
        assert not result.detection.failed_closed, f"{label}: {result.detection.reason}"
        total += len(offsets)
        private += result.num_private
    assert private / total <= PROSE_CAP, f"{private}/{total} tokens of prose masked"
