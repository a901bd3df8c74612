"""Detectors that fail on purpose: one that raises (importable by path from a policy file in
the tests), one that finds only part of a name."""

from __future__ import annotations

from cacheprune.detectors import Detector, Span


class AlwaysRaises(Detector):
    name = "always-raises"

    def detect(self, text: str) -> list[Span]:
        raise RuntimeError("fault injected on purpose")


class FindsOnly(Detector):
    """Reports one fixed piece of the text as a person (part of a name, as spaCy often finds),
    or as another entity."""

    name = "finds-only"

    def __init__(self, piece: str, entity: str = "PERSON") -> None:
        self.piece = piece
        self.entity = entity

    def detect(self, text: str) -> list[Span]:
        at = text.index(self.piece)
        return [Span(self.entity, at, at + len(self.piece), 0.9, self.name)]
