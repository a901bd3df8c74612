"""The oracle bound: the TTFT of the cheapest prefill a warm request could have.

For every warm request (its document was carried by an earlier request of the run), the oracle
knows from the workload's ground truth which tokens no sharing scheme could have served from a
cache (`sources.PromptSources.must_compute`) and times a prefill that computes exactly those and
reuses every other token, with the request's own KV (computed beforehand, off the clock, and
moved to where each token sat in the earliest request that carried it, so that the timed
prefill pays the same re-rotation a real reuse pays).

NOTE: what the clock counts is what the engine's TTFT counts before its prefill that does not
depend on the sharing scheme: rendering the chat template, tokenizing and running the detectors
(whose flags the bound computes too). It leaves out what only a real scheme needs: looking up
and reading the pool, and capturing attention for the annotator.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch

from cacheprune.detectors import DetectionPolicy
from cacheprune.engine import (
    PrefillPlan,
    ReusedSpan,
    SamplingParams,
    Transformer,
    generate,
    move_keys,
)
from cacheprune.models import ChatTokenizer
from cacheprune.serving import ServedRequest, admit
from cacheprune.serving.known_clean import KnownCleanText
from eval.bound.reference import ReferenceKV
from eval.bound.sources import PromptSources, TokenKey, prompt_sources
from eval.workload import Request

_FIRST_TOKEN = SamplingParams(max_new_tokens=1)


@dataclass(slots=True, frozen=True)
class BoundRecord:
    """The cheapest prefill of one warm request."""

    request_id: str
    ttft_s: float
    num_prompt_tokens: int
    computed_positions: npt.NDArray[np.int64]  # what the timed prefill computed
    first_token: int  # equals full recomputation's: the reused KV is the request's own

    @property
    def num_computed(self) -> int:
        return int(self.computed_positions.shape[0])


class OracleBound:
    """Serves the oracle for each request of a run, in order; `records` holds the warm ones."""

    def __init__(self, model: Transformer, tokenizer: ChatTokenizer,
                 policy: DetectionPolicy, threshold: int = 1) -> None:
        """`threshold`: the publication threshold the bound counts, as the pool does: a token
        is reusable once that many distinct tenants carried it (a token the operator
        declared public, once one did)."""
        self.model = model
        self.tokenizer = tokenizer
        self.policy = policy
        self.threshold = threshold
        self.records: dict[str, BoundRecord] = {}
        # identity of a public token -> its position in the earliest request that carried it
        # and the tenants that carried it, until there are `threshold` of them
        self._first_seen: dict[TokenKey, int] = {}
        self._senders: dict[TokenKey, set[str]] = {}
        self._published: dict[TokenKey, int] = {}  # the reusable ones
        # The text detection skips, as the engine's (`EngineConfig.skip_known_clean`).
        self._known_clean = KnownCleanText(threshold)

    def serve(self, request: Request, warm: bool,
              reference: ReferenceKV | None = None) -> BoundRecord | None:
        """Time the cheapest prefill of `request` if `warm`; either way, remember its public
        tokens for the requests after it. `reference`: the prompt's KV from a full prefill
        done elsewhere (the no-sharing system's), else the bound computes it, off the clock."""
        sources = prompt_sources(self.tokenizer, request)
        if warm:
            if reference is not None and not reference.matches(sources.token_ids):
                raise ValueError(f"request {request.request_id}: the reference KV was computed "
                                 "for another prompt; pass the KV of this request's prompt")
            record, private_mask = self._measure(request, sources, reference)
            self.records[request.request_id] = record
        else:
            record = None
            private_mask = self._admit(request).private
        declared = bool(request.public_char_ranges)
        for position, key in sources.public_keys(private_mask):
            self._first_seen.setdefault(key, position)
            if key in self._published:
                continue
            senders = self._senders.setdefault(key, set())
            senders.add(request.tenant)
            # NOTE: declared public: document text of a request whose documents the operator
            # declared public, exempt from the threshold as in the pool.
            if len(senders) >= self.threshold or (declared and _is_document(key)):
                self._published[key] = self._first_seen[key]
                del self._senders[key]
        return record

    def _measure(self, request: Request, sources: PromptSources,
                 reference: ReferenceKV | None) -> tuple[BoundRecord, npt.NDArray[np.bool_]]:
        n = sources.num_tokens
        if reference is None:
            full = self.model.prefill(PrefillPlan.full(torch.from_numpy(sources.token_ids)))
            reference = ReferenceKV(sources.token_ids, full.keys, full.values)
        # Off the clock: the request's own KV, its keys rotated back to where each reused
        # token sat before (the timed prefill rotates them forward again).
        published = self._published
        source_positions = torch.tensor([published.get(key, p) if key is not None else p
                                         for p, key in enumerate(sources.keys)])
        keys = move_keys(reference.keys, self.model.inv_freq, torch.arange(n), source_positions)
        values = reference.values

        started = time.perf_counter()
        admitted = self._admit(request)
        private_mask = admitted.private
        compute = sources.must_compute(published, private_mask)
        spans = [ReusedSpan(start, keys[:, :, start:end], values[:, :, start:end],
                            source_positions[start:end])
                 for start, end in _runs(~compute)]
        plan = PrefillPlan(torch.from_numpy(admitted.token_ids), spans)
        generation = generate(self.model, plan, _FIRST_TOKEN, frozenset(),
                              request_start=started)
        assert np.array_equal(admitted.token_ids, sources.token_ids), \
            "the bound rendered another prompt"
        record = BoundRecord(request.request_id, generation.stats.ttft_s, n,
                             generation.prefill.computed_positions.numpy(),
                             generation.token_ids[0])
        return record, private_mask

    def _admit(self, request: Request) -> ServedRequest:
        """The prompt admitted as the engine admits it (`admit`: rendered, tokenized and
        scanned but for the text `threshold` tenants sent clean before; on the clock when the
        bound is timed: the engine pays for it too)."""
        return admit(request.request_id, request.tenant, request.messages, self.tokenizer,
                     self.policy, request.public_char_ranges, self._known_clean)


def _is_document(key: TokenKey) -> bool:
    return all(part[0] == "d" for part in key[1])


def _runs(mask: npt.NDArray[np.bool_]) -> list[tuple[int, int]]:
    """[start, end) of each run of True in `mask`."""
    padded = np.concatenate(([False], mask, [False]))
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]
