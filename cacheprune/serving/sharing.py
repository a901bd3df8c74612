"""cacheprune's own sharing: reuse verified pool segments anywhere in the prompt (KV moved to
their new positions, the pool's recompute marks honoured), and publish the self-contextualized
segments the annotator finds in the request's attention."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch

from cacheprune.annotator import annotate
from cacheprune.engine.model import Transformer
from cacheprune.engine.plan import AttentionCapture, PrefillPlan, PrefillResult, ReusedSpan
from cacheprune.pool import Match, PoolSession
from cacheprune.serving.config import EngineConfig
from cacheprune.serving.kv_sources import InContextKV, IsolatedKV, KVSource
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
        return PublicView.whole(request.token_ids, request.private)

    def capture(self, request: ServedRequest, plan: PrefillPlan) -> AttentionCapture | None:
        # NOTE: a prefill that computes no run of min_len publishable tokens (a warm request
        # computes its private values, the question and scattered recomputed tokens) gives the
        # annotator nothing to choose from: its attention is not captured at all.
        view = self.search_view(request)
        computed = plan.compute_mask().numpy()[view.positions] & ~view.private
        if not has_run(computed, self.config.annotator.min_len):
            return None
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
        if prefill.attention is None:  # see `capture`: nothing to publish
            return []
        view = self.search_view(request)
        computed = np.zeros(request.num_tokens, dtype=np.bool_)
        computed[prefill.computed_positions.numpy()] = True
        segments = self.segments(request, view, prefill.attention.numpy(),
                                 computed[view.positions])
        if not segments:
            return []
        source = self.kv_source(request, view, prefill, max(end for _, end, _ in segments))
        published = []
        for start, end, marks in segments:
            keys, values, positions = source.segment(start, end)
            segment_hash = session.stage(view.token_ids[start:end], keys, values, positions,
                                         marks, view.private[start:end])
            published.append(Published(str(segment_hash), end - start))
        return published

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
    tokens taken out, so that the public text around them joins up); segments are chosen by the
    annotator from the attention seen from that view, and published as computed in context
    (`publish_mode "paper"`, the CachePrune paper's choice) or, where they follow a private
    token, with the KV of the view computed as one sequence (`"isolated"`, the default)."""

    def search_view(self, request: ServedRequest) -> PublicView:
        return PublicView.of(request.token_ids, request.private)

    def segments(self, request: ServedRequest, view: PublicView,
                 attention: npt.NDArray[np.float32], computed: MaskArray) -> list[SegmentSpan]:
        config = self.config.annotator
        matrix, inserted = public_attention(attention, request.private, config.sink_tokens)
        flags = np.zeros(matrix.shape[0], dtype=np.bool_)
        flags[inserted] = True  # the inserted column is never part of a segment
        # NOTE: attention to private tokens counts as outside every segment in both modes, so
        # the tokens that leaned on this tenant's private values are marked for recomputation:
        # another tenant has other values there. (Isolated mode's KV never saw them, but
        # reusing it unmarked changed 5 of 9 answers on the default workload.)
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
        if self.config.publish_mode == "isolated":
            return IsolatedKV(self.model, request, view, prefill, end)
        return InContextKV(prefill, view.positions)
