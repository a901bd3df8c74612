"""Public people's names, places named after people, software's own accounts and values given as
examples stay public; a person's own name does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from cacheprune.detectors import DetectorChain, DetectorConfigError, load_policy
from cacheprune.detectors.base import Span
from cacheprune.detectors.example_values import drop_examples
from cacheprune.detectors.names import NameDetector
from cacheprune.detectors.policy import policy_from_data
from cacheprune.detectors.public_names import drop_public_names, public_people


def _person(text: str, value: str, entity: str = "PERSON") -> Span:
    start = text.index(value)
    return Span(entity, start, start + len(value), 0.8, "test")


@pytest.mark.parametrize("name", ["Marie Curie", "Victor Hugo", "Voltaire", "Jawaharlal Nehru",
                                  "孙中山", "Александр Пушкин", "Hồ Chí Minh"])
def test_the_list_holds_public_people_in_their_scripts(name: str) -> None:
    assert name.casefold() in public_people()


def test_the_list_holds_no_lone_given_name_or_common_surname() -> None:
    people = public_people()
    assert not {"muhammad", "maria", "john", "smith", "kim", "nguyễn", "hari", "ali"} & people


def test_public_people_alone_or_listed_are_dropped() -> None:
    text = ("Unit 3: the work of Marie Curie. Essays on Victor Hugo's novels; "
            "Voltaire, Jean-Jacques Rousseau and the Encyclopédie. Tutor: Ines Vardakis.")
    spans = [_person(text, v) for v in ("Marie Curie", "Victor Hugo's",
                                        "Voltaire, Jean-Jacques Rousseau",
                                        "Ines Vardakis")]
    kept = drop_public_names(text, spans)
    assert [text[s.start:s.end] for s in kept] == ["Ines Vardakis"]


@pytest.mark.parametrize("text", ["Patient: Victor Hugo, born 1971", "my friend Marie Curie",
                                  "Dear Victor Hugo,", "Name = Marie Curie"])
def test_a_public_name_stays_masked_where_the_line_says_this_person(text: str) -> None:
    value = "Victor Hugo" if "Victor" in text else "Marie Curie"
    span = _person(text, value)
    assert drop_public_names(text, [span]) == [span]


def test_service_accounts_are_public_and_peoples_handles_are_not() -> None:
    text = "dependabot[bot] opened #41; @pagerduty paged @mkhumalo; github-actions pushed"
    spans = [_person(text, v, "USERNAME") for v in ("dependabot[bot]", "@pagerduty",
                                                     "@mkhumalo", "github-actions")]
    assert [text[s.start:s.end] for s in drop_public_names(text, spans)] == ["@mkhumalo"]


def test_the_chain_drops_public_names_after_growing_them() -> None:
    text = ("Lesson plan, week 4: Charles de Gaulle and the Fifth Republic.\n"
            "Homework to Mr. Okonkwo by Friday.")
    on = DetectorChain([NameDetector()], timeout_s=None, public_names=True).run(text)
    off = DetectorChain([NameDetector()], timeout_s=None).run(text)
    assert [text[s.start:s.end] for s in on.spans] == ["Mr. Okonkwo"]
    assert "Charles de Gaulle" in [text[s.start:s.end] for s in off.spans]


def test_the_default_policy_leaves_public_names_public_and_a_bad_value_is_refused() -> None:
    assert load_policy().chain.public_names
    with pytest.raises(DetectorConfigError, match="public_names"):
        policy_from_data({"version": 1, "public_names": "sometimes",
                          "detectors": [{"detector": "names", "options": {}}]}, "p.yaml", Path("."))


@pytest.mark.parametrize(("text", "value", "public"), [
    ("Jalan Jenderal Sudirman, dinamai menurut pahlawan", "Sudirman", True),
    ("arriver par l'aéroport Charles-de-Gaulle, c'est", "Charles-de-Gaulle", True),
    ("near Charles de Gaulle Airport today", "Charles de Gaulle", True),
    ("a reading of Victor Hugo.", "Hugo", True),
    ("Victor Hugo Martínez called twice", "Victor Hugo", False),  # someone else's name
    ("the novels of Hugo are long", "Hugo", False),  # a lone surname: no public name
])
def test_a_span_inside_a_public_name_written_around_it(text: str, value: str,
                                                      public: bool) -> None:
    span = _person(text, value)
    assert (drop_public_names(text, [span]) == []) is public


@pytest.mark.parametrize(("text", "value"), [
    ("Gäste reisen am besten vom Flughafen Franz Josef Strauß an.", "Flughafen Franz Josef Strauß"),
    ("in partenza dall'aeroporto Leonardo da Vinci di Fiumicino", "Leonardo da Vinci di Fiumicino"),
    ("oye el bus al aeropuerto Adolfo Suárez sale a las 7", "Adolfo Suárez"),
    ("на стадионе «Динамо» имени Льва Яшина", "Льва Яшина"),
    ("remise du prix Albert-Londres à 18 h", "Albert-Londres"),
    ("Room 3.12, Lionel Robbins Building", "Lionel Robbins Building"),
    ("Location: Henry Ford Way, Dearborn", "Henry Ford"),
    ("Sabiha Gökçen Havalimanı'ndan kalkış", "Sabiha Gökçen Havalimanı'ndan"),
    ("يوفر الفندق خدمة النقل من مطار الملك خالد الدولي", "الملك خالد"),
    ("Die Ferdinand-Porsche-Schule lädt ein", "Die Ferdinand-Porsche-Schule"),
    ("Πτήσεις από το Αεροδρόμιο Ελευθέριος Βενιζέλος", "Αεροδρόμιο Ελευθέριος Βενιζέλος"),
    ("başvurular Hasanpaşa Mah. Fahrettin Kerim Gökay Cad. No: 5", "Fahrettin Kerim Gökay Cad"),
])
def test_a_name_in_the_name_of_a_place_or_a_prize_is_public(text: str, value: str) -> None:
    assert drop_public_names(text, [_person(text, value)]) == []


@pytest.mark.parametrize(("text", "value"), [
    ("Regards,\nJohn Way", "John Way"),  # one name word before a place word: a surname
    ("Bhí Máire Ní Bhriain ag glaoch inné", "Máire Ní Bhriain"),  # 'ag' ("at") is no 'AG'
    ("My friend Maria Santos Building works here", "Maria Santos Building"),
    ("Dear Anna-Schule,", "Anna-Schule"),
])
def test_a_persons_name_beside_a_place_word_stays_masked(text: str, value: str) -> None:
    span = _person(text, value)
    assert drop_public_names(text, [span]) == [span]


@pytest.mark.parametrize(("text", "value"), [
    ("Verfügbarkeit online prüfen (Beispiel: HH-AB 123).", "HH-AB 123"),
    ('我国小型汽车号牌由省份简称和五位序号组成，例如"京A·12345"。', "京A·12345"),
    ("Başvuruda araç plakası (ör. 34 ABC 123) yazılmalı.", "34 ABC 123"),
    ("la targa va indicata senza spazi (formato AA123AA).", "AA123AA"),
    ("usernames are lower case, e.g. jdoe or asmith", "jdoe"),
])
def test_a_value_given_as_an_example_of_a_format_is_dropped(text: str, value: str) -> None:
    start = text.index(value)
    span = Span("LICENSE_PLATE", start, start + len(value), 0.8, "test")
    assert drop_examples(text, [span]) == []


@pytest.mark.parametrize(("text", "value"), [
    ("Beispiel für eine Kündigung.\nMein Kennzeichen: HH-AB 123", "HH-AB 123"),  # another line
    ("for example, my plate is LK19 XFP", "LK19 XFP"),  # words between
    ("예 010-5555-2841로 연락 주세요", "010-5555-2841"),  # '예' ("yes") without a colon
])
def test_a_value_after_other_words_than_an_example_word_stays_masked(text: str,
                                                                     value: str) -> None:
    start = text.index(value)
    span = Span("LICENSE_PLATE", start, start + len(value), 0.8, "test")
    assert drop_examples(text, [span]) == [span]


def test_the_shipped_policies_drop_examples() -> None:
    text = "Kennzeichen im Format Beispiel: HH-AB 123; mein eigenes ist M-KL 4821."
    found = [text[s.start:s.end] for s in load_policy().chain.run(text).spans]
    assert "M-KL 4821" in found and "HH-AB 123" not in found
