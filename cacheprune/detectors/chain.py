"""Run several detectors over a request, union their spans, and fail closed on any fault."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from cacheprune.detectors.base import Detector, Span
from cacheprune.detectors.example_values import drop_examples
from cacheprune.detectors.normalize import (
    NormalizedText,
    confusable_fold,
    normalize_for_detection,
)
from cacheprune.detectors.public_contacts import drop_organisation_contacts
from cacheprune.detectors.public_names import drop_public_names, public_people
from cacheprune.detectors.repeated_values import repeated_values
from cacheprune.detectors.thresholds import ScoreThresholds
from cacheprune.detectors.whole_values import whole_values

CharRange = tuple[int, int]


@dataclass(slots=True)
class DetectionResult:
    """Spans found in one request. When `failed_closed`, the whole request must be private."""

    spans: list[Span]
    failed_closed: bool = False
    reason: str | None = None
    # Kept for debugging, never rendered into `reason`: its message may quote the text.
    error: BaseException | None = field(default=None, repr=False)


@dataclass(slots=True)
class _Progress:
    """What the detectors have done so far; read by the caller after the worker's join()."""

    current: str | None = None
    found_per_piece: list[list[Span]] = field(default_factory=list)  # before growth
    spans: list[Span] = field(default_factory=list)  # grown, in the whole text's offsets
    failure: str | None = None
    error: BaseException | None = None
    done: bool = False


def scan_pieces(text_length: int, public_ranges: Iterable[CharRange]) -> list[CharRange]:
    """The parts of [0, text_length) outside every public range, in order."""
    ranges = sorted(_checked_range(r, text_length) for r in public_ranges)
    pieces: list[CharRange] = []
    cursor = 0
    for start, end in ranges:
        if start > cursor:
            pieces.append((cursor, start))
        cursor = max(cursor, end)
    if cursor < text_length:
        pieces.append((cursor, text_length))
    return pieces


def _checked_range(char_range: CharRange, text_length: int) -> CharRange:
    start, end = char_range
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= text_length):
        raise ValueError(
            f"public range {char_range!r} must be integers with 0 <= start <= end <= "
            f"{text_length} (the text length)"
        )
    return start, end


class DetectorChain:
    """Runs detectors in order over the non-public parts of a text; spans are their union.

    Called once per request, before any pool lookup. A detector that raises, returns a bad span
    or overruns `timeout_s` (all detectors together) fails the request closed: the result says
    why, and callers mask every token. `timeout_s=None` runs inline with no time budget.
    Under a budget, the detectors marked `runs_in_calling_thread` (a model's forward pass) run
    first in the caller's thread, their time counted in the budget, and the others in a worker
    thread that the caller stops waiting for when the budget is spent.

    With `normalize`, detectors see each piece NFKC-normalized, without zero-width characters
    and with look-alike letters folded; their spans are mapped back to the original text. With
    `whole_values`, spans are grown to whole words, and names over the rest of the name, and a
    value found once is masked wherever it recurs (`repeated_values.py`).
    With `organisation_contacts`, phone numbers, addresses and register numbers that the text
    marks as an organisation's are dropped (`public_contacts.py`); with `public_names`, public
    people's names and software's own accounts (`public_names.py`); with `examples`, the values a
    text gives as examples of a format (`example_values.py`).
    """

    def __init__(
        self,
        detectors: Sequence[Detector],
        timeout_s: float | None = 5.0,
        thresholds: ScoreThresholds | None = None,
        allow_list: Iterable[str] = (),
        normalize: bool = True,
        whole_values: bool = True,
        detect_nothing: bool = False,
        organisation_contacts: bool = False,
        public_names: bool = False,
        examples: bool = False,
    ) -> None:
        if not detectors and not detect_nothing:
            raise ValueError("a DetectorChain needs at least one detector (detect_nothing=True "
                             "for a chain that flags nothing, to evaluate the other defences)")
        names = [d.name for d in detectors]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"detector names must be unique in a chain; repeated: {repeated}")
        if timeout_s is not None and timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive or None, got {timeout_s}")
        self.detectors = list(detectors)
        self.timeout_s = timeout_s
        self.thresholds = thresholds if thresholds is not None else ScoreThresholds()
        self.allow_list = frozenset(" ".join(p.split()).casefold() for p in allow_list)
        self.normalize = normalize
        self.whole_values = whole_values
        self.organisation_contacts = organisation_contacts
        self.public_names = public_names
        self.examples = examples
        if public_names:
            public_people()  # a broken list is a load-time error, not a per-request one
        if normalize:
            confusable_fold()  # a missing table is a load-time error, not a per-request one

    def run(self, text: str, public_ranges: Iterable[CharRange] = (),
            skipped: Sequence[CharRange] = ()) -> DetectionResult:
        """Detect over the text but its public ranges and its `skipped` ranges. The skipped
        ones are known to hold nothing private (`cacheprune.serving.known_clean`): not
        scanned, but with `whole_values` a value found elsewhere is masked where it recurs in
        them (and across the scanned pieces), as if they had been scanned."""
        pieces = scan_pieces(len(text), [*public_ranges, *skipped])
        progress = _Progress(found_per_piece=[[] for _ in pieces])
        views = self._views(text, pieces, progress)
        if views is not None:
            if self.timeout_s is None:
                self._detect_then_grow(pieces, views, self.detectors, progress)
            elif not self._within_budget(pieces, views, progress):
                return DetectionResult(
                    [], True,
                    f"detector '{progress.current}' did not finish within the chain's "
                    f"time budget of {self.timeout_s} s",
                )
        if progress.failure is not None:
            return DetectionResult([], True, progress.failure, progress.error)
        assert progress.done
        found = progress.spans
        if skipped and self.whole_values:
            found = repeated_values(text, found)
        # Overlapping hits of one pattern often grow to the same whole value: keep one.
        spans = [s for s in dict.fromkeys(found) if self._is_kept(text, s)]
        spans.sort(key=lambda s: (s.start, s.end, s.entity, s.detector))
        return DetectionResult(spans)

    def _within_budget(self, pieces: list[CharRange], views: list[NormalizedText],
                       progress: _Progress) -> bool:
        """Detect and grow under the time budget; False when it ran out first."""
        assert self.timeout_s is not None
        started = time.monotonic()
        self._detect(views, [d for d in self.detectors if d.runs_in_calling_thread], progress)
        budget_left = self.timeout_s - (time.monotonic() - started)
        if budget_left <= 0:
            return False
        # NOTE: a Python thread cannot be killed; a hung detector keeps its daemon thread, but
        # its late output goes to this call's own _Progress and is never read.
        worker = threading.Thread(
            target=self._detect_then_grow, daemon=True, name="cacheprune-detect",
            args=(pieces, views, [d for d in self.detectors if not d.runs_in_calling_thread],
                  progress),
        )
        worker.start()
        worker.join(budget_left)
        return not worker.is_alive()

    def _is_kept(self, text: str, span: Span) -> bool:
        if not self.thresholds.passes(span.entity, span.score):
            return False
        return " ".join(text[span.start:span.end].split()).casefold() not in self.allow_list

    def _views(self, text: str, pieces: list[CharRange], progress: _Progress
               ) -> list[NormalizedText] | None:
        try:
            return [self._view(text[start:end]) for start, end in pieces]
        except Exception as exc:  # noqa: BLE001 - any fault must fail the request closed
            progress.failure = f"normalizing the text raised {type(exc).__name__}"
            progress.error = exc
            return None

    def _detect_then_grow(self, pieces: list[CharRange], views: list[NormalizedText],
                          detectors: list[Detector], progress: _Progress) -> None:
        self._detect(views, detectors, progress)
        self._grow(pieces, views, progress)

    def _detect(self, views: list[NormalizedText], detectors: list[Detector],
                progress: _Progress) -> None:
        """Each detector over each piece; their spans are added to the piece's."""
        for detector in detectors:
            if progress.failure is not None:
                return
            progress.current = detector.name
            for view, found_here in zip(views, progress.found_per_piece, strict=True):
                try:
                    found = detector.detect(view.text)
                except Exception as exc:  # noqa: BLE001 - any fault must fail the request closed
                    progress.failure = f"detector '{detector.name}' raised {type(exc).__name__}"
                    progress.error = exc
                    return
                for span in found:
                    if not isinstance(span, Span) or span.end > len(view.text):
                        progress.failure = (
                            f"detector '{detector.name}' returned a span outside its text"
                        )
                        return
                found_here.extend(found)

    def _grow(self, pieces: list[CharRange], views: list[NormalizedText],
              progress: _Progress) -> None:
        """Grow each piece's spans to whole values, then map them back to the whole text."""
        if progress.failure is not None:
            return
        for (start, _), view, found_here in zip(pieces, views, progress.found_per_piece,
                                                strict=True):
            try:
                if self.whole_values:
                    found_here = whole_values(view.text, found_here)
                if self.public_names:  # after growth: 'Hugo' grows to 'Victor Hugo' first
                    found_here = drop_public_names(view.text, found_here)
                if self.organisation_contacts:  # a public name near a hotline is no person
                    found_here = drop_organisation_contacts(view.text, found_here)
                if self.examples:
                    found_here = drop_examples(view.text, found_here)
                if self.whole_values:
                    found_here = repeated_values(view.text, found_here)
            except Exception as exc:  # noqa: BLE001 - any fault must fail the request closed
                progress.failure = f"growing the spans to whole values raised {type(exc).__name__}"
                progress.error = exc
                return
            for span in found_here:
                original_start, original_end = view.original_span(span.start, span.end)
                progress.spans.append(Span(span.entity, original_start + start,
                                           original_end + start, span.score, span.detector))
        progress.done = True

    def _view(self, piece: str) -> NormalizedText:
        return normalize_for_detection(piece) if self.normalize else NormalizedText(
            piece, None, None)
