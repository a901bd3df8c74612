"""What every detector shares: the span it reports, its interface, and its errors."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

import regex


class DetectorConfigError(ValueError):
    """A detector, rule file or policy file is wrong; the message names what and where."""


class DetectorUnavailableError(ImportError):
    """An optional dependency of a detector is missing; the message names the extra to install."""


@dataclass(slots=True, frozen=True)
class Span:
    """A private stretch of text: character offsets [start, end), never a copy of the text."""

    entity: str
    start: int
    end: int
    score: float
    detector: str

    def __post_init__(self) -> None:
        if self.start < 0 or self.end <= self.start:
            raise ValueError(
                f"span offsets must satisfy 0 <= start < end, got [{self.start}, {self.end})"
            )
        if not 0.0 <= self.score <= 1.0:
            raise ValueError(f"span score must lie in [0, 1], got {self.score}")

    def shifted(self, offset: int) -> Span:
        """The same span for a text that starts `offset` characters earlier."""
        return Span(self.entity, self.start + offset, self.end + offset, self.score, self.detector)


class Detector:
    """Text in, spans out.

    Called by `DetectorChain.run` once per scanned piece of a request, possibly from a worker
    thread (`runs_in_calling_thread`), so `detect` must not mutate shared state. It may raise:
    the chain then fails closed.
    """

    name: str = "detector"
    # Options that are file paths: a policy file resolves them against its own folder, and the
    # policy version hashes the files' contents (through describe()), not where they lie.
    path_options: ClassVar[tuple[str, ...]] = ()
    # True for a detector that cannot hang (a model's forward pass, linear in the text): the
    # chain runs it in its caller's thread, the one that runs the served model. Once a thread
    # holds OpenMP threads (a prefill), torch in another thread gets a second team, libgomp
    # counts more threads than cores and stops spinning between parallel regions: the tagger
    # of a 4k-token request took 0.37 s there against 0.15 s in the caller's (2 cores).
    runs_in_calling_thread: ClassVar[bool] = False

    def detect(self, text: str) -> list[Span]:
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """Everything that decides this detector's output, as plain JSON data.

        The policy version hashes it, so a change to a rule file changes the version even when
        the policy file that points at it did not change.
        """
        return {}


def cut_after(pattern: re.Pattern[str] | regex.Pattern[str], text: str) -> list[tuple[int, int]]:
    """[start, end) of the pieces of `text` cut after each match of `pattern` (sentences,
    lines...), in order, covering it: what a match holds belongs to the piece on its left."""
    pieces = []
    start = 0
    for match in pattern.finditer(text):
        pieces.append((start, match.end()))
        start = match.end()
    if start < len(text):
        pieces.append((start, len(text)))
    return pieces
