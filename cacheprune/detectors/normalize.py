"""Text as detectors should see it: NFKC, no zero-width characters, look-alike letters folded,
and a space where a script written without spaces meets Latin letters or digits.

An attacker (or a careless paste) can hide a value from pattern matching: a zero-width space
inside an e-mail address, Cyrillic 'а' and 'о' in a Latin word, full-width digits. Detectors
run on the normalized text; `NormalizedText.original_span` maps their offsets back, so the
mask covers the original characters (the invisible ones inside a value included).

Chinese, Japanese, Korean and Thai are written without spaces, so a value sits right against
the words around it ('電話番号は090-4182-7935です'). Patterns that look for word boundaries
would never see one there; a space is inserted (it maps to no original character).
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
# Where a script written without spaces meets a Latin letter or a digit, in either order.
_SCRIPT_CHANGE = regex.compile(
    r"(?<=[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\p{Thai}])(?=[\p{Latin}\d])"
    r"|(?<=[\p{Latin}\d])(?=[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\p{Thai}])"
)


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
    folded, starts, ends = _space_script_changes(folded, starts, ends)
    if folded == text:
        return NormalizedText(text, None, None)
    return NormalizedText(folded, tuple(starts), tuple(ends))


def _space_script_changes(text: str, starts: list[int],
                          ends: list[int]) -> tuple[str, list[int], list[int]]:
    """A space at each script change; it maps to the empty range before the next character."""
    cuts = [m.start() for m in _SCRIPT_CHANGE.finditer(text)]
    if not cuts:
        return text, starts, ends
    pieces: list[str] = []
    new_starts: list[int] = []
    new_ends: list[int] = []
    previous = 0
    for cut in [*cuts, len(text)]:
        pieces.append(text[previous:cut])
        new_starts.extend(starts[previous:cut])
        new_ends.extend(ends[previous:cut])
        if cut < len(text):
            pieces.append(" ")
            new_starts.append(starts[cut])
            new_ends.append(starts[cut])
        previous = cut
    return "".join(pieces), new_starts, new_ends


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


# Letters of Latin alphabets that Unicode lists as confusable with an ASCII one, kept: the
# dotless i of Turkish and Azerbaijani is how those languages spell ('kullanıcı adı', the
# username label, was folded to 'kullanici adi' and matched no rule written in Turkish).
_LATIN_LETTERS = frozenset("ı")


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
        if char.isascii() or len(char) != 1 or char in _LATIN_LETTERS:
            continue
        targets = {h["c"] for h in homoglyphs if len(h["c"]) == 1 and h["c"].isascii()
                   and h["c"].isalnum()}
        if len(targets) == 1:
            fold[char] = targets.pop()
    return fold
