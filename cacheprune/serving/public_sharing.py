"""The two strategies that search and fill the pool with the prompt's public view (its private
tokens taken out, so that the public text around them joins up), and publish the
self-contextualized segments the annotator finds.

- `IsolatedSharing` (`publish_mode="isolated"`, the product's default): when the prompt holds a
  private token, segments, marks and KV all come from one pass over the public view alone (see
  `private_free`), so no published byte depends on a private value. A prompt without private
  tokens publishes as the paper baseline does: its KV as computed is private-free already.
- `PaperBaselineSharing` (`publish_mode="paper_baseline"`): the CachePrune paper's choice, a
  research baseline only: segments chosen by the annotator from the attention seen from the
  view, published with the KV as computed in context, whose segments after a private value
  carry a trace of it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from cacheprune.annotator import annotate, last_segment_end
from cacheprune.engine import PrefillResult
from cacheprune.pool import PoolSession
from cacheprune.serving.kv_sources import InContextKV, KVSource
from cacheprune.serving.private_free import PrivateFreePass
from cacheprune.serving.public_view import PublicView, public_attention
from cacheprune.serving.request import ServedRequest
from cacheprune.serving.sharing import (
    PoolSharing,
    SegmentSpan,
    new_text_mask,
    prompt_start,
    stage_segments,
)
from cacheprune.serving.strategy import Published
from cacheprune.tokens import MaskArray


class PaperBaselineSharing(PoolSharing):
    """Publishes the annotator's segments of the public view with their in-context KV."""

    def search_view(self, request: ServedRequest) -> PublicView:
        return request.public_view

    def publish(self, request: ServedRequest, session: PoolSession,
                prefill: PrefillResult) -> list[Published]:
        publishable = self.publishable_attention(request, session, prefill)
        if publishable is None:
            return []
        view, attention, computed = publishable
        segments = self.annotated_segments(request, attention, computed)
        return self.stage(session, view, segments, computed, request.first_private,
                          InContextKV(prefill, view.positions))

    def stage(self, session: PoolSession, view: PublicView, segments: list[SegmentSpan],
              computed: MaskArray, first_private: int, source: KVSource) -> list[Published]:
        """Stage the annotator's segments, and the prompt's first tokens as an entry of their
        own where no segment publishes them (`prompt_start`: down to `match_window` tokens)."""
        min_len = self.config.annotator.min_len
        start = prompt_start(session, view, segments, computed, first_private,
                             self.config.match_window, min_len)
        leading = [(0, start, np.zeros(start, dtype=np.bool_))] if start else []
        return (stage_segments(session, view, leading, source, self.config.match_window)
                + stage_segments(session, view, segments, source, min_len))

    def annotated_segments(self, request: ServedRequest, attention: npt.NDArray[np.float32],
                           computed: MaskArray) -> list[SegmentSpan]:
        """Spans [start, end) of the public view to publish with their recompute marks, chosen
        from the prompt's attention as seen from the view; `computed` flags the view's tokens
        this prefill computed."""
        config = self.config.annotator
        matrix, inserted = public_attention(attention, request.private, config.sink_tokens)
        flags = np.zeros(matrix.shape[0], dtype=np.bool_)
        flags[inserted] = True  # the inserted column is never part of a segment
        # NOTE: attention to private tokens counts as outside every segment (paper baseline:
        # its KV did attend to them), so the tokens that leaned on this tenant's private values
        # are marked for recomputation: another tenant has other values there.
        annotation = annotate(matrix, flags, np.insert(computed, inserted, True), config)
        spans = []
        for segment in annotation.segments:
            assert segment.start > inserted, "segments are longer than the sinks"
            start, end, marks = segment.start - 1, segment.end - 1, segment.recompute
            if start == inserted:
                # The sinks before the inserted column are the prompt's first tokens, the same
                # in every prompt that shares what follows: published with the segment.
                start, marks = 0, np.concatenate((np.zeros(inserted, np.bool_), marks))
            spans.append((start, end, marks))
        return spans


class IsolatedSharing(PaperBaselineSharing):
    """Publishes only KV that never attended to a private token: from the private-free pass
    when the prompt holds one, as computed otherwise."""

    def worth_publishing(self, request: ServedRequest, prefill: PrefillResult,
                         shareable: MaskArray | None) -> bool:
        if request.num_private == 0:
            return super().worth_publishing(request, prefill, shareable)
        # NOTE: segments hold new text only: what the pool served (its recomputed tokens
        # included) is published already, however this prefill computed it.
        return self.worth_publishing_new_text(request, new_text_mask(request, prefill),
                                              shareable)

    def needs_request_kv(self, request: ServedRequest) -> bool:
        return request.num_private == 0

    def worth_publishing_new_text(self, request: ServedRequest, new_text: MaskArray,
                                  shareable: MaskArray | None) -> bool:
        # NOTE: the private-free pass computes every row up to the last segment, so a short
        # reused stretch inside new text counts as new (`eligible_tokens`, every row).
        return self._has_run(request, new_text, shareable, request.num_private > 0)

    def publish(self, request: ServedRequest, session: PoolSession,
                prefill: PrefillResult) -> list[Published]:
        if request.num_private == 0:
            return super().publish(request, session, prefill)
        return self.publish_new_text(request, session, new_text_mask(request, prefill))

    def publish_new_text(self, request: ServedRequest, session: PoolSession,
                         new_text: MaskArray) -> list[Published]:
        if request.num_private == 0:
            return super().publish_new_text(request, session, new_text)
        view = self.search_view(request)
        if not self.worth_publishing_new_text(request, new_text,
                                              session.shareable_mask(view.num_tokens)):
            return []  # see `PoolSharing.publishable_attention`
        new = new_text[view.positions]
        # NOTE: the pass stops where the last segment could end: a warm request that computed
        # a new profile before a reused document needs its first few hundred rows, not the
        # whole prompt again (its question at the end is shorter than a segment).
        end = last_segment_end(new, np.zeros_like(new), self.config.annotator.min_len)
        private_free = PrivateFreePass.compute(self.model, view, end, self.annotator_capture())
        # The pass computed every token up to `end`: a short stretch this prefill happened to
        # reuse inside new text may lie inside a segment (its KV comes from the pass too).
        annotation = annotate(private_free.attention, np.zeros(end, dtype=np.bool_),
                              new[:end], self.config.annotator, every_row=True)
        segments = [(s.start, s.end, s.recompute) for s in annotation.segments]
        return self.stage(session, view, segments, new[:end], request.first_private,
                          private_free.kv)
