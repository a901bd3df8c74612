"""The token tagger: loads offline from the package over SmolLM2's embeddings, reads long texts
in windows without losing offsets, refuses weights that do not fit, and its weights enter the
policy version."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import regex
from detectors_faults import AlwaysRaises

import cacheprune
from cacheprune.detectors import DetectorChain, DetectorConfigError, build_detector, load_policy
from cacheprune.detectors.calendar_words import calendar_words
from cacheprune.detectors.secrets import is_public_id
from cacheprune.detectors.tagger import (
    CONTEXT,
    SHIPPED_TAGGER_DIR,
    WINDOW,
    TaggerDetector,
    decode_spans,
    identifier_around,
    windows,
)
from cacheprune.detectors.tagger_model import CONFIG_FILE, WEIGHTS_FILE, bio_tags, token_shape
from cacheprune.detectors.train.fit_tagger import aligned_tags

# Written for this test, in none of the generator's templates (train or held-out).
UNSEEN = [
    ("Cheers for sorting that out.\n\nBest,\nGareth Llewellyn", "Gareth Llewellyn"),
    ("booking ref 4QZ7 passenger NAKAMURA/HARUKI seat 14C", "NAKAMURA/HARUKI"),
    ("the new flat is at 27 birchwood close, didsbury, m20 6rt if you want to visit",
     "27 birchwood close, didsbury, m20 6rt"),
    ("pushed by @quentin-morel to the release branch, ask him", "quentin-morel"),
    ('{"ticket": 4471, "assignee": "okonkwo.adaeze", "status": "open"}', "okonkwo.adaeze"),
    ("Patient: Siobhán Ní Bhriain, MRN 00482913, seen on the ward today", "00482913"),
    ("Kind regards,\nMargaret Oyelaran-Smith", "Margaret Oyelaran-Smith"),
]
# The shipped weights cover these only in part (the chain's rules and name growth reach them).
# The twelfth round's weights covered airline order; the thirteenth round's miss it again (the
# chain's airline_order_name rule reaches it).
_KNOWN_MISSES: dict[str, str] = {
    "NAKAMURA/HARUKI": "airline order SURNAME/GIVEN after 'passenger' (thirteenth-round weights)",
}
UNSEEN_CASES = [
    pytest.param(text, value, marks=pytest.mark.xfail(
        reason=f"a known miss of the shipped weights: {_KNOWN_MISSES[value]}"))
    if value in _KNOWN_MISSES else (text, value) for text, value in UNSEEN]


@pytest.fixture(scope="module")
def tagger() -> TaggerDetector:
    return TaggerDetector()


def _covered(spans, start: int, end: int, text: str) -> bool:
    masked = set()
    for span in spans:
        masked.update(range(span.start, span.end))
    return all(i in masked for i in range(start, end) if not text[i].isspace())


def test_shipped_tagger_lies_in_the_package_and_loads_offline(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    detector = build_detector("tagger")
    assert isinstance(detector, TaggerDetector)
    assert SHIPPED_TAGGER_DIR.is_relative_to(Path(cacheprune.__file__).parent)
    assert {p.name for p in SHIPPED_TAGGER_DIR.iterdir()} == {CONFIG_FILE, WEIGHTS_FILE}
    text = "Kind regards,\nMargaret Oyelaran-Smith"
    found = detector.detect(text)
    assert any(s.entity == "PERSON" and s.start <= text.index("Margaret") and
               s.end >= text.index("Margaret") + len("Margaret") for s in found), found


@pytest.mark.parametrize(("text", "value"), UNSEEN_CASES)
def test_tagger_masks_values_of_unseen_sentences(tagger, text: str, value: str) -> None:
    start = text.index(value)
    spans = tagger.detect(text)
    assert _covered(spans, start, start + len(value), text), spans


def test_windows_tile_the_text_with_context_on_each_side() -> None:
    for length in (1, WINDOW - 1, WINDOW, WINDOW + 1, 5 * WINDOW + 17):
        cores = []
        for start, end, core_start, core_end in windows(length):
            assert start == max(0, core_start - CONTEXT)
            assert end == min(length, core_end + CONTEXT)
            assert core_end - core_start <= WINDOW
            cores += range(core_start, core_end)
        assert cores == list(range(length))


def test_a_long_text_is_read_in_windows_without_losing_offsets(tagger) -> None:
    line = "Thanks for the quick fix on the billing page.\nBest,\nGareth Llewellyn\n\n"
    text = line * 40  # about 20 tokens a line: 800 tokens, four windows
    assert len(tagger.tokenizer.encode(text).ids) > 3 * WINDOW
    spans = tagger.detect(text)
    starts = [i for i in range(len(text)) if text.startswith("Gareth Llewellyn", i)]
    assert all(_covered(spans, s, s + len("Gareth Llewellyn"), text) for s in starts)
    for span in spans:  # every span lies on the name, none on the public words
        assert set(text[span.start:span.end].split()) <= {"Gareth", "Llewellyn"}, span


def test_special_token_text_is_read_as_text(tagger) -> None:
    text = "<|im_start|>user\nRegards, Gareth Llewellyn<|im_end|>"
    spans = tagger.detect(text)
    start = text.index("Gareth")
    assert _covered(spans, start, start + len("Gareth Llewellyn"), text)
    assert tagger.detect("") == [] and tagger.detect(" \n ") == []


def test_public_ids_stay_public_unless_a_secret_word_introduces_them(tagger) -> None:
    # The model alone reads this ULID as a PERSONAL_ID, a character short of its end; the
    # `secrets` detector's rule for public ids is applied to the whole identifier.
    log = 'level=info ulid=01JH2Q8Y3W5V0N4K7R6T9M1B2C msg="write block" duration=1.204s'
    start = log.index("01JH")
    assert not any(s.start < start + 26 and start < s.end for s in tagger.detect(log))
    assert identifier_around(log, start + 3, start + 25) == (start, start + 26)
    assert not is_public_id("api_key=01JH2Q8Y3W5V0N4K7R6T9M1B2C", 8, 34)


def test_decode_spans_joins_byte_pieces_and_trims_spaces() -> None:
    text = "Hi 김민 and Ann Lee"
    # '김' is three byte pieces sharing its offsets; ' Ann' carries its leading space.
    offsets = [(0, 2), (2, 4), (3, 4), (3, 4), (4, 5), (5, 9), (9, 13), (13, 17)]
    tags = ["O", "B-PERSON", "I-PERSON", "B-PERSON", "I-PERSON", "O", "B-PERSON", "I-PERSON"]
    # The second B inside one character continues the span (same offsets); 'and' ends it.
    assert decode_spans(text, offsets, tags) == [(3, 5, "PERSON"), (10, 17, "PERSON")]
    # Two runs of one label with only a space between them are one value; a line break or
    # another label keeps them apart.
    assert decode_spans(text, offsets, ["O"] * 5 + ["B-USERNAME", "B-USERNAME", "O"]) == [
        (6, 13, "USERNAME")]
    assert decode_spans(text, offsets, ["O"] * 5 + ["B-USERNAME", "B-PERSON", "O"]) == [
        (6, 9, "USERNAME"), (10, 13, "PERSON")]
    lines = "born: 20 May\n61"
    assert decode_spans(lines, [(0, 5), (5, 12), (12, 13), (13, 15)],
                        ["O", "B-DATE_OF_BIRTH", "O", "I-DATE_OF_BIRTH"]) == [
        (6, 12, "DATE_OF_BIRTH"), (13, 15, "DATE_OF_BIRTH")]


def test_training_labels_follow_the_values_characters(default_tokenizer) -> None:
    text = "Regards,\nRob Baker <rob@example.com>"
    encoding = default_tokenizer.encode(text)
    index = {tag: i for i, tag in enumerate(bio_tags(["PERSON", "EMAIL"]))}
    tags = aligned_tags(text, encoding.offsets, [(9, 18, "PERSON"), (20, 35, "EMAIL")], index)
    names = {i: tag for tag, i in index.items()}
    labelled = [(text[a:b], names[t]) for (a, b), t in zip(encoding.offsets, tags, strict=True)
                if t != index["O"]]
    assert labelled[0] == ("Rob", "B-PERSON")
    assert [tag for _, tag in labelled].count("B-PERSON") == 1
    assert [tag for _, tag in labelled].count("B-EMAIL") == 1
    assert "".join(piece for piece, tag in labelled if tag.endswith("EMAIL")).strip() == \
        "rob@example.com"
    assert all(text[a:b] not in ("<", ">", ",") for (a, b), t in
               zip(encoding.offsets, tags, strict=True) if t != index["O"])


def test_token_shapes_tell_case_digits_space_and_script() -> None:
    shapes = {piece: token_shape(piece) for piece in
              ("Rob", " Rob", "rob", "ROB", "42", " ", "\n", "Ива", "김", "@")}
    assert len(set(shapes.values())) == len(shapes)


def test_a_fault_beside_the_tagger_fails_closed(tagger) -> None:
    result = DetectorChain([tagger, AlwaysRaises()], timeout_s=None).run("Regards, Tom Price")
    assert result.failed_closed and result.spans == []


def test_bad_folders_and_options_name_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(DetectorConfigError, match="not a token tagger folder"):
        TaggerDetector(model_dir=str(tmp_path))
    with pytest.raises(DetectorConfigError, match="not labels of the model"):
        TaggerDetector(entities=["PERSON", "SHOE_SIZE"])
    with pytest.raises(DetectorConfigError, match="score must lie"):
        TaggerDetector(score=1.5)
    with pytest.raises(DetectorConfigError, match="min_probability must lie"):
        TaggerDetector(min_probability=1.0)
    other_table = tmp_path / "other_table"
    shutil.copytree(SHIPPED_TAGGER_DIR, other_table)
    config = json.loads((other_table / CONFIG_FILE).read_text())
    config["embedding_sha256"] = "0" * 64
    (other_table / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(DetectorConfigError, match="another embedding table"):
        TaggerDetector(model_dir=str(other_table))
    corrupt = tmp_path / "corrupt"
    shutil.copytree(SHIPPED_TAGGER_DIR, corrupt)
    (corrupt / WEIGHTS_FILE).write_bytes(b"\x00" * 64)
    with pytest.raises(DetectorConfigError, match="cannot be loaded"):
        TaggerDetector(model_dir=str(corrupt))


def test_policy_version_follows_the_weights(tmp_path: Path, model_policy) -> None:
    copy = tmp_path / "model"
    shutil.copytree(SHIPPED_TAGGER_DIR, copy)
    shipped = load_policy(model_policy("tagger", SHIPPED_TAGGER_DIR))
    copied = load_policy(model_policy("tagger", copy))
    assert shipped.policy_version == copied.policy_version  # contents, not the path
    config = json.loads((copy / CONFIG_FILE).read_text())
    config["dropout"] = 0.25  # read only in training: loads, but the bytes differ
    (copy / CONFIG_FILE).write_text(json.dumps(config))
    changed = load_policy(model_policy("tagger", copy))
    assert changed.policy_version != shipped.policy_version


def test_fit_tagger_writes_a_folder_the_detector_loads(tmp_path: Path) -> None:
    # A few examples and one epoch: the loop, the saved files and their loading, not quality.
    from cacheprune.detectors.train.fit_tagger import fit_tagger
    from cacheprune.detectors.train.generate import generate_split

    messages: list[str] = []
    out = fit_tagger(generate_split("train", 24, seed=3), seed=3, out_dir=tmp_path / "tagger",
                     epochs=1, log=messages.append)
    assert {p.name for p in out.iterdir()} == {CONFIG_FILE, WEIGHTS_FILE}
    assert messages[-1].startswith("epoch 1/1: loss ")
    trained = TaggerDetector(model_dir=str(out))
    assert trained.describe()["model_sha256"] != TaggerDetector().describe()["model_sha256"]
    text = "Regards, Gareth Llewellyn"  # one epoch on 24 texts finds little; spans stay inside
    assert all(0 <= s.start < s.end <= len(text) for s in trained.detect(text))


def test_a_higher_min_probability_masks_a_subset(tagger) -> None:
    text = ("hey sam, ask jordan about the invoice from harbour supplies ltd, "
            "or ping @kfrost on slack; ref 2019-CS-0412, room 4.12")
    masked = {i for s in tagger.detect(text) for i in range(s.start, s.end)}
    strict = TaggerDetector(min_probability=0.99)
    assert strict.describe()["min_probability"] == 0.99
    assert {i for s in strict.detect(text) for i in range(s.start, s.end)} <= masked


def test_a_speakers_role_is_no_name(tagger: TaggerDetector) -> None:
    text = ("Chair: Good. Then the opening plan. Head Librarian?\n"
            "Head Librarian: We can keep the reading room open on Saturdays.\n"
            "Treasurer: None. The school offered it without charge.")
    assert [text[s.start:s.end] for s in tagger.detect(text) if s.entity == "PERSON"] == []


def test_weekdays_and_months_alone_are_no_address(tagger: TaggerDetector) -> None:
    words = calendar_words()
    assert words.only_dates(["ธันวาคม"]) and words.only_dates(["الخميس"])
    assert words.only_dates(["Haziran", "Pazartesi"])
    assert not words.only_dates([]) and not words.only_dates(["Calle", "Mayor"])
    text = ("ปฏิทินการศึกษา ภาคเรียนที่ 2 ปีการศึกษา 2568\n"
            "1 พฤศจิกายน 2568  เปิดภาคเรียน\n22-26 ธันวาคม 2568  สอบกลางภาค\n"
            "13 มีนาคม 2569  สอบปลายภาค\nالاختبارات تبدأ يوم الخميس 9")
    for span in tagger.detect(text):
        if span.entity == "STREET_ADDRESS":
            assert not words.only_dates(regex.findall(r"[\p{L}\p{M}]+", text[span.start:span.end]))
