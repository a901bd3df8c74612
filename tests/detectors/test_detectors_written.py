"""Hand-written labelled texts: read as examples, validated, trained on beside generated ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cacheprune.detectors.train.__main__ import main as train_main
from cacheprune.detectors.train.written import (
    WrittenDataError,
    read_written,
    read_written_files,
)

ROOT = Path(__file__).resolve().parents[2]
WRITTEN = ROOT / "datasets" / "pii_written"


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def test_every_occurrence_of_a_value_is_labelled(tmp_path: Path) -> None:
    text = "Hi Oona, it's Oona's account: login oona_k, PIN 4417. Oona"
    path = _write(tmp_path / "a.jsonl", [
        {"text": text, "genre": "chat", "language": "en",
         "values": [{"kind": "PERSON", "value": "Oona"}, {"kind": "USERNAME", "value": "oona_k"},
                    {"kind": "SECRET", "value": "4417"}]},
        {"text": "The store opens at nine.", "genre": "sms", "language": "en", "values": []},
    ])
    labelled, free = read_written(path, "train")
    assert [text[a:b] for a, b, _ in labelled.spans] == ["Oona", "Oona", "oona_k", "4417", "Oona"]
    assert {kind for _, _, kind in labelled.spans} == {"PERSON", "USERNAME", "SECRET"}
    assert (labelled.genre, labelled.locale, labelled.split) == ("chat", "en", "train")
    assert free.spans == [] and free.genre == "sms"


@pytest.mark.parametrize("row, message", [
    ({"text": "Ring Ada", "values": [{"kind": "NAME", "value": "Ada"}]}, "kind 'NAME'"),
    ({"text": "Ring Ada", "values": [{"kind": "PERSON", "value": "Eve"}]}, "'Eve' is not in"),
    ({"text": "Ring Ada", "values": [{"kind": "PERSON", "value": ""}]}, "'' is not in"),
    ({"values": []}, "not an object with 'text'"),
    ({"text": "Ring Ada", "values": ["Ada"]}, "must be a list of"),
])
def test_a_malformed_line_is_named_by_file_and_line(tmp_path: Path, row, message) -> None:
    path = _write(tmp_path / "bad.jsonl", [{"text": "fine", "values": []}, row])
    with pytest.raises(WrittenDataError, match=message) as raised:
        read_written(path, "train")
    assert f"{path}:2" in str(raised.value)


def test_a_folder_is_read_file_by_file_and_an_empty_one_refused(tmp_path: Path) -> None:
    folder = tmp_path / "texts"
    folder.mkdir()
    with pytest.raises(WrittenDataError, match="no \\*.jsonl file"):
        read_written_files([folder], "train")
    _write(folder / "b.jsonl", [{"text": "B", "values": []}])
    _write(folder / "a.jsonl", [{"text": "A", "values": []}])
    assert [e.text for e in read_written_files([folder], "train")] == ["A", "B"]


def test_the_shipped_written_texts_are_valid_and_apart() -> None:
    # The training command reads train/ and train_round10/ to train_round13/ in this
    # order (docs/detectors.md, "Training"); next/ is the development set of the coming round.
    train = read_written_files([WRITTEN / "train", WRITTEN / "train_round10",
                                WRITTEN / "train_round11", WRITTEN / "train_round12",
                                WRITTEN / "train_round13"], "train")
    test = read_written_files([WRITTEN / "test"], "test")
    waiting = read_written_files([WRITTEN / "next"], "train")
    assert len(train) >= 2800 and sum(not e.spans for e in train) >= 1000
    assert len(waiting) >= 400 and not {e.text for e in waiting} & {e.text for e in train}
    assert len(test) >= 60
    assert sum(bool(e.spans) for e in test) >= 50 and sum(not e.spans for e in test) >= 15
    # Training never reads the test split's texts, and no text is there twice.
    assert not {e.text for e in train + waiting} & {e.text for e in test}
    assert len({e.text for e in train}) == len(train)


def test_training_takes_written_texts_and_refuses_bad_ones(tmp_path: Path, capsys) -> None:
    bad = _write(tmp_path / "bad.jsonl", [{"text": "Ring Ada", "values": [
        {"kind": "PERSON", "value": "Eve"}]}])
    code = train_main(["fit-tagger", "--seed", "1", "--count", "4", "--epochs", "1",
                       "--written", str(bad), "--out", str(tmp_path / "m")])
    assert code == 1 and "'Eve' is not in its text" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()
    good = _write(tmp_path / "good.jsonl", [{"text": "Ring Ada Nwosu on 0161 496 0032", "values": [
        {"kind": "PERSON", "value": "Ada Nwosu"}, {"kind": "PHONE", "value": "0161 496 0032"}]}])
    code = train_main(["fit-tagger", "--seed", "1", "--count", "4", "--epochs", "1",
                       "--written", str(good), "--written-repeat", "2",
                       "--out", str(tmp_path / "m")])
    assert code == 0
    assert "1 hand-written examples, each 2 times" in capsys.readouterr().out
    assert (tmp_path / "m" / "weights.safetensors").is_file()
