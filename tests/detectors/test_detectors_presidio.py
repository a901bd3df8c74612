"""Presidio on the small spaCy model, offline: recall, precision, thresholds, clear errors."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from detectors_pii_corpus import PROSE, corpus

pytest.importorskip("presidio_analyzer", reason="the presidio extra is not installed")

from cacheprune.detectors import DetectorConfigError, Span  # noqa: E402
from cacheprune.detectors.presidio_detector import PresidioDetector  # noqa: E402

PRESIDIO_ENTITIES = ["PERSON", "EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE",
                     "IP_ADDRESS"]
ALL_ENTITIES = [*PRESIDIO_ENTITIES, "US_SSN", "DATE", "STREET_ADDRESS"]


def covered(spans: list[Span], start: int, end: int) -> bool:
    return all(any(s.start <= i < s.end for s in spans) for i in range(start, end))


@pytest.fixture(scope="module")
def presidio() -> PresidioDetector:
    return PresidioDetector()


@pytest.fixture(scope="module")
def combined_policy(default_policy):
    return default_policy  # rules, phones, secrets, names and Presidio


def recall(detect, entity: str, count: int = 20) -> tuple[float, list[str]]:
    samples = corpus(entity, count, seed=3)
    missed = [s.text for s in samples for p in s.planted
              if not covered(detect(s.text), p.start, p.end)]
    return 1 - len(missed) / len(samples), missed


@pytest.mark.parametrize("entity", PRESIDIO_ENTITIES)
def test_presidio_alone_finds_its_entities(presidio, entity: str) -> None:
    found, missed = recall(presidio.detect, entity)
    assert found >= 0.9, f"{entity}: recall {found:.2f}; missed e.g. {missed[:3]}"


@pytest.mark.parametrize("entity", ALL_ENTITIES)
def test_rules_and_presidio_together_find_every_type(combined_policy, entity: str) -> None:
    found, missed = recall(lambda text: combined_policy.chain.run(text).spans, entity)
    assert found >= 0.95, f"{entity}: recall {found:.2f}; missed e.g. {missed[:3]}"


def test_precision_on_pii_free_prose(combined_policy) -> None:
    offsets, cursor = [], 0
    for word in PROSE.split(" "):
        offsets.append((cursor, cursor + len(word) + 1))
        cursor += len(word) + 1
    mask = combined_policy.mask(PROSE, offsets).mask
    assert mask.mean() <= 0.03, [PROSE[s:e] for (s, e), m in zip(offsets, mask, strict=True) if m]


def test_per_entity_thresholds_keep_phone_numbers_without_context(presidio) -> None:
    text = "Ring 212-555-0187 tomorrow."
    assert any(s.entity == "PHONE_NUMBER" for s in presidio.detect(text))
    strict = PresidioDetector(thresholds={}, default_threshold=0.5)  # shares the analyzer
    assert not any(s.entity == "PHONE_NUMBER" for s in strict.detect(text))


def test_no_network_access(presidio, monkeypatch) -> None:
    attempts: list[object] = []

    def refuse(self, address):  # a network fault injected on purpose
        attempts.append(address)
        raise OSError("network is unreachable in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    text = "Write to priya.patel@mail.example.org today."
    spans = PresidioDetector(entities=["EMAIL_ADDRESS"]).detect(text)
    assert [text[s.start:s.end] for s in spans] == ["priya.patel@mail.example.org"]
    assert attempts == []


def test_missing_spacy_model_and_unknown_entity_are_clear_errors(presidio) -> None:
    with pytest.raises(DetectorConfigError, match=r"spaCy model 'en_core_web_xx_missing'.*"
                       r"cacheprune\[presidio\]"):
        PresidioDetector(model="en_core_web_xx_missing")
    with pytest.raises(DetectorConfigError, match=r"does not recognise entities \['PASSWORD'\]"):
        PresidioDetector(entities=["PASSWORD"])
    with pytest.raises(DetectorConfigError, match="has no components"):
        PresidioDetector(disabled_components=["sentiment"])
    # Nothing else is affected: the detector built before still works.
    text = "Ask Jane Doe."
    assert [(s.entity, text[s.start:s.end]) for s in presidio.detect(text)] == [
        ("PERSON", "Jane Doe")]


PRESIDIO_RECOGNIZERS = """\
supported_languages: [en]
global_regex_flags: 26
recognizers:
  - name: EmployeeIdRecognizer
    type: custom
    supported_language: en
    supported_entity: EMPLOYEE_ID
    patterns:
      - name: employee id
        regex: "EMP-\\\\d{5}"
        score: 0.9
  - name: SpacyRecognizer
    type: predefined
"""


def test_presidio_yaml_recognizers_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "recognizers.yaml"
    path.write_text(PRESIDIO_RECOGNIZERS, encoding="utf-8")
    detector = PresidioDetector(recognizers_file=str(path), entities=["EMPLOYEE_ID", "PERSON"])
    text = "Badge EMP-40213 belongs to Jane Doe."
    found = {(s.entity, text[s.start:s.end]) for s in detector.detect(text)}
    assert found == {("EMPLOYEE_ID", "EMP-40213"), ("PERSON", "Jane Doe")}
    broken = tmp_path / "broken.yaml"
    broken.write_text(PRESIDIO_RECOGNIZERS.replace("type: custom", "type: imaginary"),
                      encoding="utf-8")
    with pytest.raises(DetectorConfigError, match="broken.yaml"):
        PresidioDetector(recognizers_file=str(broken), entities=["EMPLOYEE_ID"])
