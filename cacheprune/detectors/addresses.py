"""Postal addresses of many countries, found from their street and grown to the whole address.

An address starts from a core:
- a street: a house number and a street type word in the order the country writes them
  ('42 Wattle Street', 'Mariahilfer Straße 88/2/14', 'Calle Zacatecas 118', 'ul. Długa 8/3',
  'Kastanienallee 12a', '27, avenue Jean-Jaurès', '418 Teheran-ro');
- or, weaker, a flat, lot or building number or a post box ('Blk 12 Lot 7', 'PO Box 2271'), or
  a street whose ending also ends English words ('Mannerheimintie 48'), kept only when what
  follows holds a postcode (or, for a flat, a street; for a post box, a town).
Lower-case addresses need a postcode one or two parts after the street ('callejón marcial guerra
812, ávila, 35010'); a street without a number needs a postcode and a town right after it
('rue Vincent, 95206 CousinVille').
From there it grows forward over the parts written after a comma, a line break or a space:
flats and floors, districts, towns, regions and postcodes, as long as they look like address
parts (capitalized words, numbers, unit words, postcodes); and backward over a flat or a house
name ('Flat 2, ', 'Unit 5/', 'Rose Cottage, '). The word lists are in rules/address_words.yaml.
"""

from __future__ import annotations

from typing import Any, ClassVar

import regex

from cacheprune.detectors.address_patterns import (
    StreetCore,
    compiled_patterns,
    load_address_words,
)
from cacheprune.detectors.base import Detector, Span

ENTITY = "STREET_ADDRESS"
# How many parts an address may grow by after its core, and how far back it may look.
_MAX_PARTS = 8
_LOOK_BACK = 80


# NOTE: every core holds a house, flat or box number, and no core reaches further than this
# before or after its digits; matching only there skips most of a document (a story's text
# costs a third as much).
_BEFORE_DIGITS = 160
_AFTER_DIGITS = 80
_DIGITS = regex.compile(r"\d+")


def _digit_windows(text: str) -> list[tuple[int, int]]:
    """Merged [start, end) windows around each run of digits."""
    windows: list[tuple[int, int]] = []
    for match in _DIGITS.finditer(text):
        start = max(0, match.start() - _BEFORE_DIGITS)
        end = min(len(text), match.end() + _AFTER_DIGITS)
        if windows and start <= windows[-1][1]:
            windows[-1] = (windows[-1][0], end)
        else:
            windows.append((start, end))
    return windows


_LETTER_RUN = regex.compile(r"[\p{L}\p{M}\-]+")


def _street_matches(cores: list[StreetCore], text: str, start: int,
                    end: int) -> list[regex.Match[str]]:
    """The street cores found in text[start:end], by where they start; where several cores
    match at one position, the first in the list (one pattern of them all, tried at every
    position, would choose the same)."""
    words = None
    chosen: dict[int, regex.Match[str]] = {}
    for core in cores:
        if core.everywhere:
            matches = core.pattern.finditer(text, start, end, overlapped=True)
        else:
            if words is None:
                words = [(m.start(), m.group().casefold())
                         for m in _LETTER_RUN.finditer(text, start, end)]
            matches = (core.pattern.match(text, position, end)
                       for position, word in words if core.starts_on(word))
        for match in matches:
            if match is not None:
                chosen.setdefault(match.start(), match)
    return [chosen[position] for position in sorted(chosen)]


_SEPARATOR = regex.compile(r",[ \t]*|[ \t]*\r?\n[ \t]*|[ \t]+-[ \t]+")
_SPACE = regex.compile(r"[ \t]+")
# A line that starts with a label ('Tel:', 'Phone -') is no longer the address.
_LABEL_LINE = regex.compile(r"[ \t]*[\p{L} .]{1,24}[:：]")


class AddressDetector(Detector):
    """Postal addresses grown from a street, a flat or a post box over their town and postcode."""

    path_options: ClassVar[tuple[str, ...]] = ("words_file",)

    def __init__(self, words_file: str | None = None, name: str = "addresses") -> None:
        self.name = name
        self.words_file = words_file
        self.words = load_address_words(words_file)
        self._patterns = compiled_patterns(words_file)

    def describe(self) -> dict[str, Any]:
        return {"words": self.words.model_dump(mode="json")}

    def detect(self, text: str) -> list[Span]:
        patterns = self._patterns
        spans = []
        for window_start, window_end in _digit_windows(text):
            for match in _street_matches(patterns.streets, text, window_start, window_end):
                end, _ = self._grow(text, match.end(), match.group().islower())
                spans.append(Span(ENTITY, self._back(text, match.start()), end, 0.75,
                                  self.name))
            for pattern in (patterns.divided, patterns.pin_address):
                for match in pattern.finditer(text, window_start, window_end):
                    spans.append(Span(ENTITY, self._back(text, match.start()), match.end(),
                                      0.75, self.name))
            for match in patterns.postcode_tail.finditer(text, window_start, window_end):
                look_back = max(0, match.start() - _LOOK_BACK)
                parts = patterns.parts_before.search(text, look_back, match.start())
                if parts is not None:
                    spans.append(Span(ENTITY, parts.start(), match.end(), 0.7, self.name))
            for kind, pattern in (("unit", patterns.unit_core), ("box", patterns.po_box),
                                  ("weak street", patterns.weak_street)):
                for match in pattern.finditer(text, window_start, window_end):
                    end, found = self._grow(text, match.end())
                    grown = text[match.end():end]
                    if (patterns.postcode.search(grown) or (kind == "box" and found)
                            or (kind == "unit" and patterns.street_word.search(grown))):
                        spans.append(Span(ENTITY, self._back(text, match.start()), end, 0.7,
                                          self.name))
        return spans

    def _grow(self, text: str, end: int, lower: bool = False) -> tuple[int, int]:
        """The end of the address after its core, and how many parts it grew by; a lower-case
        core grows over lower-case parts after a comma ('..., ávila, 35010')."""
        patterns = self._patterns
        num_parts = 0
        while num_parts < _MAX_PARTS:
            separator = _SEPARATOR.match(text, end)
            if lower and separator is not None and separator.group().startswith(","):
                part = patterns.lower_part.match(text, separator.end())
                if part is not None:
                    end = part.end()
                    num_parts += 1
                    continue
            if separator is not None and "\n" in separator.group() and _LABEL_LINE.match(
                    text, separator.end()):
                break
            if separator is None:
                space = _SPACE.match(text, end)
                if space is None or not patterns.opens_part.match(text, space.end()):
                    break
                separator = space
            part = patterns.part.match(text, separator.end())
            if part is None:
                break
            end = part.end()
            num_parts += 1
        return end, num_parts

    def _back(self, text: str, start: int) -> int:
        for _ in range(3):
            window_start = max(0, start - _LOOK_BACK)
            found = self._patterns.before.search(text[window_start:start])
            if found is None:
                break
            start = window_start + found.start()
        return start
