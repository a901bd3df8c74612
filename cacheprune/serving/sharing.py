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
from cacheprune.serving.kv_sources import InContextKV, KVSource
from cacheprune.serving.private_free import PrivateFreePass
from cacheprune.serving.request import ServedRequest
from cacheprune.serving.strategy import Published, SharingStrategy
from cacheprune.tokens import MaskArray

SegmentSpan = tuple[int, int, MaskArray]  # [start, end) of the prompt and its recompute marks


class PoolSharing(SharingStrategy):
    """A strategy that reads and fills the shared pool. Subclasses choose which matches to take
    (`accepts`), which spans to publish (`segments`) and where their KV comes from
    (`kv_source`)."""

    def __init__(self, model: Transformer, config: EngineConfig) -> None:
        self.model = model
        self.config = config

    def capture(self) -> AttentionCapture | None:
        return self.annotator_capture()

    def annotator_capture(self) -> AttentionCapture:
        """The attention the annotator reads: every `capture_layer_stride`-th layer."""
        layers = range(0, self.model.config.num_layers, self.config.capture_layer_stride)
        return AttentionCapture(layers=tuple(layers))

    def plan(self, request: ServedRequest, session: PoolSession) -> PrefillPlan:
        reused = []
        for match in session.lookup(request.token_ids, request.private):
            if not self.accepts(match):
                continue
            kv = session.read(match)
            if kv is None:  # gone or failed its checks since the lookup: compute those tokens
                continue
            reused.append(ReusedSpan(
                match.request_start, kv.keys, kv.values,
                torch.tensor(kv.positions, dtype=torch.long),
                torch.tensor(kv.recompute, dtype=torch.bool),
            ))
        return PrefillPlan(torch.from_numpy(request.token_ids), reused)

    def publish(self, request: ServedRequest, session: PoolSession,
                prefill: PrefillResult) -> list[Published]:
        assert prefill.attention is not None, "pool strategies capture attention"
        computed = np.zeros(request.num_tokens, dtype=np.bool_)
        computed[prefill.computed_positions.numpy()] = True
        segments = self.segments(request, prefill.attention.numpy(), computed)
        if not segments:
            return []
        source = self.kv_source(request, prefill, max(end for _, end, _ in segments))
        return stage_segments(session, request, segments, source)

    def accepts(self, match: Match) -> bool:
        return True

    def segments(self, request: ServedRequest, attention: npt.NDArray[np.float32],
                 computed: MaskArray) -> list[SegmentSpan]:
        raise NotImplementedError

    def kv_source(self, request: ServedRequest, prefill: PrefillResult, end: int) -> KVSource:
        """Where the KV of the spans to publish (all ending by `end`) comes from."""
        raise NotImplementedError


class SegmentSharing(PoolSharing):
    """The product: annotator segments. `publish_mode="isolated"` (the default): when the
    prompt holds a private token, segments, marks and KV all come from one pass over the prompt
    with every private token left out (see `private_free`), so no published byte depends on a
    private value. `"paper_baseline"`: the CachePrune paper's choice, a research baseline only:
    KV as computed in context, whose segments after a private value carry a trace of it."""

    def publish(self, request: ServedRequest, session: PoolSession,
                prefill: PrefillResult) -> list[Published]:
        if self.config.publish_mode != "isolated" or request.num_private == 0:
            return super().publish(request, session, prefill)
        computed = np.zeros(request.num_tokens, dtype=np.bool_)
        computed[prefill.computed_positions.numpy()] = True
        candidates = np.flatnonzero(computed & ~request.private)
        if not _has_run(computed & ~request.private, self.config.annotator.min_len):
            # NOTE: no run of min_len computed public tokens, so no segment to publish (a warm
            # request computes its private values, the question and scattered marks): the
            # pass, as long as a prefill of the prompt, would be wasted.
            return []
        private_free = PrivateFreePass.compute(self.model, request, int(candidates[-1]) + 1,
                                               self.annotator_capture())
        segments = self.segments(request, private_free.attention, computed)
        return stage_segments(session, request, segments, private_free.kv)

    def segments(self, request: ServedRequest, attention: npt.NDArray[np.float32],
                 computed: MaskArray) -> list[SegmentSpan]:
        annotation = annotate(attention, request.private, computed, self.config.annotator)
        return [(s.start, s.end, s.recompute) for s in annotation.segments]

    def kv_source(self, request: ServedRequest, prefill: PrefillResult, end: int) -> KVSource:
        # Isolated mode reaches here only for a prompt without private tokens, whose KV as
        # computed is private-free already.
        return InContextKV(prefill)


def stage_segments(session: PoolSession, request: ServedRequest, segments: list[SegmentSpan],
                   source: KVSource) -> list[Published]:
    """Stage each segment with its marks and the K, V and positions `source` gives it."""
    published = []
    for start, end, marks in segments:
        keys, values, positions = source.segment(start, end)
        segment_hash = session.stage(request.token_ids[start:end], keys, values, positions,
                                     marks, request.private[start:end])
        published.append(Published(str(segment_hash), end - start))
    return published


def _has_run(mask: MaskArray, length: int) -> bool:
    """Whether `mask` holds `length` or more consecutive True values."""
    padded = np.concatenate(([False], mask, [False]))
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    return bool(edges.size) and int((edges[1::2] - edges[::2]).max()) >= length
