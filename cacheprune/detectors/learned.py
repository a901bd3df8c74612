"""The learned PII detector: a spaCy NER pipeline the project trains and ships in the package.

The weights lie in `detectors/model/pii_ner/` (trained by `python -m cacheprune.detectors.train
fit`); they are loaded from disk, never from a model hub. `describe()` carries the SHA-256 of
every file of the model folder, so new weights give a new policy version. With `min_confidence`
above 0, a span is kept only when a beam over the same weights puts its least sure token inside
an entity with at least that probability (`span_confidence.py`).
"""

from __future__ import annotations

import hashlib
import re
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from cacheprune.detectors.base import Detector, DetectorConfigError, DetectorUnavailableError, Span
from cacheprune.detectors.span_confidence import span_confidences

SHIPPED_MODEL_DIR = Path(__file__).parent / "model" / "pii_ner"
# NOTE: spaCy's cost and memory grow with the document; texts are cut at line ends into pieces
# of at most this many characters (a value spans lines only in addresses, grown back later).
_MAX_PIECE_CHARS = 50_000
_LOAD_LOCK = threading.Lock()
# The model's labels that the rules already report under another name: one entity per kind in
# a chain's output.
CHAIN_ENTITY = {"PHONE": "PHONE_NUMBER", "EMAIL": "EMAIL_ADDRESS", "ADDRESS": "STREET_ADDRESS"}
# HTML formatting tags (`<b>`, `</i>`...) in e-texts and screenplays: the first model read their
# names as handles. Only common formatting tag names, so an IRC nick in angle brackets
# (`<jdoe>`) or an address in them (`<a@b.org>`) stays a candidate.
_MARKUP_TAG = re.compile(
    r"</?(?:b|i|u|s|em|strong|p|br|hr|div|span|pre|code|small|big|sup|sub|tt|center|font|li|ul"
    r"|ol|h[1-6]|table|tr|td|th|blockquote)\b[^<>\n]{0,80}/?>", re.IGNORECASE)


def model_digest(model_dir: Path) -> str:
    """SHA-256 over the relative path and the bytes of every file of a model folder."""
    digest = hashlib.sha256()
    for path in sorted(p for p in model_dir.rglob("*") if p.is_file()):
        digest.update(path.relative_to(model_dir).as_posix().encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


@lru_cache(maxsize=4)
def _load(model_dir: str) -> Any:
    try:
        import spacy
    except ModuleNotFoundError as exc:
        raise DetectorUnavailableError(
            "the 'learned' detector needs spaCy; pip install 'spacy>=3.7.5,<3.9'") from exc
    with _LOAD_LOCK:
        return spacy.load(model_dir)


def _pieces(text: str) -> list[tuple[int, str]]:
    """(offset, piece) cuts of `text` at line ends, each at most _MAX_PIECE_CHARS long."""
    pieces = []
    start = 0
    while len(text) - start > _MAX_PIECE_CHARS:
        cut = text.rfind("\n", start, start + _MAX_PIECE_CHARS)
        end = cut + 1 if cut > start else start + _MAX_PIECE_CHARS
        pieces.append((start, text[start:end]))
        start = end
    pieces.append((start, text[start:]))
    return pieces


def markup_chars(text: str) -> set[int]:
    return {i for match in _MARKUP_TAG.finditer(text) for i in range(match.start(), match.end())}


def only_markup(text: str, start: int, end: int, markup: set[int]) -> bool:
    """Whether every letter or digit of text[start:end] lies inside a formatting tag."""
    return bool(markup) and all(i in markup for i in range(start, end) if text[i].isalnum())


class LearnedDetector(Detector):
    """Spans of the shipped (or a given) spaCy NER model, with a fixed score per span.

    Spans carry the model's labels, except PHONE, EMAIL and ADDRESS, reported as the rules name
    them (PHONE_NUMBER, EMAIL_ADDRESS, STREET_ADDRESS).

    Options: `model_dir` (a spaCy pipeline folder; default the shipped one), `entities` (labels
    to keep; default all of the model's), `score`, `min_confidence` (0: every span the greedy
    decoder finds; above 0: only spans whose confidence, from a beam of `beam_width` parses,
    reaches it), `beam_width`, `name`.
    """

    path_options: ClassVar[tuple[str, ...]] = ("model_dir",)

    def __init__(self, model_dir: str | None = None, entities: list[str] | None = None,
                 score: float = 0.85, min_confidence: float = 0.0, beam_width: int = 8,
                 name: str = "learned") -> None:
        folder = Path(model_dir) if model_dir is not None else SHIPPED_MODEL_DIR
        if not (folder / "config.cfg").is_file():
            raise DetectorConfigError(
                f"learned detector: {folder} is not a spaCy pipeline folder (no config.cfg)")
        if not 0.0 <= score <= 1.0:
            raise DetectorConfigError(f"learned detector: score must lie in [0, 1], got {score}")
        if not 0.0 <= min_confidence <= 1.0:
            raise DetectorConfigError(
                f"learned detector: min_confidence must lie in [0, 1], got {min_confidence}")
        if beam_width < 2:
            raise DetectorConfigError(
                f"learned detector: beam_width must be at least 2, got {beam_width}")
        self.min_confidence = min_confidence
        self.beam_width = beam_width
        self.name = name
        self.model_dir = folder
        self.score = score
        self.nlp = _load(str(folder.resolve()))
        labels = set(self.nlp.get_pipe("ner").labels)
        unknown = sorted(set(entities or ()) - labels)
        if unknown:
            raise DetectorConfigError(
                f"learned detector: entities {unknown} are not labels of the model; "
                f"it has {sorted(labels)}")
        self.entities = frozenset(entities) if entities else frozenset(labels)
        self._digest = model_digest(folder)

    def detect(self, text: str) -> list[Span]:
        spans = []
        for offset, piece in _pieces(text):
            if not piece.strip():
                continue
            markup = markup_chars(piece)
            doc = self.nlp(piece)
            found = [entity for entity in doc.ents
                     if entity.label_ in self.entities and entity.end_char > entity.start_char
                     and not only_markup(piece, entity.start_char, entity.end_char, markup)]
            if self.min_confidence > 0.0:
                confidences = span_confidences(self.nlp, doc, found, self.beam_width)
                found = [entity for entity, confidence in zip(found, confidences, strict=True)
                         if confidence >= self.min_confidence]
            for entity in found:
                label = CHAIN_ENTITY.get(entity.label_, entity.label_)
                spans.append(Span(label, offset + entity.start_char,
                                  offset + entity.end_char, self.score, self.name))
        return spans

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {"model_sha256": self._digest,
                                     "entities": sorted(self.entities), "score": self.score}
        if self.min_confidence > 0.0:  # off: the policy version stays what it was before
            described.update(min_confidence=self.min_confidence, beam_width=self.beam_width)
        return described
