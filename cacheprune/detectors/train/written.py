"""Hand-written labelled texts (JSON lines), read as training or test examples.

The format of `datasets/pii_blind` and `datasets/pii_written`: one object per line with
`text`, `values` (each `{"kind", "value"}`, an exact substring of the text; every occurrence of
it is private), `genre` and `language`. Unlike generated examples, these were written by hand
from a description of the genres, so they carry wordings and layouts no template has.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from cacheprune.detectors.train.examples import Example
from cacheprune.detectors.train.values import LABELS


class WrittenDataError(ValueError):
    """A hand-written file is malformed; the message names the file and line."""


def read_written(path: Path, split: str) -> list[Example]:
    """The examples of one JSONL file, each value labelled wherever it occurs in its text."""
    examples = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise WrittenDataError(f"{path}: cannot be read: {exc}") from exc
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
            text, values = row["text"], row["values"]
            genre, language = str(row.get("genre", "?")), str(row.get("language", "?"))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise WrittenDataError(f"{where}: not an object with 'text' and 'values' ({exc})"
                                   ) from exc
        spans = []
        if not isinstance(values, list) or not all(isinstance(v, dict) for v in values):
            raise WrittenDataError(f"{where}: 'values' must be a list of "
                                   "{\"kind\", \"value\"} objects")
        for value in values:
            kind, piece = value.get("kind"), value.get("value")
            if kind not in LABELS:
                raise WrittenDataError(f"{where}: kind {kind!r} is not one of {', '.join(LABELS)}")
            if not isinstance(piece, str) or not piece or piece not in text:
                raise WrittenDataError(f"{where}: value {piece!r} is not in its text")
            spans += [(m.start(), m.end(), kind) for m in re.finditer(re.escape(piece), text)]
        examples.append(Example(text, sorted(spans), genre, language, split,
                                [v["value"] for v in values]))
    return examples


def read_written_files(paths: list[Path], split: str) -> list[Example]:
    """Examples of JSONL files, or of every *.jsonl file in a folder, in name order."""
    examples = []
    for path in paths:
        files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
        if not files:
            raise WrittenDataError(f"{path}: no *.jsonl file in this folder")
        for file in files:
            examples += read_written(file, split)
    return examples
