"""What the connector did for each request, one JSON line per event, for operators and the
evaluation (`request_log` in the connector's settings):

    {"event": "prefill", "request_id", "num_tokens", "num_local_tokens", "reused_spans",
     "num_pooled", "num_recomputed", "num_computed", "num_published_first", "computed_by"}
                                            where the pool served the prompt (after the first
                                            num_local_tokens, which vLLM's own prefix cache
                                            held: the tenant's own blocks); num_pooled leaves
                                            out num_published_first, the tokens of those
                                            spans the request published itself just before
                                            (the k-th tenant's cold prompt); computed_by
                                            "vllm": a cold prompt vLLM computed
                                            (`cold_prompts`)
    {"event": "settled", "request_id", "num_published_tokens"}   its publication is over

Positions and counts only, never token ids or text.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO


@dataclass(slots=True, frozen=True)
class PrefillFigures:
    """What one prefill took from the pool and computed."""

    reused_spans: Sequence[tuple[int, int]]  # [start, end) prompt positions served by the pool
    num_recomputed: int  # of those, tokens the pool marked for recomputation
    num_computed: int  # tokens no pooled span (nor vLLM's own cache) covered
    num_local: int  # leading tokens vLLM's own prefix cache held (the tenant's own blocks)
    # Of the reused spans' tokens, those the request published itself just before its prefill
    # (`PrefillOrder.publish_first`): its own private-free pass computed them, no other tenant.
    num_published_first: int = 0

    @property
    def num_reused(self) -> int:
        return sum(end - start for start, end in self.reused_spans)

    @property
    def num_pooled(self) -> int:
        """Tokens other requests' publications served."""
        return max(self.num_reused - self.num_published_first, 0)


class RequestLog:
    def __init__(self, path: str | None) -> None:
        self._file: TextIO | None = None
        if path is not None:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            self._file = os.fdopen(descriptor, "a", encoding="utf-8")

    def prefill(self, request_id: str, num_tokens: int, figures: PrefillFigures,
                computed_by: str = "cacheprune") -> None:
        self._write({"event": "prefill", "request_id": request_id, "num_tokens": num_tokens,
                     "num_local_tokens": figures.num_local,
                     "reused_spans": [list(span) for span in figures.reused_spans],
                     "num_pooled": figures.num_pooled, "num_recomputed": figures.num_recomputed,
                     "num_computed": figures.num_computed,
                     "num_published_first": figures.num_published_first,
                     "computed_by": computed_by})

    def settled(self, request_id: str, num_published_tokens: int) -> None:
        """The request's publication is over: published (the tokens), discarded or empty (0)."""
        self._write({"event": "settled", "request_id": request_id,
                     "num_published_tokens": num_published_tokens})

    def _write(self, line: dict[str, object]) -> None:
        if self._file is None:
            return
        self._file.write(json.dumps(line) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
