"""The default policy on the project's labelled corpus and on real PII-free prose.

Token level, with the default model's tokenizer and the real mask path: a value counts only
when every token that overlaps it is private. Floors sit below the measured figures
(benchmarks/detectors_quality.py prints them) so that a regression fails.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from detector_corpora import PARTS, fully_masked, prose_documents, read_part, score_corpus

DATA_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
KIND_FLOOR = 0.95
OVERALL_FLOOR = 0.98
PROSE_CAP = 0.03


@pytest.fixture(scope="module")
def mask(default_policy, default_tokenizer):
    def run(text: str):
        offsets = [(int(s), int(e)) for s, e in default_tokenizer.encode(text).offsets]
        result = default_policy.mask(text, offsets)
        assert not result.detection.failed_closed, result.detection.reason
        return offsets, list(result.mask)

    return run


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


@pytest.mark.parametrize("part", PARTS)
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
