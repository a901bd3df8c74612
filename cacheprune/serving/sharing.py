"""Sharing through the pool: reuse verified pool segments anywhere in the prompt's search view
(KV moved to their new positions, the pool's recompute marks honoured), and the steps the
strategies that publish to the pool share (`publishable_attention`, `stage_segments`)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch

from cacheprune.annotator import eligible_tokens
from cacheprune.engine import AttentionCapture, PrefillPlan, PrefillResult, ReusedSpan, Transformer
from cacheprune.pool import Match, PoolSession
from cacheprune.serving.config import EngineConfig
from cacheprune.serving.kv_sources import KVSource
from cacheprune.serving.public_view import PublicView, has_run
from cacheprune.serving.request import ServedRequest
from cacheprune.serving.strategy import Published, SharingStrategy
from cacheprune.tokens import MaskArray

SegmentSpan = tuple[int, int, MaskArray]  # [start, end) of a view and its recompute marks


class PoolSharing(SharingStrategy):
    """What every strategy over the shared pool has in common: it looks up and reads the pool
    through a view of the prompt (`search_view`: the tokens it looks up and publishes, and
    where each sits in the prompt), takes the matches `accepts` allows, and places their KV
    (`plan`). What it publishes is each subclass's own `publish`; `publishable_attention` and
    `stage_segments` are the steps several of them share."""

    def __init__(self, model: Transformer, config: EngineConfig) -> None:
        self.model = model
        self.config = config

    def search_view(self, request: ServedRequest) -> PublicView:
        return request.whole_view

    def worth_publishing(self, request: ServedRequest, prefill: PrefillResult,
                         shareable: MaskArray | None) -> bool:
        """Whether `publish` could stage anything: the prefill computed a run of
        `annotator.min_len` public tokens of the view (the shortest segment there is) that
        `shareable` allows (the publication threshold's verdict over the view, as a session
        gives it: `PoolSession.shareable_mask`; None: no threshold). Cheap: no attention, no
        pool access, so a caller may ask before handing the request to a publisher."""
        return self._has_run(request, computed_mask(request, prefill), shareable, False)

    def needs_request_kv(self, request: ServedRequest) -> bool:
        """Whether publishing `request` reads the KV its own prefill computed. False where the
        publication computes everything it stages itself (`IsolatedSharing` with a private
        token): then vLLM may compute the prompt, and cacheprune publish it from its tokens
        alone (`worth_publishing_new_text`, `publish_new_text`)."""
        return True

    def worth_publishing_new_text(self, request: ServedRequest, new_text: MaskArray,
                                  shareable: MaskArray | None) -> bool:
        """`worth_publishing` for a prompt whose new text (the tokens no reused span served)
        is flagged in `new_text`, computed elsewhere (by vLLM)."""
        return self._has_run(request, new_text, shareable, False)

    def publish_new_text(self, request: ServedRequest, session: PoolSession,
                         new_text: MaskArray) -> list[Published]:
        """Stage what `request` gives back without its prefill, from its tokens alone (only
        where `needs_request_kv` is False)."""
        raise NotImplementedError(f"{type(self).__name__} publishes from the request's KV")

    def _has_run(self, request: ServedRequest, computed: MaskArray,
                 shareable: MaskArray | None, every_row: bool) -> bool:
        """`worth_publishing` over the prompt tokens flagged in `computed`; with `every_row` (a
        pass that computes every row follows), short reused stretches inside them count as
        theirs, as the annotator counts them (`eligible_tokens`)."""
        view = self.search_view(request)
        min_len = self.config.annotator.min_len
        publishable = eligible_tokens(computed[view.positions], view.private, min_len,
                                      every_row)
        if shareable is not None:
            publishable &= shareable
        return has_run(publishable, min_len)

    def annotator_capture(self) -> AttentionCapture:
        """The attention the annotator reads: every `capture_layer_stride`-th layer."""
        layers = range(0, self.model.config.num_layers, self.config.capture_layer_stride)
        return AttentionCapture(layers=tuple(layers))

    def matches(self, request: ServedRequest, session: PoolSession) -> list[Match]:
        """The pool's matches in the request's search view that this strategy takes; the
        lookup counts the request's windows in `session` (the publication threshold)."""
        view = self.search_view(request)
        declared = request.declared_public[view.positions]
        return [match for match in session.lookup(view.token_ids, view.private, declared)
                if self.accepts(match)]

    def served_mask(self, request: ServedRequest, matches: list[Match]) -> MaskArray:
        """Which of the prompt's tokens `matches` (this request's, from `matches`) cover."""
        view = self.search_view(request)
        served = np.zeros(request.num_tokens, dtype=np.bool_)
        for match in matches:
            for start, _, length in view.pieces(match.request_start, match.length):
                served[start:start + length] = True
        return served

    def plan(self, request: ServedRequest, session: PoolSession) -> PrefillPlan:
        view = self.search_view(request)
        reused = []
        for match in self.matches(request, session):
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

    def publishable_attention(self, request: ServedRequest, session: PoolSession,
                              prefill: PrefillResult
                              ) -> tuple[PublicView, npt.NDArray[np.float32], MaskArray] | None:
        """The search view, the annotator's attention over the prompt and the view's computed
        flags, or None when this prefill computed no run of `annotator.min_len` publishable
        tokens (nothing to publish, and no attention is computed)."""
        # NOTE: a prefill that computed no run of min_len publishable tokens (a warm request
        # computes its private values, the question and scattered recomputed tokens) gives the
        # annotator nothing to choose from: no attention is computed at all.
        view = self.search_view(request)
        if not self.worth_publishing(request, prefill, session.shareable_mask(view.num_tokens)):
            return None
        computed = computed_mask(request, prefill)
        # NOTE: the annotator's attention is computed after the answer rather than captured by
        # the prefill, which keeps explicit attention off the TTFT path.
        attention = self.model.captured_attention(torch.from_numpy(request.token_ids),
                                                  prefill, self.annotator_capture())
        return view, attention.cpu().numpy(), computed[view.positions]

    def accepts(self, match: Match) -> bool:
        return True


def computed_mask(request: ServedRequest, prefill: PrefillResult) -> MaskArray:
    """Which of the prompt's tokens the prefill computed (the rest it reused)."""
    computed = np.zeros(request.num_tokens, dtype=np.bool_)
    computed[prefill.computed_positions.numpy()] = True
    return computed


def new_text_mask(request: ServedRequest, prefill: PrefillResult) -> MaskArray:
    """Which of the prompt's tokens this prefill computed as new text: computed, and in no
    span the plan reused (a reused span's tokens marked for recomputation are text the pool
    holds already)."""
    new = computed_mask(request, prefill)
    if request.plan is not None:
        new &= ~request.plan.reused_mask().numpy()
    return new


def stage_segments(session: PoolSession, view: PublicView, segments: list[SegmentSpan],
                   source: KVSource, min_tokens: int) -> list[Published]:
    """Stage each span of `view` with its marks and the K, V and positions `source` gives it,
    cut to the runs of at least `min_tokens` that the publication threshold allows."""
    published = []
    for start, end, marks in segments:
        for first, last in session.shareable_runs(view.token_ids[start:end], min_tokens):
            published.append(_stage(session, view, start + first, start + last,
                                     marks[first:last], source))
    return published


def prompt_start(session: PoolSession, view: PublicView, segments: list[SegmentSpan],
                 computed: MaskArray, first_private: int, min_tokens: int,
                 segment_tokens: int) -> int:
    """How many of the view's first tokens to publish as an entry of their own (0: none): the
    run from token 0 that the publication threshold allows, before the first private token
    and the first token this prefill reused, when it holds `min_tokens` and a segment from
    token 0 (of `segment_tokens` at least) does not publish it already. A later segment may
    overlap it: both are published whole (two entries holding the same few tokens).

    The annotator's minimum length is for text whose KV depends on what precedes it; the
    prompt's first tokens attended to nothing else, so their KV is exact in every prompt that
    starts with them, however short the run (the system prompt and the chat markup)."""
    reused = np.flatnonzero(~computed[:first_private])
    end = int(reused[0]) if reused.size else min(first_private, computed.shape[0])
    if end < min_tokens:
        return 0
    if segments and segments[0][0] == 0:
        runs = session.shareable_runs(view.token_ids[:segments[0][1]], segment_tokens)
        if runs and runs[0][0] == 0:
            return 0
    runs = session.shareable_runs(view.token_ids[:end], min_tokens)
    return runs[0][1] if runs and runs[0][0] == 0 else 0


def _stage(session: PoolSession, view: PublicView, start: int, end: int, marks: MaskArray,
           source: KVSource) -> Published:
    keys, values, positions = source.segment(start, end)
    entry = session.stage(view.token_ids[start:end], keys, values, positions, marks,
                          view.private[start:end])
    return Published(entry, end - start)
