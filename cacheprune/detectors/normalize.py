"""Text as detectors should see it: NFKC, no zero-width characters, look-alike letters folded.

An attacker (or a careless paste) can hide a value from pattern matching: a zero-width space
inside an e-mail address, Cyrillic 'а' and 'о' in a Latin word, full-width digits. Detectors
run on the normalized text; `NormalizedText.original_span` maps their offsets back, so the
mask covers the original characters (the invisible ones inside a value included).
"""

from __future__ import annotations

import functools
import json
import unicodedata
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import regex

from cacheprune.detectors.base import DetectorUnavailableError

# Invisible characters that only split or join what a reader sees as one word.
_ZERO_WIDTH = frozenset("\u00ad\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff")
# A run of non-space characters: confusables are folded inside such a run only when it mixes
# ASCII letters with look-alikes, so genuine Cyrillic or Greek words are left as written.
_RUN = regex.compile(r"\S+")


@dataclass(slots=True, frozen=True)
class NormalizedText:
    """The normalized text and, per character of it, the original [start, end) it came from."""

    text: str
    starts: tuple[int, ...] | None  # None: identical to the original (nothing changed)
    ends: tuple[int, ...] | None

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        if self.starts is None or self.ends is None:
            return start, end
        return self.starts[start], self.ends[end - 1]


def normalize_for_detection(text: str) -> NormalizedText:
    if text.isascii():
        return NormalizedText(text, None, None)
    pieces: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    index = 0
    while index < len(text):
        # A base character with the combining marks after it normalizes as one unit, so that
        # 'e' + U+0301 becomes 'é' as a precomposed character would.
        unit_end = index + 1
        while unit_end < len(text) and unicodedata.combining(text[unit_end]):
            unit_end += 1
        unit = "".join(ch for ch in text[index:unit_end] if ch not in _ZERO_WIDTH)
        for ch in unicodedata.normalize("NFKC", unit):
            pieces.append(ch)
            starts.append(index)
            ends.append(unit_end)
        index = unit_end
    folded = _fold_mixed_runs("".join(pieces))
    if folded == text:
        return NormalizedText(text, None, None)
    return NormalizedText(folded, tuple(starts), tuple(ends))


def _fold_mixed_runs(text: str) -> str:
    fold = confusable_fold()
    chars = list(text)
    for run in _RUN.finditer(text):
        word = run.group()
        if word.isascii() or not any(ch.isascii() and ch.isalpha() for ch in word):
            continue
        for offset, ch in enumerate(word):
            replacement = fold.get(ch)
            if replacement is not None:
                chars[run.start() + offset] = replacement
    return "".join(chars)


@functools.lru_cache(maxsize=1)
def confusable_fold() -> dict[str, str]:
    """Non-ASCII characters that Unicode lists as confusable with one ASCII letter or digit."""
    spec = find_spec("confusable_homoglyphs")
    if spec is None or spec.origin is None:
        raise DetectorUnavailableError(
            "normalizing text for detection needs the confusables table of "
            "confusable-homoglyphs; pip install 'confusable-homoglyphs>=3.3'"
        )
    table = json.loads((Path(spec.origin).parent / "confusables.json").read_text("utf-8"))
    fold: dict[str, str] = {}
    for char, homoglyphs in table.items():
        if char.isascii() or len(char) != 1:
            continue
        targets = {h["c"] for h in homoglyphs if len(h["c"]) == 1 and h["c"].isascii()
                   and h["c"].isalnum()}
        if len(targets) == 1:
            fold[char] = targets.pop()
    return fold
