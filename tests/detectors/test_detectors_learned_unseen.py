"""The chain with the learned detector (rules/policy_learned.yaml) on snippets written for this
test: values of every kind masked whole, PII-free prose of many genres and languages left alone.

The snippets were written from the kinds' descriptions, in wordings, layouts and values of none
of the generator's templates (train or held-out) and none of the hand-labelled corpus.
"""

from __future__ import annotations

import re

import pytest

from cacheprune.detectors import load_policy
from cacheprune.detectors.learned import LearnedDetector
from cacheprune.detectors.yaml_io import shipped_file

# (kind, text, value): the value must be fully masked by the chain with the model.
VALUES = [
    ("PERSON", "Thanks again for the quick turnaround!\n\nWarm wishes,\nOlusegun Adebayo-Price",
     "Olusegun Adebayo-Price"),
    ("PERSON", "yeah priyanka said she'd bring the projector tmrw", "priyanka"),
    ("PERSON", "Pax: KOWALCZYK/AGNIESZKA MS  seat 22F", "KOWALCZYK/AGNIESZKA"),
    ("PERSON", "Applicant (surname, forename): Ferreira, Tomás", "Ferreira, Tomás"),
    ("EMAIL", "drop me a line at h.okonkwo77@fastmail.com when you land",
     "h.okonkwo77@fastmail.com"),
    ("EMAIL", "Reply-To: \"Ines\" <ines.vidal@correo-ejemplo.es>", "ines.vidal@correo-ejemplo.es"),
    ("PHONE", "if the door is locked ring me on 07700 913 482", "07700 913 482"),
    ("PHONE", "Tel. privat: +49 171 5523098 (abends)", "+49 171 5523098"),
    ("PHONE", "so the number is nine one seven, five five five, two three eight one",
     "nine one seven, five five five, two three eight one"),
    ("ADDRESS", "Ship to: 14 Larkspur Crescent, Whitby, YO21 3EP, United Kingdom",
     "14 Larkspur Crescent, Whitby, YO21 3EP"),
    ("ADDRESS", "we moved! new place is 2281 n halsted st apt 3r chicago il 60614",
     "2281 n halsted st apt 3r chicago il 60614"),
    ("ADDRESS", "Wohnhaft in Lindenweg 7, 79098 Freiburg im Breisgau",
     "Lindenweg 7, 79098 Freiburg"),
    ("GOV_ID", "SSN on the W-2 reads 536-22-8190, please double-check", "536-22-8190"),
    ("GOV_ID", "Passport no. K42917735, issued in Lisbon", "K42917735"),
    ("FINANCIAL", "Wire it to IBAN DE44 5001 0517 5407 3249 31, ref. rent March",
     "DE44 5001 0517 5407 3249 31"),
    ("FINANCIAL", "Sort code 20-45-77, account 63021894 (Barclays)", "20-45-77"),
    ("FINANCIAL", "Sort code 20-45-77, account 63021894 (Barclays)", "63021894"),
    ("FINANCIAL", "card ending — full number 4539 1488 0343 6467 exp 09/27",
     "4539 1488 0343 6467"),
    ("SECRET", "export GITHUB_TOKEN=ghp_R8mQ2vX9kLp4TnZ7wYc1Hs5JdF3bN6aE0uKi",
     "ghp_R8mQ2vX9kLp4TnZ7wYc1Hs5JdF3bN6aE0uKi"),
    ("SECRET", "wifi password is Tr0mbone!Sunset", "Tr0mbone!Sunset"),
    ("DATE_OF_BIRTH", "Patient DOB 11/23/1958, allergic to penicillin", "11/23/1958"),
    ("DATE_OF_BIRTH", "i was born on the 2nd of february 1991 in leeds", "2nd of february 1991"),
    ("IP_ADDRESS", "blocked after 5 failed logins from 81.142.36.207", "81.142.36.207"),
    ("IP_ADDRESS", "client connected from 2a02:c7f:8e14:3300::1b", "2a02:c7f:8e14:3300::1b"),
    ("USERNAME", "Account locked for user name 'mvandenberg' after the reset",
     "mvandenberg"),
    ("USERNAME", "slack handle: @tomi.ade, pls add to #infra", "@tomi.ade"),
    ("MEDICAL_ID", "Medical record number: 004417382 (St Mary's)", "004417382"),
    ("MEDICAL_ID", "NHS no. 943 476 5919 on the referral letter", "943 476 5919"),
    ("LICENSE_PLATE", "the van parked outside is registration LK19 XWP", "LK19 XWP"),
    ("LICENSE_PLATE", "Kennzeichen des Fahrzeugs: M-KL 4821", "M-KL 4821"),
    ("PERSONAL_ID", "Employee number 0048213 will be deactivated on Friday", "0048213"),
    ("PERSONAL_ID", "VIN 1HGCM82633A004352 — registered owner unknown", "1HGCM82633A004352"),
    ("PERSONAL_ID", "my phone's IMEI is 356938035643809, it was stolen", "356938035643809"),
]

# PII-free texts of the genres the detector reads: nothing in them may be masked.
PII_FREE = [
    "We evaluate on the dev split and report macro-F1 in Table 3; the gains over the "
    "LSTM baseline are largest for long documents (over 2,000 tokens).",
    "Version 4.2.0 drops Python 3.8. Upgrade pip first, then run the migration script; the "
    "schema change is described in ADR-0017.",
    "The storm passed over the valley before midnight, and by morning the river had risen "
    "above the old stone bridge.",
    "Der Bahnhof wird ab nächster Woche renoviert, deshalb halten die Regionalzüge am "
    "Nordausgang.",
    "Jutro rano spotkanie zespołu przeniesiono do większej sali na drugim piętrze.",
    "Chiều nay thư viện đóng cửa sớm để chuẩn bị cho hội chợ sách cuối tuần.",
    "build 1187 failed on arm64, retrying with the cached toolchain",
    "The quarterly report is due on 2025-06-30; finance will share the template on Monday.",
]


# Misses of the shipped weights (fourth round), kept visible rather than dropped. The second
# round's weights also missed "2nd of february 1991" and the plate "M-KL 4821"; the third
# round's masked the plate, and since the fourteenth round a rule for German plates' shape
# masks it whatever the weights read.
KNOWN_MISSES = {
    "2281 n halsted st apt 3r chicago il 60614": "a lower-case US address without commas",
}
# PII-free snippets the shipped weights (fourth round) still mark.
KNOWN_FALSE_POSITIVES = {
    "build 1187 failed on arm64, retrying with the cached toolchain":
        "a build number read as an identifier (fourth-round weights)",
}
CASES = [pytest.param(kind, text, value, id=f"{kind}-{index}",
                      marks=[pytest.mark.xfail(reason=KNOWN_MISSES[value])]
                      if value in KNOWN_MISSES else [])
         for index, (kind, text, value) in enumerate(VALUES)]


@pytest.fixture(scope="module")
def learned_policy():
    return load_policy(shipped_file("policy_learned.yaml"))


@pytest.mark.parametrize(("kind", "text", "value"), CASES)
def test_chain_with_the_model_masks_each_kind_in_unseen_snippets(learned_policy, kind, text,
                                                                 value) -> None:
    result = learned_policy.chain.run(text)
    assert not result.failed_closed
    start = text.index(value)
    covered = {i for span in result.spans for i in range(span.start, span.end)}
    missing = "".join(text[i] for i in range(start, start + len(value))
                      if i not in covered and not text[i].isspace())
    assert not missing, f"{kind} {value!r}: {missing!r} left unmasked; spans {result.spans}"


@pytest.mark.parametrize("text", [
    pytest.param(text, marks=pytest.mark.xfail(reason=KNOWN_FALSE_POSITIVES[text]))
    if text in KNOWN_FALSE_POSITIVES else text for text in PII_FREE])
def test_learned_detector_leaves_pii_free_text_alone(text) -> None:
    found = [(s.entity, text[s.start:s.end]) for s in LearnedDetector().detect(text)]
    assert found == []


def test_formatting_tags_are_never_values() -> None:
    # A screenplay in an e-text: the first model read `b` and `/b` of the bold tags as handles.
    text = "<b>INT. LIGHTHOUSE - NIGHT</b>\n\n</b><b>The lamp turns slowly.</b>\n<i>Fade out.</i>"
    tags = [(m.start(), m.end()) for m in re.finditer(r"</?[bi]>", text)]
    for span in LearnedDetector().detect(text):
        letters = [i for i in range(span.start, span.end) if text[i].isalnum()]
        assert not all(any(a <= i < b for a, b in tags) for i in letters), span
