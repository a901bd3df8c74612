"""A detector that fails on purpose, importable by path from a policy file in the tests."""

from __future__ import annotations

from cacheprune.detectors import Detector, Span


class AlwaysRaises(Detector):
    name = "always-raises"

    def detect(self, text: str) -> list[Span]:
        raise RuntimeError("fault injected on purpose")
