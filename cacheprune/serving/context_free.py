"""`publish_mode="segment"`: shared KV that no tenant's text shapes (context poisoning closed).

In isolated mode a published segment's KV still saw the public text before it in the request
that published it: a tenant who puts a crafted preamble before a public document, and is the
first to send that document, shapes the KV every later tenant reuses (and so their answers).

Here the public runs a request computed are cut into pieces at content-defined points (a cut
before a token where a hash of the 8 tokens before it falls in 1/32 of its range, pieces shorter
than `annotator.min_len` joined to the next): the same document text is cut at the same places
whatever came before it. Each piece is published with KV computed from the operator's declared
system prompt (`EngineConfig.public_system_prompt`) followed by the piece alone, with
recompute marks scored on that pass; and a reader reuses an entry only from its first token, so
every reused token's KV depends on the operator's prompt and on tokens the reader itself sent,
in the same order. The price is the context a piece no longer sees (measured in
docs/privacy.md). No attention is captured during the request's prefill.
"""

from __future__ import annotations

import numpy as np
import torch
import xxhash

from cacheprune.annotator import score_spans
from cacheprune.engine import PrefillPlan, PrefillResult, Transformer
from cacheprune.models import ChatTokenizer
from cacheprune.pool import Match, PoolSession
from cacheprune.serving.config import EngineConfig
from cacheprune.serving.request import ServedRequest
from cacheprune.serving.sharing import PoolSharing, computed_mask
from cacheprune.serving.strategy import Published
from cacheprune.tokens import MaskArray, TokenIds, as_token_ids, true_runs


def declared_prefix_ids(tokenizer: ChatTokenizer, config: EngineConfig) -> TokenIds:
    """Tokens of the operator's system turn as the chat template renders it (none if unset)."""
    if config.public_system_prompt is None:
        return np.zeros(0, dtype=np.int64)
    turn = tokenizer.render_chat([{"role": "system", "content": config.public_system_prompt}],
                                 add_generation_prompt=False)
    return as_token_ids(tokenizer.encode(turn).ids)


class ContextFreeSharing(PoolSharing):
    def __init__(self, model: Transformer, config: EngineConfig,
                 prefix_ids: TokenIds) -> None:
        super().__init__(model, config)
        self.prefix_ids = prefix_ids
        # Everything before a run counts as outside it: the run is computed without it.
        self._score_config = config.annotator.model_copy(update={"recompute_context": "all"})

    def accepts(self, match: Match) -> bool:
        # From an entry's first token only: a match inside an entry would reuse KV that saw
        # the entry's earlier tokens, which the reader did not send.
        return match.entry_start == 0

    def publish(self, request: ServedRequest, session: PoolSession,
                prefill: PrefillResult) -> list[Published]:
        computed = computed_mask(request, prefill)
        declared = self._prefix_of(request)
        published = []
        min_len = self.config.annotator.min_len
        pieces = [(start + first, start + last)
                  for start, end in public_pieces(request.token_ids, request.private, computed,
                                                  min_len)
                  for first, last in session.shareable_runs(request.token_ids[start:end],
                                                            min_len)]
        for start, end in pieces:
            # A run at the sequence start is its own prefix.
            prefix = request.token_ids[:0] if start == 0 else declared
            ids = np.concatenate([prefix, request.token_ids[start:end]])
            result = self.model.prefill(PrefillPlan.full(torch.from_numpy(ids)),
                                        capture=self.annotator_capture())
            assert result.attention is not None, "the pass was asked to capture attention"
            skip = len(prefix)
            (scored,) = score_spans(result.attention.numpy(), np.zeros(len(ids), dtype=np.bool_),
                                    [(skip, len(ids))], self._score_config)
            entry = session.stage(request.token_ids[start:end], result.keys[:, :, skip:],
                                  result.values[:, :, skip:], np.arange(skip, len(ids)),
                                  scored.recompute, request.private[start:end])
            published.append(Published(entry, end - start))
        return published

    def _prefix_of(self, request: ServedRequest) -> TokenIds:
        """The operator's prefix when the request starts with it (all public); otherwise the
        prompt's first token alone (the attention sink the model expects), if public."""
        size = len(self.prefix_ids)
        if (size and request.num_tokens > size
                and np.array_equal(request.token_ids[:size], self.prefix_ids)
                and not request.private[:size].any()):
            return self.prefix_ids
        return request.token_ids[:0] if request.private[0] else request.token_ids[:1]


_CUT_WINDOW = 8
_CUT_ONE_IN = 32


def public_pieces(token_ids: TokenIds, private: MaskArray, computed: MaskArray,
                  min_len: int) -> list[tuple[int, int]]:
    """Pieces of the public runs the request computed, cut at content-defined points, each at
    least `min_len` long; the prompt's last token (always computed, its KV only read by the
    decode) is left out."""
    usable = computed & ~private
    usable[-1] = False
    pieces = []
    for run_start, run_end in true_runs(usable):
        start = run_start
        for cut in range(run_start + _CUT_WINDOW, run_end):
            window = token_ids[cut - _CUT_WINDOW:cut].astype("<u4").tobytes()
            if cut - start >= min_len and xxhash.xxh3_64_intdigest(window) % _CUT_ONE_IN == 0:
                pieces.append((start, cut))
                start = cut
        if run_end - start >= min_len:
            pieces.append((start, run_end))
    return pieces
