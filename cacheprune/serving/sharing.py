"""cacheprune's own sharing: reuse verified pool segments anywhere in the prompt (KV moved to
their new positions, the pool's recompute marks honoured), and publish the self-contextualized
segments the annotator finds in the request's attention."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch

from cacheprune.annotator import annotate, last_segment_end
from cacheprune.engine import AttentionCapture, PrefillPlan, PrefillResult, ReusedSpan, Transformer
from cacheprune.pool import Match, PoolSession
from cacheprune.serving.config import EngineConfig
from cacheprune.serving.kv_sources import InContextKV, KVSource
from cacheprune.serving.private_free import PrivateFreePass
from cacheprune.serving.public_view import PublicView, has_run, public_attention
from cacheprune.serving.request import ServedRequest
from cacheprune.serving.strategy import Published, SharingStrategy
from cacheprune.tokens import MaskArray

SegmentSpan = tuple[int, int, MaskArray]  # [start, end) of a view and its recompute marks


class PoolSharing(SharingStrategy):
    """A strategy that reads and fills the shared pool through a view of the prompt
    (`search_view`): the tokens it looks up and publishes, and where each sits in the prompt.
    Subclasses choose the view, which matches to take (`accepts`), which spans of the view to
    publish (`segments`) and where their KV comes from (`kv_source`)."""

    def __init__(self, model: Transformer, config: EngineConfig) -> None:
        self.model = model
        self.config = config

    def search_view(self, request: ServedRequest) -> PublicView:
        return request.whole_view

    def can_publish(self, request: ServedRequest, computed: MaskArray) -> bool:
        """Whether the prompt tokens flagged in `computed` hold a run of `annotator.min_len`
        public tokens of the view (the shortest segment there is)."""
        view = self.search_view(request)
        return has_run(computed[view.positions] & ~view.private, self.config.annotator.min_len)

    def annotator_capture(self) -> AttentionCapture:
        """The attention the annotator reads: every `capture_layer_stride`-th layer."""
        layers = range(0, self.model.config.num_layers, self.config.capture_layer_stride)
        return AttentionCapture(layers=tuple(layers))

    def plan(self, request: ServedRequest, session: PoolSession) -> PrefillPlan:
        view = self.search_view(request)
        reused = []
        for match in session.lookup(view.token_ids, view.private):
            if not self.accepts(match):
                continue
            kv = session.read(match)
            if kv is None:  # gone or failed its checks since the lookup: compute those tokens
                continue
            for start, offset, length in view.pieces(match.request_start, match.length):
                part = slice(offset, offset + length)
                reused.append(ReusedSpan(
                    start, kv.keys[:, :, part], kv.values[:, :, part],
                    torch.tensor(kv.positions[part], dtype=torch.long),
                    torch.tensor(kv.recompute[part], dtype=torch.bool),
                ))
        return PrefillPlan(torch.from_numpy(request.token_ids), reused)

    def publish(self, request: ServedRequest, session: PoolSession,
                prefill: PrefillResult) -> list[Published]:
        computed = computed_mask(request, prefill)
        # NOTE: a prefill that computed no run of min_len publishable tokens (a warm request
        # computes its private values, the question and scattered recomputed tokens) gives the
        # annotator nothing to choose from: no attention is computed at all.
        if not self.can_publish(request, computed):
            return []
        # The annotator's attention is computed here, after the answer, rather than captured
        # by the prefill: the capture's explicit attention was 16.5% (cumulative) of a warm
        # paper-baseline request's time, on its TTFT path.
        attention = self.model.captured_attention(torch.from_numpy(request.token_ids),
                                                  prefill, self.annotator_capture())
        view = self.search_view(request)
        segments = self.segments(request, view, attention.cpu().numpy(),
                                 computed[view.positions])
        if not segments:
            return []
        source = self.kv_source(request, view, prefill, max(end for _, end, _ in segments))
        return stage_segments(session, view, segments, source)

    def accepts(self, match: Match) -> bool:
        return True

    def segments(self, request: ServedRequest, view: PublicView,
                 attention: npt.NDArray[np.float32], computed: MaskArray) -> list[SegmentSpan]:
        """Spans [start, end) of `view` to publish with their recompute marks; `computed`
        flags the view's tokens this prefill computed."""
        raise NotImplementedError

    def kv_source(self, request: ServedRequest, view: PublicView, prefill: PrefillResult,
                  end: int) -> KVSource:
        """Where the KV of the spans to publish (all ending by `end`) comes from."""
        raise NotImplementedError


class SegmentSharing(PoolSharing):
    """The product: the pool is searched and filled with the prompt's public view (its private
    tokens taken out, so that the public text around them joins up). `publish_mode="isolated"`
    (the default): when the prompt holds a private token, segments, marks and KV all come from
    one pass over the public view alone (see `private_free`), so no published byte depends on a
    private value. `"paper_baseline"`: the CachePrune paper's choice, a research baseline only:
    segments chosen by the annotator from the attention seen from the view, published with the
    KV as computed in context, whose segments after a private value carry a trace of it."""

    def publish(self, request: ServedRequest, session: PoolSession,
                prefill: PrefillResult) -> list[Published]:
        if not self._publishes_private_free(request):
            return super().publish(request, session, prefill)
        computed = computed_mask(request, prefill)
        if not self.can_publish(request, computed):
            return []  # see `PoolSharing.publish`
        view = self.search_view(request)
        computed = computed[view.positions]
        # NOTE: the pass stops where the last segment could end: a warm request that computed
        # a new profile before a reused document needs its first few hundred rows, not the
        # whole prompt again (its question at the end is shorter than a segment).
        end = last_segment_end(computed, np.zeros_like(computed), self.config.annotator.min_len)
        private_free = PrivateFreePass.compute(self.model, view, end, self.annotator_capture())
        # The pass computed every token up to `end`: a short stretch this prefill happened to
        # reuse inside new text may lie inside a segment (its KV comes from the pass too).
        annotation = annotate(private_free.attention, np.zeros(end, dtype=np.bool_),
                              computed[:end], self.config.annotator, every_row=True)
        segments = [(s.start, s.end, s.recompute) for s in annotation.segments]
        return stage_segments(session, view, segments, private_free.kv)

    def _publishes_private_free(self, request: ServedRequest) -> bool:
        return self.config.publish_mode == "isolated" and request.num_private > 0

    def search_view(self, request: ServedRequest) -> PublicView:
        return request.public_view

    def segments(self, request: ServedRequest, view: PublicView,
                 attention: npt.NDArray[np.float32], computed: MaskArray) -> list[SegmentSpan]:
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

    def kv_source(self, request: ServedRequest, view: PublicView, prefill: PrefillResult,
                  end: int) -> KVSource:
        # Isolated mode reaches here only for a prompt without private tokens, whose KV as
        # computed is private-free already.
        return InContextKV(prefill, view.positions)


def computed_mask(request: ServedRequest, prefill: PrefillResult) -> MaskArray:
    """Which of the prompt's tokens the prefill computed (the rest it reused)."""
    computed = np.zeros(request.num_tokens, dtype=np.bool_)
    computed[prefill.computed_positions.numpy()] = True
    return computed


def stage_segments(session: PoolSession, view: PublicView, segments: list[SegmentSpan],
                   source: KVSource) -> list[Published]:
    """Stage each span of `view` with its marks and the K, V and positions `source` gives it."""
    published = []
    for start, end, marks in segments:
        keys, values, positions = source.segment(start, end)
        segment_hash = session.stage(view.token_ids[start:end], keys, values, positions,
                                     marks, view.private[start:end])
        published.append(Published(str(segment_hash), end - start))
    return published
