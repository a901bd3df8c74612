"""Known-clean text: detection skips the lines and sentences that enough distinct tenants sent
with nothing detected in them, and masks a new tenant's prompt as a full detection does."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cacheprune.detectors import Span, load_policy
from cacheprune.models import converted_folder, load_tokenizer
from cacheprune.serving import mask_prompt
from cacheprune.serving.known_clean import KnownCleanText, chunks

DOCUMENTS = Path(__file__).resolve().parents[2] / "datasets" / "default" / "default_grouped.jsonl"
THRESHOLD = 3
PROFILES = [
    ("Alice Moreau", "alice.moreau@example.com", "415-555-0101"),
    ("Bob Okafor", "bob.okafor@example.org", "415-555-0138"),
    ("Carla Diaz", "carla.diaz@example.net", "415-555-0175"),
    ("Dmitri Volkov", "dmitri.volkov@example.com", "415-555-0212"),
]


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(str(converted_folder()))


@pytest.fixture(scope="module")
def policy():
    return load_policy(None)


@pytest.fixture(scope="module")
def document() -> str:
    context = json.loads(DOCUMENTS.read_text().splitlines()[0])["context"]
    return " ".join(context.split(" ")[:400])


def prompt(index: int, document: str) -> str:
    name, email, phone = PROFILES[index]
    return (f"You answer questions for {name}, e-mail {email}, phone {phone}.\n\n"
            f"Document:\n{document}\n\nQuestion: what is this document about? Answer:")


def masked(tokenizer, policy, text: str, tenant: str, known: KnownCleanText | None = None):
    return mask_prompt("r", tenant, text, tokenizer.encode(text), policy, (), known)


def private_tokens(tokenizer, text: str, value: str) -> set[int]:
    start = text.index(value)
    end = start + len(value)
    return {i for i, (a, b) in enumerate(tokenizer.encode(text).offsets) if a < end and b > start}


def test_chunks_cover_the_text_and_end_at_line_ends_and_sentence_ends():
    text = "First line\nA sentence. Another one!  And a last one without its end"
    found = chunks(text)
    assert "".join(text[a:b] for a, b in found) == text
    assert [text[a:b] for a, b in found] == [
        "First line\n", "A sentence. ", "Another one!  ", "And a last one without its end"]
    assert chunks("") == []


def test_text_is_skipped_only_once_threshold_distinct_tenants_sent_it_clean(tokenizer, policy,
                                                                           document):
    known = KnownCleanText(THRESHOLD)
    for _ in range(THRESHOLD):  # one tenant, many times: still one tenant
        masked(tokenizer, policy, prompt(0, document), "tenant-0", known)
    assert known.skippable(prompt(3, document)) == []
    for index in (1, 2):
        masked(tokenizer, policy, prompt(index, document), f"tenant-{index}", known)
    (skipped,) = known.skippable(prompt(3, document))
    assert skipped[1] - skipped[0] > 0.8 * len(document)


def test_a_new_tenant_is_masked_as_a_full_detection_masks_it(tokenizer, policy, document):
    known = KnownCleanText(THRESHOLD)
    for index in range(THRESHOLD):
        masked(tokenizer, policy, prompt(index, document), f"tenant-{index}", known)
    text = prompt(3, document)
    assert known.skippable(text)
    fast = masked(tokenizer, policy, text, "tenant-3", known)
    full = masked(tokenizer, policy, text, "tenant-3")
    np.testing.assert_array_equal(fast.private, full.private)
    flagged = set(np.flatnonzero(fast.private).tolist())
    for value in PROFILES[3]:
        assert private_tokens(tokenizer, text, value) <= flagged, value


def test_a_value_inserted_into_known_text_is_scanned_with_its_context(tokenizer, policy,
                                                                      document):
    known = KnownCleanText(THRESHOLD)
    for index in range(THRESHOLD):
        masked(tokenizer, policy, prompt(index, document), f"tenant-{index}", known)
    sentences = document.split(". ")
    middle = len(sentences) // 2
    inserted = "Contact the author, Rob Baker, at rob.baker@example.com or 020 7946 0958"
    text = prompt(3, ". ".join([*sentences[:middle], inserted, *sentences[middle:]]))
    assert len(known.skippable(text)) == 2  # the document before and after the new sentence
    fast = masked(tokenizer, policy, text, "tenant-3", known)
    full = masked(tokenizer, policy, text, "tenant-3")
    # NOTE: the masks are not equal: the token tagger reads the whole text it is given, and
    # given all of it here it also took the company's name for a person's at the document's
    # start (known-clean text). Within the new sentence, nothing full detection masks is lost.
    sentence = private_tokens(tokenizer, text, inserted)
    flagged = set(np.flatnonzero(fast.private).tolist())
    assert set(np.flatnonzero(full.private).tolist()) & sentence <= flagged
    for value in ("Rob Baker", "rob.baker@example.com", "020 7946 0958"):
        assert private_tokens(tokenizer, text, value) <= flagged, value


def test_a_private_value_makes_its_sentence_never_known_clean(tokenizer, policy, document):
    known = KnownCleanText(1)  # the loosest threshold: one tenant is enough
    sentence = "For help, write to alice.moreau@example.com before noon. "
    text = prompt(0, sentence + document)
    for index in range(3):
        masked(tokenizer, policy, text, f"tenant-{index}", known)
    start = text.index(sentence)
    assert all(end <= start or begin >= start + len(sentence)
               for begin, end in known.skippable(text))


def test_a_chunk_flagged_in_any_prompt_forgets_its_tenants():
    text = "The office opens at nine and closes at five on weekdays.\nSee you there."
    known = KnownCleanText(2, context_chars=0)
    for tenant in ("a", "b"):
        known.record(tenant, text, [], [])
    assert known.skippable(text) == [(0, len(text))]
    known.record("c", text, [Span("PERSON", 3, 9, 0.9, "test")], [])
    assert known.skippable(text) == [(57, len(text))]  # the first line must be sent clean again
    for tenant in ("a", "b"):
        known.record(tenant, text, [], [])
    assert known.skippable(text) == [(0, len(text))]


def test_text_that_was_not_scanned_is_never_counted(tokenizer, policy, document):
    known = KnownCleanText(THRESHOLD)
    for index in range(THRESHOLD):
        text = prompt(index, document)
        start = text.index(document)
        mask_prompt("r", f"tenant-{index}", text, tokenizer.encode(text), policy,
                    [(start, start + len(document))], known)
    text = prompt(3, document)
    start = text.index(document)
    assert all(end <= start or begin >= start + len(document)
               for begin, end in known.skippable(text))


def test_memory_is_bounded_and_keeps_the_most_recent_chunks():
    known = KnownCleanText(1, max_chunks=3, context_chars=0)
    lines = [f"line number {index} of a long public text\n" for index in range(6)]
    known.record("a", "".join(lines), [], [])
    assert len(known) == 3
    assert known.skippable("".join(lines)) == [(sum(map(len, lines[:3])),
                                                sum(map(len, lines)))]


@pytest.mark.parametrize("arguments, problem", [
    ({"threshold": 0}, "threshold"), ({"threshold": 2, "max_chunks": 0}, "max_chunks"),
    ({"threshold": 2, "context_chars": -1}, "context_chars")])
def test_bad_settings_raise_a_clear_error(arguments, problem):
    with pytest.raises(ValueError, match=problem):
        KnownCleanText(**arguments)
