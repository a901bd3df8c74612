"""The learned detector's span confidence: a beam's marginal over the shipped weights, in [0, 1],
and `min_confidence` keeps a subset of the greedy spans."""

from __future__ import annotations

import pytest

from cacheprune.detectors import DetectorConfigError
from cacheprune.detectors.learned import LearnedDetector
from cacheprune.detectors.span_confidence import span_confidences

# Written for this test; labelled values the shipped weights find, and PII-free lines.
TEXTS = [
    "Employee ID: EMP-20931\nLogin: jdoe42\nMRN: 0048812",
    "Kind regards,\nMargaret Oyelaran-Smith\n+44 7700 900983",
    "Station STN-0043, Rotterdam; platform 4; build 1187 failed on arm64",
    "Passwort: Kupfer-Ahorn-Orbit17, Benutzername: m.oyelaran",
    "Dear Customer,\n\nYour access has been set up.\n\nCategory: Billing\nStatus: Open\n"
    "Password: ********\n\nKind regards,\nThe Service Desk",
]


@pytest.fixture(scope="module")
def detector() -> LearnedDetector:
    return LearnedDetector()


@pytest.mark.parametrize("text", TEXTS)
def test_confidences_are_probabilities_one_per_span(detector: LearnedDetector, text: str) -> None:
    doc = detector.nlp(text)
    confidences = span_confidences(detector.nlp, doc, list(doc.ents), beam_width=8)
    assert len(confidences) == len(doc.ents)
    assert all(0.0 <= c <= 1.0 for c in confidences)


def test_a_labelled_value_is_held_by_the_beam(detector: LearnedDetector) -> None:
    doc = detector.nlp(TEXTS[0])
    found = {entity.text: c for entity, c in
             zip(doc.ents, span_confidences(detector.nlp, doc, list(doc.ents), 8), strict=True)}
    assert found.get("jdoe42", 0.0) >= 0.9, found


@pytest.mark.parametrize("threshold", [0.5, 0.9, 0.99])
def test_min_confidence_keeps_a_subset_of_the_greedy_spans(detector: LearnedDetector,
                                                           threshold: float) -> None:
    sure = LearnedDetector(min_confidence=threshold)
    for text in TEXTS:
        every = {(s.start, s.end, s.entity) for s in detector.detect(text)}
        kept = {(s.start, s.end, s.entity) for s in sure.detect(text)}
        assert kept <= every


def test_a_stricter_threshold_never_keeps_more() -> None:
    loose, strict = LearnedDetector(min_confidence=0.5), LearnedDetector(min_confidence=0.99)
    for text in TEXTS:
        assert {(s.start, s.end) for s in strict.detect(text)} <= \
            {(s.start, s.end) for s in loose.detect(text)}


def test_confidence_options_are_checked_and_described() -> None:
    with pytest.raises(DetectorConfigError, match="min_confidence"):
        LearnedDetector(min_confidence=1.5)
    with pytest.raises(DetectorConfigError, match="beam_width"):
        LearnedDetector(min_confidence=0.9, beam_width=1)
    described = LearnedDetector(min_confidence=0.9, beam_width=4).describe()
    assert described["min_confidence"] == 0.9 and described["beam_width"] == 4
    assert described != LearnedDetector().describe()
