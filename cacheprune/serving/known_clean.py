"""Text that detection may skip: lines and sentences that enough distinct tenants sent with
nothing detected in them.

Under load, most of a prompt is often a document other tenants sent before; detecting it again
costs as much as the first time (about 0.1 s per 1,000 tokens on a CPU core) and delays the
very prompts the pool makes cheap. `KnownCleanText` remembers, per chunk of text (a line, or a
sentence of a long line; content-defined, so that the same document splits the same way behind
different profiles), the distinct tenants whose detection found nothing in it. Once
`threshold` tenants did (the pool's publication threshold), detection skips the chunk, except
the chunks within `CONTEXT_CHARS` of each edge of a run of such chunks, which are scanned with
the text around them so that a label just before (or a value just after) keeps its context.

What it leaks: a chunk is skipped only after `threshold` distinct tenants sent it and no
detector flagged any of it in their prompts; the pool shares such text once the same number of
tenants sent it, so while the pool holds it, the time detection saves tells a prober no more
than a hit does. NOTE: the counts here do not expire as the pool's do (a sender counts for
`SENDER_COUNT_TTL_S`, an entry lives `POOL_TTL_S`, the budget evicts): after the pool forgot a
stretch, the saved time still tells that `threshold` tenants once sent it. A chunk in which any
detection flags anything forgets its tenants (and must be sent clean by `threshold` tenants
again); text that was not scanned (the operator's public ranges, skipped text) is never
counted. The memory is bounded (least recently used chunks go first) and holds digests, never
text.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

from cacheprune.detectors.base import Span, cut_after
from cacheprune.detectors.chain import CharRange
from cacheprune.detectors.mask import token_mask

# A chunk ends after a line end, or after a sentence's end mark and the spaces that follow it.
CHUNK_END = re.compile(r"\n|[.!?][\"')\]]*[ \t]+")
# Characters scanned at each edge of a skipped run, with the unknown text beside it: a short
# chunk (a form's label, a greeting) between unknown ones is never skipped.
CONTEXT_CHARS = 200
MAX_CHUNKS = 1 << 16  # about 800 documents of 80 sentences; ~410 bytes each (26 MiB)


def chunks(text: str) -> list[CharRange]:
    """The text's chunks, in order, covering it: each ends after a line end or a sentence's
    end mark and its spaces (the last one at the text's end)."""
    return cut_after(CHUNK_END, text)


class KnownCleanText:
    """Per chunk digest, the distinct tenants (up to `threshold`) whose detection found nothing
    in it. Thread-safe."""

    def __init__(self, threshold: int, max_chunks: int = MAX_CHUNKS,
                 context_chars: int = CONTEXT_CHARS) -> None:
        if threshold < 1:
            raise ValueError(f"threshold must be >= 1 tenant, got {threshold}")
        if max_chunks < 1:
            raise ValueError(f"max_chunks must be >= 1, got {max_chunks}")
        if context_chars < 0:
            raise ValueError(f"context_chars must be >= 0, got {context_chars}")
        self.threshold = threshold
        self.max_chunks = max_chunks
        self.context_chars = context_chars
        self._tenants: OrderedDict[bytes, frozenset[str]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._tenants)

    def skippable(self, text: str) -> list[CharRange]:
        """The parts of `text` detection may skip: each run of known-clean chunks, less the
        chunks within `context_chars` of an edge that touches other text (so that what is
        scanned ends and starts where a chunk does, never inside a word)."""
        runs: list[list[CharRange]] = []
        with self._lock:
            for start, end in chunks(text):
                if not self._is_known(_digest(text[start:end])):
                    continue
                if runs and runs[-1][-1][1] == start:
                    runs[-1].append((start, end))
                else:
                    runs.append([(start, end)])
        skipped = []
        for run in runs:
            run_start, run_end = run[0][0], run[-1][1]
            first = run_start if run_start == 0 else run_start + self.context_chars
            last = run_end if run_end == len(text) else run_end - self.context_chars
            inner = [(start, end) for start, end in run if start >= first and end <= last]
            if inner:
                skipped.append((inner[0][0], inner[-1][1]))
        return skipped

    def record(self, tenant: str, text: str, spans: Iterable[Span],
               unscanned: Sequence[CharRange]) -> None:
        """The tenant's detection over `text` found `spans`, scanning all of it but
        `unscanned`: count the tenant for each chunk it scanned wholly with nothing found, and
        forget the tenants of each chunk where something was found."""
        bounds = chunks(text)
        # A chunk holds a flagged (an unscanned) character as a token would (`token_mask`).
        flagged = token_mask(spans, bounds)
        skipped = token_mask([Span("UNSCANNED", start, end, 0.0, "known_clean")
                              for start, end in unscanned if end > start], bounds)
        with self._lock:
            for (start, end), was_flagged, was_skipped in zip(bounds, flagged, skipped,
                                                             strict=True):
                if was_skipped:
                    continue
                digest = _digest(text[start:end])
                if was_flagged:
                    self._tenants.pop(digest, None)
                else:
                    self._count(digest, tenant)

    def _is_known(self, digest: bytes) -> bool:
        tenants = self._tenants.get(digest)
        if tenants is None or len(tenants) < self.threshold:
            return False
        self._tenants.move_to_end(digest)
        return True

    def _count(self, digest: bytes, tenant: str) -> None:
        tenants = self._tenants.pop(digest, frozenset())
        if len(tenants) < self.threshold:
            tenants = tenants | {tenant}
        self._tenants[digest] = tenants
        while len(self._tenants) > self.max_chunks:
            self._tenants.popitem(last=False)


def _digest(chunk: str) -> bytes:
    return hashlib.blake2b(chunk.encode("utf-8", "surrogatepass"), digest_size=16).digest()
